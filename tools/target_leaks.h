/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memtrace-symbolize's "leaks" and "refs" requests (gdb/memtrace.py's
 * `memtrace leaks` and `memtrace refs`): the leak scan (src/scan/leak_scan.c)
 * and the report (src/leak/leak_report.c) of the process or core file the
 * symbolizer was started for, with the roots gathered here from the
 * target's memory and modules, and the threads, registers and frames the
 * helper got from gdb. The request format is in memtrace-symbolize.c. */
#ifndef MT_TARGET_LEAKS_H
#define MT_TARGET_LEAKS_H

#include "base/output.h"
#include "symbolize/symbolize.h"
#include "tables.h"

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stdio.h>

/* Answers one request whose first line is LINE ("leaks ..." or "refs
 * ..."), reading its further lines from IN up to "end"; the live blocks
 * and their stacks come from T (opened); the text goes to OUT, its frames
 * symbolized by SYM, whose Dwfl's modules give the globals. False when the
 * answer is an error for the gdb command (the text says why, in one
 * "memtrace:" line). Exits 3 on a malformed request. */
bool mt_target_leaks_request(mt_sym_state *sym, mt_tables *t, const char *line, FILE *in,
                             mt_out *out);

#endif
