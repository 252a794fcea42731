/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The reporter thread: the running reports due every MEMTRACE_INTERVAL_MS
 * and those MEMTRACE_SIGNAL asks for, and the end of a program whose main
 * thread called pthread_exit. It is memtrace's, not the program's, and
 * must never change what the program sees of its own threads:
 *
 * - Its stack is reserved once, at start-up (a process that later fills
 *   its address space, ulimit -v, can still start or restart it), and its
 *   kernel thread id is registered as memtrace's own (mt_threads_own_add),
 *   so the leak check neither waits for it nor scans it.
 * - unshare(CLONE_NEWUSER) and setns refuse a multi-threaded process: the
 *   interposed calls (interpose.c) stop the thread (joined, and gone from
 *   /proc/self/task) around the real call and start it again after
 *   (mt_profiler_pause / mt_profiler_resume).
 * - The process ends when its last thread does; natively, when main has
 *   called pthread_exit, the last thread to end calls exit(0). The reporter
 *   learns that main has gone from a thread-specific value's destructor
 *   (main_key), then checks /proc/self/task at each wake; when only
 *   memtrace's own threads are left it calls exit(0) itself, so the exit
 *   handlers (the exit report among them) run and the status is 0.
 *
 * It wakes every 10 ms only while something may want it that soon (a
 * MEMTRACE_SIGNAL flag, the symbolizer's warming, main gone); else it
 * sleeps until the next report is due, woken at once when asked to stop or
 * when main calls pthread_exit (reporter_wake): a hundred wake-ups a
 * second cost the always-on profiler (MEMTRACE_SYMBOLIZE=later) some 2 ms
 * of CPU a second, a fifth of a percent of a core. */
#include "profile/prof_internal.h"
#include "profile/profiler.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/os.h"
#include "base/pausable.h"
#include "base/reentry.h"
#include "store/threads.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h> /* snprintf only: no stdio streams */
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <linux/futex.h>
#include <time.h>
#include <unistd.h>

/* Set by the MEMTRACE_SIGNAL handler, taken by the reporter within 10 ms.
 * A flag, not a pipe: a program that closes every descriptor it did not
 * open (daemons, closefrom) would have the pipe's numbers reused for its own
 * files, which the reporter would then read and the handler write. */
static mt_atomic(int) signal_pending;

static void on_signal(int sig)
{
    (void)sig;
    mt_atomic_store_relaxed(&signal_pending, 1);
}

static mt_os_stack reporter_stack; /* the reporter thread's; reports made in
                                      the program's threads use mt_own_stack */
static pthread_t reporter;
static bool reporter_running;        /* under pausable's lock once started */
static pid_t reporter_pid;           /* the process that started it */
static mt_atomic(int) reporter_tid;  /* futex word: 0 until the thread has registered */
static mt_atomic(int) reporter_stop; /* futex word: 1 asks the thread to return */
static mt_atomic(int) main_exited;   /* the main thread called pthread_exit */
/* futex word: raised after reporter_stop or main_exited is set, so that a
 * change made between the reporter's tests and its sleep ends the sleep */
static mt_atomic(int) reporter_wake;
static pthread_key_t main_key;
static bool main_key_made;

static void futex_wait(mt_atomic(int) * word, int val, const struct timespec *ts)
{
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, ts, NULL, 0);
}

static void futex_wake(mt_atomic(int) * word)
{
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1 << 30, NULL, NULL, 0);
}

/* Raises reporter_wake and wakes the reporter's sleep. */
static void wake_reporter(void)
{
    mt_atomic_add_release(&reporter_wake, 1);
    futex_wake(&reporter_wake);
}

static void on_main_exit(void *value)
{
    (void)value;
    mt_atomic_store_release(&main_exited, 1);
    wake_reporter();
}

/* Marks the calling thread as the process's main thread (its exit through
 * pthread_exit sets main_exited). */
static void watch_main(void)
{
    if (main_key_made)
        pthread_setspecific(main_key, (void *)1);
}

static bool no_program_thread(pid_t tid, void *left)
{
    *(bool *)left = tid != getpid() && !mt_threads_is_own(tid);
    return !*(bool *)left;
}

/* Whether a thread of the program still runs: an entry of /proc/self/task
 * other than memtrace's own threads and the main thread, which has called
 * pthread_exit (a zombie until the process ends). True when the list
 * cannot be read. */
static bool program_threads_left(void)
{
    bool left = false;
    return !mt_os_each_task(no_program_thread, &left) || left;
}

/* The program's threads have all ended (main by pthread_exit): what the
 * last of them would have done natively. */
static void program_ended(void)
{
    mt_leave(0);
    exit(0);
}

/* The reporter thread: inside memtrace for its whole life, so nothing it
 * allocates is traced. Wakes every 10 ms (at most) to take a pending
 * signal's report and to see whether the program has ended, at the report
 * interval, and at once when asked to stop. */
static void *reporter_main(void *arg)
{
    (void)arg;
    mt_enter();
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    int tid = (int)syscall(SYS_gettid);
    mt_threads_own_add(tid);
    mt_atomic_store_release(&reporter_tid, tid); /* start_reporter waits for it */
    futex_wake(&reporter_tid);
    uint64_t interval = (uint64_t)mt_prof_set.interval_ms * 1000000ull;
    uint64_t due = mt_os_now_ns() + interval;
    bool warms = mt_prof_warms();
    for (;;) {
        int seq = mt_atomic_load_acquire(&reporter_wake);
        if (mt_atomic_load_acquire(&reporter_stop))
            break;
        uint64_t now = mt_os_now_ns();
        bool poll = mt_prof_set.signal || warms || mt_atomic_load_acquire(&main_exited);
        uint64_t wait = poll ? 10000000ull : UINT64_MAX; /* no interval: a signal polls */
        if (interval && due > now && due - now < wait)
            wait = due - now;
        else if (interval && due <= now)
            wait = 0;
        struct timespec ts = { .tv_sec = (time_t)(wait / 1000000000ull),
                               .tv_nsec = (long)(wait % 1000000000ull) };
        if (wait)
            futex_wait(&reporter_wake, seq, wait == UINT64_MAX ? NULL : &ts);
        if (mt_atomic_load_acquire(&reporter_stop))
            break;
        if (mt_atomic_exchange_relaxed(&signal_pending, 0))
            mt_prof_running_report(MT_PROF_ON_SIGNAL);
        now = mt_os_now_ns();
        if (interval && now >= due) {
            mt_prof_running_report(MT_PROF_PERIODIC);
            due += interval;
            if (due <= now)
                due = now + interval;
        }
        if (mt_atomic_load_acquire(&main_exited) && !program_threads_left())
            program_ended();
        mt_prof_warm();
    }
    return NULL;
}

/* The reporter thread is started only for what needs it: periodic reports
 * and MEMTRACE_SIGNAL (the handler only sets a flag; a report is not
 * async-signal-safe, and making a program thread take it at its next
 * allocation would run a report inside whatever locks that thread holds). */
static bool reporter_needed(void)
{
    return mt_prof_set.interval_ms > 0 || mt_prof_set.signal != 0;
}

/* Starts the reporter thread on its reserved stack (the default one if
 * that could not be reserved), with every signal blocked in it (the
 * program's signals are for the program's threads), and returns once it
 * has registered as memtrace's own. Inside memtrace, so the thread's setup
 * is not traced. */
static void start_reporter(void)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (reporter_stack.base) {
        size_t guard = mt_os_page_size();
        pthread_attr_setstack(&attr, reporter_stack.base + guard, reporter_stack.size - guard);
    }
    mt_atomic_store_relaxed(&reporter_stop, 0);
    mt_atomic_store_relaxed(&reporter_tid, 0);
    reporter_pid = getpid();
    reporter_running = pthread_create(&reporter, &attr, reporter_main, NULL) == 0;
    if (reporter_running) {
        pthread_setname_np(reporter, "memtrace");
        while (mt_atomic_load_acquire(&reporter_tid) == 0)
            futex_wait(&reporter_tid, 0, NULL);
    } else {
        mt_warn("cannot start the reporter thread; only the exit report will be made");
    }
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Ends the reporter thread (after the report it may be making) and waits
 * until the kernel no longer counts it among the process's threads: the
 * join returns when it has cleared its thread id, a little before that. */
static void stop_reporter(void)
{
    mt_atomic_store_release(&reporter_stop, 1);
    wake_reporter();
    pthread_join(reporter, NULL);
    int tid = mt_atomic_load_relaxed(&reporter_tid);
    mt_pausable_wait_gone(tid);
    mt_threads_own_remove(tid);
    reporter_running = false;
}

static bool reporter_runs(void)
{
    return reporter_running;
}

static mt_pausable pausable = MT_PAUSABLE(reporter_runs, stop_reporter, start_reporter);

bool mt_profiler_pause(void)
{
    /* A vfork child shares this memory but not the parent's threads: the
     * reporter is not its to stop, nor a thread its to start. */
    if (getpid() != reporter_pid)
        return false;
    mt_pausable_pause(&pausable);
    return true;
}

void mt_profiler_resume(void)
{
    mt_pausable_resume(&pausable, true);
}

void mt_prof_reporter_forked(void)
{
    /* The parent's reporter thread does not exist here; this thread is the
     * child's main one. Its stack, a copy, is free to use again. */
    mt_threads_own_remove(mt_atomic_load_relaxed(&reporter_tid));
    reporter_running = false;
    mt_pausable_forked(&pausable);
    mt_atomic_store_relaxed(&main_exited, 0);
    watch_main();
    if (reporter_needed())
        start_reporter();
}

void mt_prof_reporter_init(void)
{
    main_key_made = pthread_key_create(&main_key, on_main_exit) == 0;
    if ((pid_t)syscall(SYS_gettid) == getpid())
        watch_main();
    if (reporter_needed()) {
        mt_os_stack_reserve(&reporter_stack, MT_OWN_STACK_SIZE);
        start_reporter();
    }
    if (mt_prof_set.signal) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(mt_prof_set.signal, &sa, NULL) != 0)
            mt_warn("MEMTRACE_SIGNAL: cannot handle signal %d (%s)", mt_prof_set.signal,
                    strerror(errno));
    }
}
