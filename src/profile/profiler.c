/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Profiler reporting, built into libmemtrace-profiler.so only (the tracer
 * build has profiler_off.c instead): a reporter thread prints the top
 * sites by live bytes, allocations or temporary allocations (MEMTRACE_TOP_BY)
 * every MEMTRACE_INTERVAL_MS, on memtrace_report() and on MEMTRACE_SIGNAL; at
 * exit the peak and the leaks, and MEMTRACE_FOLDED files (the `.peak` one
 * from site.c's exact snapshot at the peak). This file holds start-up,
 * the fork handlers, the exit handler and memtrace_report; prof_internal.h
 * says which file of the folder does the rest.
 *
 * Every function of the folder that reports runs inside memtrace
 * (mt_enter), so its own allocations (the site table, cached stack texts,
 * libdw) come from the internal heap, untraced, and never take the
 * program's allocator locks.
 * Reports are serialised by mt_prof_report_lock, which is only ever taken
 * before the internal heap's lock and is held across fork (see
 * fork_prepare). */
#include "profile/profiler.h"
#include "profile/prof_internal.h"

#include "base/common.h"
#include "base/lock.h"
#include "base/os.h"
#include "base/output.h"
#include "base/reentry.h"
#include "capture/state.h"
#include "store/site.h"

#define MEMTRACE_DEFINING /* the definitions: no weak declarations, no macros */
#include "../../include/memtrace.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

/* ------------------------------------------------------------ fork */

/* Whether fork_prepare took the report lock: not when this thread's own
 * interrupted code holds it (a fork from a signal handler); that code lets
 * go of it once the handler returns, in the parent and in the child. */
static MT_TLS bool fork_took_report_lock;

/* The forking process, for the child's "(forked from PID)": by the time the
 * child runs its handler the parent may have exited, and getppid() says 1. */
static pid_t forking_pid;

static void fork_prepare(void)
{
    forking_pid = getpid();
    fork_took_report_lock = !mt_lock_is_mine(&mt_prof_report_lock);
    if (fork_took_report_lock)
        mt_prof_lock();
}

static void fork_parent(void)
{
    if (fork_took_report_lock)
        mt_prof_unlock();
}

/* The child reports its own heap (a copy of its parent's at the fork) from
 * its own start: report numbers, clock and peak start over, the output
 * path is expanded again and the folded files are its own (PATH.PID, see
 * mt_children_pass_on); the interval counts since the parent's last report. */
static void fork_child(void)
{
    bool took = fork_took_report_lock;
    if (took) /* under the parent's token, which startup.c's handler may have dropped */
        mt_lock_release_in_child(&mt_prof_report_lock);
    else /* this thread's interrupted code holds it: under the child's token now */
        mt_lock_adopt_in_child(&mt_prof_report_lock);
    int was = mt_enter();
    mt_prof_state_forked(forking_pid, mt_os_now_ns());
    mt_site_restart_peak(mt_prof_start_ns);
    mt_prof_reporter_forked();
    mt_leave(was);
}

/* ------------------------------------------------------------ start */

/* The registered exit handler: with MEMTRACE_LEAK_CHECK=1, the leak
 * verdict first (it stops every other thread, so before the report's lock),
 * with the registers this handler was entered with (getcontext before
 * anything else) and the stack from its frame up. */
static void exit_report_entry(void)
{
    ucontext_t uc;
    if (getcontext(&uc) != 0)
        memset(&uc, 0, sizeof uc);
    mt_prof_leak_run(&uc, (uintptr_t)__builtin_frame_address(0));
    mt_os_on_stack(&mt_own_stack, mt_prof_exit_report, NULL);
}

void mt_profiler_start(void)
{
    int was = mt_enter();
    mt_prof_start_ns = mt_os_now_ns();
    mt_prof_load_settings();
    mt_prof_reserve_sites();
    mt_prof_reporter_init();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    atexit(exit_report_entry);
    mt_leave(was);
}

static void report_on_request(void *unused)
{
    (void)unused;
    mt_prof_running_report(MT_PROF_ON_REQUEST);
}

/* On mt_own_stack: the caller may be a main thread with no room to grow. */
MT_EXPORT void memtrace_report(void)
{
    void (*owner)(void) = mt_owner("memtrace_report");
    if (owner) {
        owner();
        return;
    }
    mt_os_on_stack(&mt_own_stack, report_on_request, NULL);
}
