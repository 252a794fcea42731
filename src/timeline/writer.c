/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The timeline's writer (timeline.h): its settings, its start and end,
 * and its thread. The thread wakes every 10 ms, or when an appender finds
 * its ring full, and drains every ring (drain.c) into the current block
 * (emit.c), which is written out when it holds 1 MiB or half a second has
 * passed, so that a killed run leaves all but its last half second. It
 * runs inside memtrace (mt_busy) for good, so what zstd allocates comes
 * from the internal heap, and it is memtrace's own thread
 * (mt_threads_own_add): the leak check neither stops nor scans it. The
 * file and its guards against the program's own descriptors are file.c's. */
#include "timeline/timeline.h"

#include "base/atomic.h"
#include "base/children_env.h"
#include "base/config.h"
#include "base/os.h"
#include "base/pausable.h"
#include "base/output.h"
#include "base/reentry.h"
#include "store/threads.h"
#include "timeline/drain.h"
#include "timeline/emit.h"
#include "timeline/file.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WAKE_NS 10000000ull /* the writer's sleep between drains */

static struct {
    char pattern[MT_TL_PATH_BYTES];
    pid_t pid; /* the process that armed it */
    uint64_t cull_ns;
    uint64_t start_unix_ns;
    bool finished;
    pthread_t thread;
    mt_atomic(int) stop;
} W;

static char env_entry[sizeof "MEMTRACE_RECORD=" + MT_TL_PATH_BYTES + 3];

void mt_tl_arm(void)
{
    if (!mt_setting_path(MT_SET_RECORD, W.pattern, sizeof W.pattern, "no recording") ||
        !W.pattern[0])
        return;
    /* The programs this process execs record to PATTERN.%p (children_env.h). */
    mt_children_pass_on("MEMTRACE_RECORD", W.pattern, env_entry, sizeof env_entry);
    W.cull_ns = (uint64_t)mt_setting_long(MT_SET_RECORD_CULL_MS) * 1000000ull;
    W.pid = getpid();
    mt_tl_append_init();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    W.start_unix_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    mt_tl_start_ns = mt_os_now_ns();
    mt_atomic_store_release(&mt_tl_on, 1);
}

bool mt_tl_armed(void)
{
    return mt_atomic_load_relaxed(&mt_tl_on) && getpid() == W.pid;
}

bool mt_tl_to_finish(void)
{
    return mt_tl_drain_ready() && !W.finished && getpid() == W.pid;
}

/* Stops the timeline when it cannot start. */
static void stop_timeline(void)
{
    mt_atomic_store_relaxed(&mt_tl_on, 0);
}

void mt_tl_sync(void)
{
    if (!mt_tl_drain_ready() || W.finished || getpid() != W.pid)
        return;
    int was = mt_enter();
    mt_tl_drain_lock();
    mt_tl_drain_final();
    mt_tl_drain_unlock();
    mt_leave(was);
}

static mt_atomic(int) writer_tid;

static void *writer_main(void *arg)
{
    (void)arg;
    mt_enter(); /* for good: zstd's memory is the internal heap's */
    int tid = (int)syscall(SYS_gettid);
    mt_atomic_store_relaxed(&writer_tid, tid);
    mt_threads_own_add(tid);
    while (!mt_atomic_load_acquire(&W.stop)) {
        mt_tl_writer_sleep(WAKE_NS);
        mt_tl_drain(true);
    }
    return NULL;
}

/* The writer blocks every signal: the program's go to its threads. If it
 * cannot start, the appenders drain when their rings fill, and the end
 * does. */
static void start_writer(void)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    mt_atomic_store_relaxed(&W.stop, 0);
    if (pthread_create(&W.thread, NULL, writer_main, NULL) == 0)
        mt_tl_writer_set_running(true);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Ends the writer thread (after its drain) and waits until the kernel no
 * longer counts it among the process's threads (unshare wants one): the
 * join returns when it has cleared its thread id, a little before that. */
static void stop_writer(void)
{
    mt_atomic_store_release(&W.stop, 1);
    mt_tl_wake_writer();
    pthread_join(W.thread, NULL);
    mt_tl_writer_set_running(false);
    int tid = mt_atomic_load_relaxed(&writer_tid);
    mt_pausable_wait_gone(tid);
    mt_threads_own_remove(tid);
}

static mt_pausable pausable = MT_PAUSABLE(mt_tl_writer_running, stop_writer, start_writer);

bool mt_tl_pause(void)
{
    if (!mt_tl_drain_ready() || W.finished || getpid() != W.pid) /* a vfork child: not its thread */
        return false;
    mt_pausable_pause(&pausable);
    return true;
}

void mt_tl_resume(void)
{
    mt_pausable_resume(&pausable, !W.finished);
}

/* The command line, NULs as spaces, into BUF; its length. */
static size_t command_line(char *buf, size_t size)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, size - 1);
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    while (n > 0 && buf[n - 1] == '\0')
        n--;
    for (ssize_t i = 0; i < n; i++)
        if (buf[i] == '\0')
            buf[i] = ' ';
    return (size_t)n;
}

void mt_tl_start(void)
{
    if (!mt_atomic_load_relaxed(&mt_tl_on) || getpid() != W.pid || mt_tl_drain_ready())
        return;
    const char *failed = mt_tl_file_open(W.pattern);
    if (!failed && (!mt_tl_emit_init(W.cull_ns) || (W.cull_ns && !mt_tl_cull_init(W.cull_ns))))
        failed = "out of memory";
    if (failed) {
        mt_warn("MEMTRACE_RECORD: %.1024s not written (%s); no recording", mt_tl_file_path(),
                failed);
        mt_tl_file_discard();
        stop_timeline();
        return;
    }
    static char command[4096];
    size_t len = command_line(command, sizeof command);
    mt_tl_emit_head((uint64_t)W.pid, W.start_unix_ns, W.cull_ns, (uint64_t)mt_cfg.sample, command,
                    len);
    /* The head alone in the first block, on disk at once: what an exec of
     * this process finds there (earlier_image). */
    mt_tl_emit_flush(true);
    mt_tl_drain_begin(W.cull_ns);
    start_writer();
}

void mt_tl_finish(mt_tl_symbolize_fn *symbolize)
{
    if (!mt_tl_drain_ready() || W.finished || getpid() != W.pid)
        return;
    pthread_mutex_lock(&pausable.lock);
    W.finished = true;
    if (mt_tl_writer_running()) {
        mt_atomic_store_release(&W.stop, 1);
        mt_tl_wake_writer();
        pthread_join(W.thread, NULL);
        mt_tl_writer_set_running(false);
    }
    pthread_mutex_unlock(&pausable.lock);
    mt_tl_drain_lock();
    /* Appends racing with this end (another thread allocating during exit)
     * are dropped from here on. */
    mt_atomic_store_relaxed(&mt_tl_on, 0);
    mt_tl_drain_final();
    bool failed = mt_tl_emit_failed();
    if (!failed) {
        if (symbolize)
            mt_tl_emit_symbols(symbolize);
        mt_tl_emit_end(mt_os_now_ns() - mt_tl_start_ns);
        failed = !mt_tl_emit_flush(true);
    }
    int err = mt_tl_file_close();
    if (err && !failed) {
        mt_warn("MEMTRACE_RECORD: %.1024s: %s", mt_tl_file_path(), strerror(err));
        failed = true;
    }
    mt_tl_drain_unlock();
    const char *path = mt_tl_file_path();
    if (failed)
        mt_warn("recording: %.1024s is cut short (a write failed); memtrace export reads what it "
                "holds",
                path);
    else if (mt_cfg.sample)
        mt_warn("recording: %.1024s (%llu events; sampled: one allocation in %llu bytes); view it "
                "with: memtrace view %.1024s",
                path, (unsigned long long)mt_tl_emit_events(), (unsigned long long)mt_cfg.sample,
                path);
    else
        mt_warn("recording: %.1024s (%llu events); view it with: memtrace view %.1024s", path,
                (unsigned long long)mt_tl_emit_events(), path);
}

void mt_tl_fork_child(void)
{
    mt_atomic_store_relaxed(&mt_tl_on, 0);
    mt_tl_drain_forget();
    mt_tl_file_close();
}
