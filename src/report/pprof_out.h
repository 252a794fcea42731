/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* When and where the library writes pprof profiles (MEMTRACE_PPROF): the
 * files' names (%n numbering, .peak), the symbolizer and heap the writer
 * gets inside the process, and the tracer build's in-use profile at exit.
 * The profiler build feeds its site counters through src/profile/site_files.c. */
#ifndef MT_PPROF_OUT_H
#define MT_PPROF_OUT_H

#include "base/output.h"
#include "report/pprof.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Reads MEMTRACE_PPROF and MEMTRACE_PPROF_EVERY, once, at start-up, inside
 * memtrace; a bad value gets one warning. PROFILER: the calling build keeps
 * site counters (it writes the profiles itself); otherwise the in-use
 * profile is written at exit, from the live table. */
void mt_pprof_out_start(bool profiler);

/* MEMTRACE_PPROF is set (and usable). */
bool mt_pprof_out_enabled(void);
/* MEMTRACE_PPROF_EVERY=report: one profile per report too. */
bool mt_pprof_out_every_report(void);

/* A new profile whose memory is the internal heap; NULL when it is full.
 * Inside memtrace only. */
mt_pprof *mt_pprof_out_new(bool with_alloc);

/* The live blocks' in-use values by allocation stack and by tag scope or,
 * outside any, thread: the profiler's profiles label them as the tracer's
 * in-use profile does. Scaled in sample mode as the site totals are, so
 * that a stack's groups sum to its site's live values when nothing was
 * allocated or freed in between. */
typedef struct {
    uint32_t stack, thread, tag; /* an mt_stack_id, a thread number, a tag node (0: none) */
    uint64_t blocks, bytes;
} mt_pprof_live_group;
/* The groups, sorted by stack (ascending), in *N of them; memory mapped
 * here, MAPPED bytes, for mt_pprof_live_groups_free. NULL (*N 0) when it
 * cannot be mapped. Inside memtrace. */
mt_pprof_live_group *mt_pprof_live_groups(size_t *n, size_t *mapped);
void mt_pprof_live_groups_free(mt_pprof_live_group *g, size_t mapped);
/* Adds G's in-use values to P as a sample of its own (no allocation
 * counts), with the stack FRAMES[0..DEPTH) and the labels "thread" and
 * "tag" (when in a scope). False when out of memory. */
bool mt_pprof_add_live_group(mt_pprof *p, const mt_pprof_live_group *g, const uintptr_t *frames,
                             unsigned depth);

enum mt_pprof_when { MT_PPROF_AT_EXIT, MT_PPROF_AT_PEAK, MT_PPROF_AT_REPORT };

/* Symbolizes and writes P to the file of WHEN and frees it. The file:
 * MEMTRACE_PPROF expanded, %n being this process's count of profiles
 * written before (from 0); without %n, ".peak" after the peak's name and
 * ".N" after report N's (REPORT). A forked child whose pattern has no %p
 * puts ".PID" after the expanded name, before those, so that it never
 * overwrites its parent's file. SAY (may be NULL) gets one line,
 * "memtrace: pprof profile: PATH (WHAT)" or "... PATH not written (WHY)",
 * else a failure is a warning. Inside memtrace, without the symbolizer's
 * lock, which this takes (a bounded wait: without it, addresses only). */
void mt_pprof_out_write(mt_pprof *p, enum mt_pprof_when when, unsigned report, mt_out *say,
                        int64_t duration_ns);

#endif
