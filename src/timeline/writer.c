/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The recording's writer (timeline.h): its settings, its file, its thread
 * and the drain of the rings (ring.h). The thread wakes every 10 ms, or
 * when an appender finds its ring full, drains every ring into the
 * current block (emit.c) and writes a block out when it holds 1 MiB or
 * half a second has passed, so that a killed run leaves all but its last
 * half second. It runs inside memtrace (mt_busy) for good, so what zstd
 * allocates comes from the internal heap, and it is memtrace's own thread
 * (mt_threads_own_add): the leak check neither stops nor scans it. Its
 * file's descriptor sits high above the program's (move_high) and is
 * checked to be that file before every write (mt_tl_file_fd): a daemon
 * that closes every descriptor and opens its own files never gets the
 * recording written into them. */
#include "timeline/timeline.h"

#include "base/atomic.h"
#include "base/children_env.h"
#include "base/config.h"
#include "base/lock.h"
#include "base/os.h"
#include "base/pausable.h"
#include "base/output.h"
#include "base/reentry.h"
#include "store/threads.h"
#include "timeline/emit.h"
#include "timeline/record_format.h"
#include "timeline/ring.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#define PATH_BYTES 4096
#define WAKE_NS 10000000ull     /* the writer's sleep between drains */
#define FLUSH_NS 500000000ull   /* a block's age at most before it is written */

static struct {
    char pattern[PATH_BYTES];
    char path[PATH_BYTES]; /* expanded */
    pid_t pid;             /* the process that armed it */
    uint64_t cull_ns;
    uint64_t start_unix_ns;
    int fd;                /* -1, or the file of dev and ino (mt_tl_file_fd) */
    dev_t dev;
    ino_t ino;
    bool ready;            /* the emitter's buffers exist: drains may run */
    bool finished;
    mt_lock lock;          /* held by a drain */
    pthread_t thread;
    mt_atomic(int) running, stop, wake;
    uint64_t last_flush;
} W = { .fd = -1 };

static char env_entry[sizeof "MEMTRACE_RECORD=" + PATH_BYTES + 3];

void mt_tl_arm(void)
{
    if (!mt_setting_path(MT_SET_RECORD, W.pattern, sizeof W.pattern, "no recording") ||
        !W.pattern[0])
        return;
    /* The programs this process execs record to PATTERN.%p (children_env.h). */
    mt_children_pass_on("MEMTRACE_RECORD", W.pattern, env_entry, sizeof env_entry);
    W.cull_ns = (uint64_t)mt_setting_long(MT_SET_RECORD_CULL_MS) * 1000000ull;
    W.pid = getpid();
    mt_tl_rings_init();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    W.start_unix_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    mt_tl_start_ns = mt_os_now_ns();
    mt_atomic_store_release(&mt_tl_on, 1);
}

bool mt_tl_recording(void)
{
    return mt_atomic_load_relaxed(&mt_tl_on) && getpid() == W.pid;
}

bool mt_tl_to_finish(void)
{
    return W.ready && !W.finished && getpid() == W.pid;
}

bool mt_tl_writer_running(void)
{
    return mt_atomic_load_acquire(&W.running);
}

static long futex(mt_atomic(int) *word, int op, int val, const struct timespec *ts)
{
    return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

void mt_tl_wake_writer(void)
{
    if (mt_atomic_exchange_relaxed(&W.wake, 1) == 0)
        futex(&W.wake, FUTEX_WAKE_PRIVATE, 1, NULL);
}

/* Stops the recording after a failed write: one line, then the rings are
 * drained into nothing. */
static void stop_recording(void)
{
    mt_atomic_store_relaxed(&mt_tl_on, 0);
}

static void drain_ring(mt_tl_ring *r)
{
    uint64_t h = mt_atomic_load_acquire(&r->head); /* pairs with the owner's release */
    uint64_t t = mt_atomic_load_relaxed(&r->tail);
    bool keep = !mt_tl_emit_failed();
    while (t < h) {
        uint64_t w0 = r->words[t & (MT_TL_RING_WORDS - 1)];
        uint64_t time = w0 & MT_TL_TIME_MASK;
        uint64_t addr = r->words[(t + 1) & (MT_TL_RING_WORDS - 1)];
        if ((w0 >> MT_TL_TAG_SHIFT) == 'A') {
            uint64_t size = r->words[(t + 2) & (MT_TL_RING_WORDS - 1)];
            uint32_t stack = (uint32_t)r->words[(t + 3) & (MT_TL_RING_WORDS - 1)];
            t += MT_TL_ALLOC_WORDS;
            if (!keep)
                continue;
            if (W.cull_ns) {
                mt_temp_alloc(&r->temp, stack, size);
                r->temp_hidden = true; /* it may be culled */
                mt_tl_cull_alloc(r->thread, time, addr, size, stack);
            } else {
                mt_tl_emit_alloc(r->thread, time, addr, size, stack);
            }
        } else {
            t += MT_TL_FREE_WORDS;
            if (!keep)
                continue;
            if (!W.cull_ns) {
                mt_tl_emit_free(r->thread, time, addr);
            } else if (mt_tl_cull_free(time, addr, &r->temp)) {
                r->temp_hidden = true;
            } else {
                /* the reader's latest kind for the thread is then the
                 * rule's, whatever was culled before */
                mt_tl_emit_free_after(r->thread, time, addr, r->temp_hidden ? &r->temp : NULL);
                r->temp.armed = false;
                r->temp_hidden = false;
            }
        }
    }
    mt_atomic_store_release(&r->tail, t); /* pairs with the owner's acquire */
}

static void drain_locked(bool final)
{
    uint64_t now = mt_os_now_ns() - mt_tl_start_ns;
    for (mt_tl_ring *r = mt_tl_rings(); r; r = r->next)
        drain_ring(r);
    mt_tl_rings_reclaim();
    if (W.cull_ns)
        mt_tl_cull_expire(final ? UINT64_MAX : now);
    bool old = now - W.last_flush >= FLUSH_NS;
    if (old)
        W.last_flush = now;
    if (!mt_tl_emit_flush(old || final))
        stop_recording();
}

bool mt_tl_drain(bool wait)
{
    if (!W.ready)
        return false;
    if (wait)
        mt_lock_acquire(&W.lock);
    else if (!mt_lock_try(&W.lock))
        return false;
    drain_locked(false);
    mt_lock_release(&W.lock);
    return true;
}

void mt_tl_sync(void)
{
    if (!W.ready || W.finished || getpid() != W.pid)
        return;
    int was = mt_enter();
    mt_lock_acquire(&W.lock);
    drain_locked(true);
    mt_lock_release(&W.lock);
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
        struct timespec ts = { 0, WAKE_NS };
        if (!mt_atomic_exchange_relaxed(&W.wake, 0))
            futex(&W.wake, FUTEX_WAIT_PRIVATE, 0, &ts);
        mt_atomic_store_relaxed(&W.wake, 0);
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
        mt_atomic_store_release(&W.running, 1);
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
    mt_atomic_store_release(&W.running, 0);
    int tid = mt_atomic_load_relaxed(&writer_tid);
    mt_pausable_wait_gone(tid);
    mt_threads_own_remove(tid);
}

static bool writer_running(void)
{
    return mt_atomic_load_acquire(&W.running);
}

static mt_pausable pausable = MT_PAUSABLE(writer_running, stop_writer, start_writer);

bool mt_tl_pause(void)
{
    if (!W.ready || W.finished || getpid() != W.pid) /* a vfork child: not its thread */
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

/* Whether FD is the recording's file. */
static bool is_file(int fd)
{
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == W.dev && st.st_ino == W.ino;
}

/* Descriptors below this distance from the top the program can open (the
 * RLIMIT_NOFILE soft limit, taken as at most 1024) are left to the program. */
#define FD_BELOW_TOP 16

/* FD moved to a number high above the program's own (which the kernel
 * hands out from the lowest free one up): a program that closes a range of
 * descriptors and opens its files does not get this number back for one
 * of them. Not above 1024: the kernel would grow the process's table of
 * descriptors to the limit's size (a million in many containers). FD
 * itself when there is none free up there. */
static int move_high(int fd)
{
    struct rlimit rl;
    rlim_t top = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < top)
        top = rl.rlim_cur;
    if (top <= FD_BELOW_TOP + 3 || fd >= (int)(top - FD_BELOW_TOP))
        return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, (int)(top - FD_BELOW_TOP));
    if (high < 0)
        return fd;
    close(fd);
    return high;
}

int mt_tl_file_fd(uint64_t offset)
{
    if (is_file(W.fd))
        return W.fd;
    if (W.fd < 0)
        return -1;
    /* The program closed the number (it may hold a file of its own there
     * now, which stays untouched): the same file again, at the end of what
     * was written, or nothing. */
    W.fd = -1;
    int fd = open(W.path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 && (!is_file(fd) || lseek(fd, (off_t)offset, SEEK_SET) != (off_t)offset)) {
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        mt_warn("MEMTRACE_RECORD: the program closed the recording's descriptor and %.1024s is "
                "no longer the file it was; recording stopped, the file holds what came before",
                W.path);
        return -1;
    }
    W.fd = move_high(fd);
    return W.fd;
}

/* When this process started, in ns since the epoch; 0 if unknown. Its
 * start time in /proc/self/stat is in clock ticks since boot
 * (CLOCK_BOOTTIME), rounded down. */
static uint64_t process_start_unix_ns(void)
{
    char buf[1024];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* after the command's name, which may hold anything */
    for (int field = 2; p && field < 22; field++) /* to field 22, starttime */
        p = strchr(p + 1, ' ');
    long tick = sysconf(_SC_CLK_TCK);
    if (!p || tick <= 0)
        return 0;
    unsigned long long ticks = strtoull(p + 1, NULL, 10);
    struct timespec real, boot;
    clock_gettime(CLOCK_REALTIME, &real);
    clock_gettime(CLOCK_BOOTTIME, &boot);
    uint64_t real_ns = (uint64_t)real.tv_sec * 1000000000ull + (uint64_t)real.tv_nsec;
    uint64_t boot_ns = (uint64_t)boot.tv_sec * 1000000000ull + (uint64_t)boot.tv_nsec;
    uint64_t since_ns = ticks * (1000000000ull / (uint64_t)tick);
    return since_ns > boot_ns ? 0 : real_ns - (boot_ns - since_ns);
}

#define HEAD_BYTES 8192 /* a head block at most (its command line is cut at 4096) */

/* earlier_image's answer, with FILE (FILE_SIZE bytes) and RAW
 * (HEAD_BYTES) to read the head into. */
static bool earlier_head(const char *path, uint8_t *file, size_t file_size, uint8_t *raw)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    ssize_t n = -1;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        n = read(fd, file, file_size);
    if (fd >= 0)
        close(fd);
    if (n < MT_REC_MAGIC_LEN + MT_REC_HEADER_LEN ||
        memcmp(file, MT_REC_MAGIC, MT_REC_MAGIC_LEN) != 0)
        return false;
    uint32_t h[3];
    memcpy(h, file + MT_REC_MAGIC_LEN, sizeof h);
    const uint8_t *block = file + MT_REC_MAGIC_LEN + MT_REC_HEADER_LEN;
    size_t have = (size_t)n - MT_REC_MAGIC_LEN - MT_REC_HEADER_LEN;
    if (h[2] != MT_REC_BLOCK_TAG || h[0] > have || h[1] > HEAD_BYTES)
        return false;
    size_t len = h[1];
    if (h[0] == h[1]) {
        memcpy(raw, block, len);
    } else {
        size_t got = ZSTD_decompress(raw, HEAD_BYTES, block, h[0]);
        if (ZSTD_isError(got) || got != len)
            return false;
    }
    const uint8_t *p = raw + 1, *end = raw + len;
    uint64_t version, pid, start;
    if (len == 0 || raw[0] != MT_REC_HEAD || !mt_rec_get_u(&p, end, &version) ||
        !mt_rec_get_u(&p, end, &pid) || !mt_rec_get_u(&p, end, &start))
        return false;
    uint64_t born = process_start_unix_ns();
    return pid == (uint64_t)getpid() && born && start >= born;
}

/* Whether the file at PATH is a recording this process made before it
 * executed a program (itself, most often: a server that re-executes
 * itself to upgrade), whose name it expands to again: its head (the first
 * block, which mt_tl_start writes alone) names this pid and a start after
 * this process's. A recording of an earlier process that had the same pid
 * (the first process of every container) started before this one. */
static bool earlier_image(const char *path)
{
    /* Mapped for the check, not static: it is rare, and a program that
     * fills its address space should not lose the room to memtrace. */
    size_t file_size = MT_REC_MAGIC_LEN + MT_REC_HEADER_LEN + HEAD_BYTES;
    size_t size = file_size + HEAD_BYTES;
    uint8_t *buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED)
        return false;
    bool earlier = earlier_head(path, buf, file_size, buf + file_size);
    munmap(buf, size);
    return earlier;
}

/* Opens W.path for the recording, O_NOFOLLOW; -1 and errno when it
 * cannot. A recording there of this process before its exec is kept: the
 * first of PATH.1 to PATH.99 that does not exist is written instead (said
 * once; W.path is that name). */
static int open_recording(void)
{
    int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC;
    int fd = open(W.path, flags | O_EXCL, 0600);
    if (fd >= 0 || errno != EEXIST)
        return fd;
    if (!earlier_image(W.path))
        return open(W.path, flags | O_TRUNC, 0600);
    char alt[PATH_BYTES];
    for (int k = 1; k < 100; k++) {
        if (snprintf(alt, sizeof alt, "%s.%d", W.path, k) >= (int)sizeof alt) {
            errno = ENAMETOOLONG;
            return -1;
        }
        fd = open(alt, flags | O_EXCL, 0600);
        if (fd >= 0) {
            mt_warn("MEMTRACE_RECORD: %.1024s holds this process's recording from before it "
                    "executed %s; recording to %.1024s", W.path, program_invocation_short_name,
                    alt);
            memcpy(W.path, alt, sizeof alt);
            return fd;
        }
        if (errno != EEXIST)
            return -1;
    }
    return -1;
}

void mt_tl_start(void)
{
    if (!mt_atomic_load_relaxed(&mt_tl_on) || getpid() != W.pid || W.ready)
        return;
    const char *failed = NULL;
    if (!mt_path_expand(W.pattern, program_invocation_short_name, 0, W.path, sizeof W.path)) {
        snprintf(W.path, sizeof W.path, "%s", W.pattern);
        failed = "the name it expands to is too long";
    } else if ((W.fd = open_recording()) < 0) {
        struct stat st;
        failed = errno == ELOOP && lstat(W.path, &st) == 0 && S_ISLNK(st.st_mode)
                     ? "a symbolic link; not followed"
                     : strerror(errno);
    } else {
        struct stat st;
        W.fd = move_high(W.fd);
        if (fstat(W.fd, &st) == 0) {
            W.dev = st.st_dev;
            W.ino = st.st_ino;
        }
        if (!mt_tl_emit_init(W.cull_ns) || (W.cull_ns && !mt_tl_cull_init(W.cull_ns)))
            failed = "out of memory";
    }
    if (failed) {
        mt_warn("MEMTRACE_RECORD: %.1024s not written (%s); no recording", W.path, failed);
        if (W.fd >= 0)
            close(W.fd);
        W.fd = -1;
        stop_recording();
        return;
    }
    static char command[4096];
    size_t len = command_line(command, sizeof command);
    mt_tl_emit_head((uint64_t)W.pid, W.start_unix_ns, W.cull_ns, (uint64_t)mt_cfg.sample, command,
                    len);
    /* The head alone in the first block, on disk at once: what an exec of
     * this process finds there (earlier_image). */
    mt_tl_emit_flush(true);
    W.ready = true;
    start_writer();
}

void mt_tl_finish(mt_tl_symbolize_fn *symbolize)
{
    if (!W.ready || W.finished || getpid() != W.pid)
        return;
    pthread_mutex_lock(&pausable.lock);
    W.finished = true;
    if (mt_atomic_load_acquire(&W.running)) {
        mt_atomic_store_release(&W.stop, 1);
        mt_tl_wake_writer();
        pthread_join(W.thread, NULL);
        mt_atomic_store_release(&W.running, 0);
    }
    pthread_mutex_unlock(&pausable.lock);
    mt_lock_acquire(&W.lock);
    /* Appends racing with this end (another thread allocating during exit)
     * are dropped from here on. */
    mt_atomic_store_relaxed(&mt_tl_on, 0);
    drain_locked(true);
    bool failed = mt_tl_emit_failed();
    if (!failed) {
        if (symbolize)
            mt_tl_emit_symbols(symbolize);
        mt_tl_emit_end(mt_os_now_ns() - mt_tl_start_ns);
        failed = !mt_tl_emit_flush(true);
    }
    if (is_file(W.fd) && close(W.fd) != 0 && !failed) {
        mt_warn("MEMTRACE_RECORD: %.1024s: %s", W.path, strerror(errno));
        failed = true;
    }
    W.fd = -1;
    mt_lock_release(&W.lock);
    if (failed)
        mt_warn("recording: %.1024s is cut short (a write failed); memtrace export reads what it "
                "holds", W.path);
    else if (mt_cfg.sample)
        mt_warn("recording: %.1024s (%llu events; sampled: one allocation in %llu bytes); view it "
                "with: memtrace view %.1024s", W.path, (unsigned long long)mt_tl_emit_events(),
                (unsigned long long)mt_cfg.sample, W.path);
    else
        mt_warn("recording: %.1024s (%llu events); view it with: memtrace view %.1024s", W.path,
                (unsigned long long)mt_tl_emit_events(), W.path);
}

void mt_tl_fork_child(void)
{
    mt_atomic_store_relaxed(&mt_tl_on, 0);
    W.ready = false;
    mt_atomic_store_relaxed(&W.running, 0);
    if (is_file(W.fd)) /* else the number is the program's */
        close(W.fd);
    W.fd = -1;
}
