/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The profiler build's reporting (src/profile/ but profiler_off.c:
 * periodic top sites, exit report, folded files; prof_internal.h maps its
 * files); in the tracer build profiler_off.c, which only checks the
 * settings. The build picks its files (the Makefile's PROFILER_ONLY and
 * TRACER_ONLY). */
#ifndef MT_PROFILER_H
#define MT_PROFILER_H

#include "base/output.h"

#include <stdbool.h>
#include <stdint.h>
#include <ucontext.h>

/* Called once, at the end of memtrace's initialisation, outside any lock,
 * with the thread's re-entrancy flag clear. */
void mt_profiler_start(void);

/* Around a call that needs the process to be single-threaded
 * (unshare(CLONE_NEWUSER), setns): PAUSE ends memtrace's own threads and
 * returns whether RESUME must follow (false in the tracer build, which
 * starts none); RESUME starts again those that ran. Pauses from several
 * threads nest: the threads start again after the last RESUME. */
bool mt_profiler_pause(void);
void mt_profiler_resume(void);

/* The output: where the profiler's reports and the leak report at exit
 * go, the file MEMTRACE_OUTPUT names (the profiler build only), else
 * memtrace's stderr (mt_err_fd). *OWN: close with
 * mt_profiler_output_close. */
void mt_profiler_output_open(mt_out *o, bool *own);
void mt_profiler_output_close(mt_out *o, bool own);

/* The leak check's verdict for the profiler's exit report, registered by
 * leak_check.c when MEMTRACE_LEAK_CHECK=1 (hooks, so that the profiler does
 * not include the check that includes it): RUN makes the verdict once per
 * process (the other threads stopped meanwhile), before the report takes
 * its lock, scanning the exiting thread's stack from STACK_FROM up; CLASSES fills BYTES, indexed by
 * MT_LEAK_* (still reachable, definitely lost, indirectly lost, possibly lost), for the blocks of
 * allocation stack ID, false when there is no verdict. The tracer build ignores them. */
typedef struct {
    /* UC: the registers the exit handler was entered with; STACK_FROM: its frame */
    void (*run)(const ucontext_t *uc, uintptr_t stack_from);
    bool (*classes)(uint32_t id, uint64_t bytes[4]);
} mt_leak_hooks;
void mt_profiler_set_leak_hooks(const mt_leak_hooks *hooks);

#endif
