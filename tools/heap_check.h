/* memtrace-symbolize's `check` request (`memtrace check` in gdb): every
 * live block's redzone and every quarantined block of a stopped process
 * or a core file, read through the tables (tables.h), and on a heap of
 * glibc's malloc the chunk headers around each block, so that the core of
 * glibc's abort on a damaged header ("free(): invalid next size",
 * "malloc(): corrupted top size") names the block that overflowed. */
#ifndef MT_TOOLS_HEAP_CHECK_H
#define MT_TOOLS_HEAP_CHECK_H

#include "base/output.h"
#include "symbolize/symbolize.h"
#include "tables.h"

/* Answers "check": each damaged block in the heap errors' report
 * (report/format.h's mt_fmt_heap_error, "detected in memtrace check"),
 * then the summary line
 *   "memtrace: check: K damaged blocks; L live blocks and Q quarantined
 *    blocks checked"
 * and the end marker, into OUT; one "memtrace: ..." error line when the
 * tables cannot be read. */
void mt_heap_check_request(mt_tables *t, mt_sym_state *sym, mt_out *out);

#endif
