/* SPDX-License-Identifier: LGPL-2.1-or-later */
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

/* Answers "last-error": the last error report the library kept the facts
 * of (report/error_record.h), heap error or bad free, written as the
 * report was (kind, the block's stacks, where it was detected), after the
 * line "memtrace: last-error: error N of the process:"; or
 * "memtrace: last-error: no error reported". Then the end marker. A
 * block a check lists (mt_heap_check_request) that a report named is
 * marked "reported before, detected in WHERE", and listed from the
 * report's facts when it is not found damaged now. */
void mt_last_error_request(mt_tables *t, mt_sym_state *sym, mt_out *out);

#endif
