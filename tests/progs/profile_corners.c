/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The profiler against programs that do unusual things with threads,
 * descriptors, argv and environment, for tests/e2e/profiler.sh. Reports are
 * asked for with memtrace_report (found with dlsym). Every mode exits 0
 * when the program itself saw what it expected.
 *
 *   profile_corners cancel   a thread blocked inside memtrace_report (its
 *                            MEMTRACE_OUTPUT is a FIFO nobody reads yet) is
 *                            cancelled; the program then exits
 *   profile_corners cancel_trace F
 *                            the same inside print_trace: fd 2 is a full
 *                            pipe, so print_trace of a block with a deep
 *                            stack (MEMTRACE_DEPTH=256) blocks writing while
 *                            it symbolizes; it is cancelled, then a thread
 *                            drains the pipe into F and print_trace is
 *                            called again
 *   profile_corners stderr2 F [closefrom]
 *                            a daemon's descriptors: closes fd 2, opens its
 *                            data file F (it gets fd 2), writes 4096 bytes,
 *                            asks for a report and exits; with closefrom it
 *                            also closes every descriptor from 3 up and puts
 *                            F at 100 and 101 too before the report
 *   profile_corners proctitle
 *                            a setproctitle: overwrites the contiguous
 *                            argv and environment strings with a title and
 *                            zeros, clears the environment, then leaks a
 *                            block and exits
 *   profile_corners exec     fork+execs itself as "child" 3 times, one
 *                            after another; each child leaks a block and
 *                            exits; then the parent exits
 *   profile_corners peak     5 blocks of 10000 bytes 30 ms apart (the peak,
 *                            50000), all freed, then a 100-byte leak
 *   profile_corners fill     mallocs 64 KiB blocks until malloc returns
 *                            NULL (run under ulimit -v), asks print_trace
 *                            about the last one and exits 0
 *   profile_corners unshare [mnt]
 *                            with mnt, first joins its own mount namespace
 *                            (setns: refused to a process whose threads
 *                            share its filesystem context); then
 *                            unshare(CLONE_NEWUSER), which the kernel
 *                            refuses to a multi-threaded process; then
 *                            holds a block for 400 ms and exits 0 when both
 *                            calls succeeded
 *   profile_corners pthread_exit
 *                            main starts a thread that leaks a block 200 ms
 *                            later, and ends with pthread_exit (the process
 *                            ends with that thread, status 0)
 *   profile_corners scale [BITS [PAD]]
 *                            2^BITS (default 20) distinct stacks, each
 *                            holding one 8-byte block at exit: a binary
 *                            counter of BITS recursive calls, each from one
 *                            of two call sites, then PAD (default 0) more
 *                            frames, the same in every stack */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void (*report)(void);

static void ask_report(void)
{
    if (report)
        report();
}

static void *cancelled_main(void *arg)
{
    (void)arg;
    ask_report();
    for (;;)
        pause(); /* a cancellation point: the pending cancel lands here */
    return NULL;
}

/* The thread blocks in the report's open of the FIFO; the cancel comes
 * while it waits there. A report that can be cancelled mid-way leaves its
 * lock held and the exit report waits for it forever. */
static int cancel_case(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, cancelled_main, NULL) != 0)
        return 2;
    usleep(300000);
    pthread_cancel(t);
    void *res;
    pthread_join(t, &res);
    return res == PTHREAD_CANCELED ? 0 : 3;
}

void *volatile keep;

static int proctitle_case(int argc, char **argv)
{
    char *start = argv[0];
    char *end = argv[argc - 1] + strlen(argv[argc - 1]) + 1;
    for (char **e = environ; *e; e++)
        if (*e == end)
            end = *e + strlen(*e) + 1;
    memset(start, 0, (size_t)(end - start));
    strncpy(start, "corners: worker process", (size_t)(end - start) - 1);
    clearenv();
    keep = malloc(100);
    return 0;
}

__attribute__((noinline)) static void *alloc_peak(size_t n)
{
    return malloc(n);
}

__attribute__((noinline)) static void *alloc_leak(size_t n)
{
    return malloc(n);
}

static int peak_case(void)
{
    void *b[5];
    for (int i = 0; i < 5; i++) {
        b[i] = alloc_peak(10000);
        usleep(30000);
    }
    for (int i = 0; i < 5; i++)
        free(b[i]);
    keep = alloc_leak(100);
    return 0;
}

/* The call at each level comes from one of two lines, as bit DEPTH of
 * PATH says: 2^DEPTH distinct return-address paths. Built at -O0, so no
 * call is a tail call. */
__attribute__((noinline)) static void pad(int n)
{
    if (n == 0)
        keep = malloc(8);
    else
        pad(n - 1);
}

__attribute__((noinline)) static void grow(int depth, unsigned long path, int padding)
{
    if (depth == 0) {
        pad(padding);
        return;
    }
    if (path & 1)
        grow(depth - 1, path >> 1, padding);
    else
        grow(depth - 1, path >> 1, padding);
}

/* PADDING more frames under each leaf make every stack's text longer. */
static int scale_case(int bits, int padding)
{
    if (bits < 1 || bits > 24 || padding < 0 || padding > 200)
        return 2;
    for (unsigned long i = 0; i < 1ul << bits; i++)
        grow(bits, i, padding);
    return 0;
}

static int exec_case(const char *self)
{
    keep = malloc(10);
    for (int i = 0; i < 3; i++) {
        pid_t c = fork();
        if (c < 0)
            return 2;
        if (c == 0) {
            execl(self, self, "child", (char *)NULL);
            _exit(127);
        }
        int status;
        if (waitpid(c, &status, 0) != c || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return 3;
    }
    return 0;
}

static int drain_fd;
static const char *drain_path;

static void *drain_main(void *arg)
{
    (void)arg;
    int out = open(drain_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char buf[4096];
    ssize_t n;
    while ((n = read(drain_fd, buf, sizeof buf)) > 0)
        if (out >= 0 && write(out, buf, (size_t)n) != n)
            break;
    return NULL;
}

static void *trace_main(void *arg)
{
    void (*trace)(const void *) = (void (*)(const void *))dlsym(RTLD_DEFAULT, "print_trace");
    if (trace)
        trace(arg);
    for (;;)
        pause();
    return NULL;
}

static int cancel_trace_case(const char *path)
{
    void (*trace)(const void *) = (void (*)(const void *))dlsym(RTLD_DEFAULT, "print_trace");
    int p[2];
    if (!trace || pipe(p) != 0 || dup2(p[1], 2) != 2)
        return 2;
    fcntl(2, F_SETFL, O_NONBLOCK);
    char fill[4096] = { 0 };
    while (write(2, fill, sizeof fill) > 0)
        ;
    fcntl(2, F_SETFL, 0);
    pad(250);
    void *block = keep;
    pthread_t t, d;
    if (pthread_create(&t, NULL, trace_main, block) != 0)
        return 3;
    usleep(300000);
    pthread_cancel(t);
    drain_fd = p[0];
    drain_path = path;
    if (pthread_create(&d, NULL, drain_main, NULL) != 0)
        return 4;
    void *res;
    pthread_join(t, &res);
    trace(block); /* waited 0.6 s for a symbolizer lock left held, then raw frames */
    close(2);
    close(p[1]);
    pthread_join(d, NULL);
    return res == PTHREAD_CANCELED ? 0 : 5;
}

static int stderr2_case(const char *path, int closefrom)
{
    close(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd != 2)
        return 2;
    if (closefrom) {
        for (int i = 3; i < 1024; i++)
            close(i);
        if (dup2(fd, 100) != 100 || dup2(fd, 101) != 101)
            return 3;
    }
    char data[4096];
    memset(data, 'd', sizeof data);
    if (write(fd, data, sizeof data) != (ssize_t)sizeof data)
        return 4;
    ask_report();
    return 0;
}

/* Mallocs 64 KiB blocks until malloc fails, then asks print_trace about
 * the first: recorded before the address space ran short (memtrace may
 * have to stop recording near the end, when its live table cannot grow). */
static int fill_case(void)
{
    void *first = NULL;
    for (;;) {
        void *p = malloc(65536); /* SITE:fill */
        if (!p)
            break;
        if (!first)
            first = p;
    }
    void (*trace)(const void *) = (void (*)(const void *))dlsym(RTLD_DEFAULT, "print_trace");
    if (trace && first)
        trace(first);
    return first ? 0 : 2;
}

__attribute__((noinline)) static void *alloc_after_unshare(size_t n)
{
    return malloc(n); /* SITE:after_unshare */
}

static int unshare_case(int mnt)
{
    keep = malloc(10);
    if (mnt) {
        int fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (fd < 0 || setns(fd, CLONE_NEWNS) != 0) {
            fprintf(stderr, "setns: %s\n", strerror(errno));
            return 3;
        }
        close(fd);
    }
    if (unshare(CLONE_NEWUSER) != 0) {
        fprintf(stderr, "unshare: %s\n", strerror(errno));
        return 4;
    }
    void *b = alloc_after_unshare(777);
    usleep(400000);
    free(b);
    return 0;
}

__attribute__((noinline)) static void *alloc_in_worker(size_t n)
{
    return malloc(n); /* SITE:worker */
}

static void *worker_main(void *arg)
{
    (void)arg;
    usleep(200000);
    keep = alloc_in_worker(555);
    return NULL;
}

static int pthread_exit_case(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, worker_main, NULL) != 0)
        return 2;
    pthread_exit(NULL);
}

int main(int argc, char **argv)
{
    report = (void (*)(void))dlsym(RTLD_DEFAULT, "memtrace_report");
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "cancel") == 0)
        return cancel_case();
    if (strcmp(mode, "scale") == 0)
        return scale_case(argc > 2 ? atoi(argv[2]) : 20, argc > 3 ? atoi(argv[3]) : 0);
    if (strcmp(mode, "peak") == 0)
        return peak_case();
    if (strcmp(mode, "fill") == 0)
        return fill_case();
    if (strcmp(mode, "unshare") == 0)
        return unshare_case(argc > 2 && strcmp(argv[2], "mnt") == 0);
    if (strcmp(mode, "pthread_exit") == 0)
        return pthread_exit_case();
    if (strcmp(mode, "exec") == 0)
        return exec_case(argv[0]);
    if (strcmp(mode, "child") == 0) {
        keep = malloc(20);
        return 0;
    }
    if (strcmp(mode, "proctitle") == 0)
        return proctitle_case(argc, argv);
    if (strcmp(mode, "cancel_trace") == 0 && argc > 2)
        return cancel_trace_case(argv[2]);
    if (strcmp(mode, "stderr2") == 0 && argc > 2)
        return stderr2_case(argv[2], argc > 3 && strcmp(argv[3], "closefrom") == 0);
    return 64;
}
