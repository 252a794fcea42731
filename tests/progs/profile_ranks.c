/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sites with known allocation counts, temporary allocations and a known
 * peak, for tests/e2e/profiler_ranks.sh. Each site is one noinline function
 * whose allocating line is marked "SITE:<name>"; reports are asked for with
 * memtrace_report (found with dlsym) at fixed points. Writes nothing itself.
 *
 *   profile_ranks ranks   report 1 after churn (600,000 malloc/free pairs),
 *                         pair, grow and hold; report 2 after 500 more pairs
 *   profile_ranks peak    a peak of 32100 bytes within a few ms, then freed
 *   profile_ranks spawn   a fork and a fork+exec of /bin/ls that both
 *                         exit after the parent */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void (*report)(void);
static void *volatile keep;

static void ask_report(void)
{
    if (report)
        report();
}

__attribute__((noinline)) static void *alloc_churn(size_t n)
{
    return malloc(n); /* SITE:churn */
}

__attribute__((noinline)) static void *alloc_pair(size_t n)
{
    return malloc(n); /* SITE:pair */
}

__attribute__((noinline)) static void *alloc_grow(void *p, size_t n)
{
    return realloc(p, n); /* SITE:grow */
}

__attribute__((noinline)) static void *alloc_hold(size_t n)
{
    return malloc(n); /* SITE:hold */
}

/* Each pair: the second block is freed before the next allocation (1
 * temporary), the first after the second was allocated (not temporary).
 * Every site is called from one line only (a second calling line would be
 * a second stack). */
static void pairs(int n)
{
    for (int i = 0; i < n; i++) {
        void *ab[2];
        for (int j = 0; j < 2; j++)
            ab[j] = alloc_pair(100);
        free(ab[1]);
        free(ab[0]);
    }
}

/* Since start at report 1:
 *   churn: 600,000 allocated, 600,000 temporary, 0 live;
 *   pair:  2,000 allocated, 1,000 temporary, 0 live;
 *   grow:  10 allocated (realloc of NULL, then 9 more), 9 temporary (each
 *          realloc retires the thread's latest allocation), 1 block of
 *          1000 bytes live;
 *   hold:  3 allocated, 0 temporary, 150,000 bytes live.
 * Between reports 1 and 2: pair 1,000 allocated, 500 temporary. */
static int ranks(void)
{
    void *g = NULL, *h[3];
    for (int round = 0; round < 2; round++) {
        pairs(round == 0 ? 1000 : 500);
        if (round == 0) {
            for (int i = 0; i < 600000; i++) {
                char *p = alloc_churn(16);
                p[0] = 1;
                free(p);
            }
            for (int i = 1; i <= 10; i++)
                g = alloc_grow(g, (size_t)i * 100);
            for (int i = 0; i < 3; i++)
                h[i] = alloc_hold(50000);
        }
        ask_report();
    }
    keep = g;
    (void)h;
    return 0;
}

__attribute__((noinline)) static void *alloc_a(size_t n)
{
    return malloc(n); /* SITE:a */
}

__attribute__((noinline)) static void *alloc_b(size_t n)
{
    return malloc(n); /* SITE:b */
}

__attribute__((noinline)) static void *alloc_c(size_t n)
{
    return malloc(n); /* SITE:c */
}

__attribute__((noinline)) static void *alloc_d(size_t n)
{
    return malloc(n); /* SITE:d */
}

/* Live bytes: a 30000; a 20000; + b 32000 (a peak); - b 26000; + c 32100
 * (the peak: a 20000, b 6000, c 6100); then all freed and d's 100 bytes
 * kept. Takes well under the 10 ms a sampled peak would need. */
static int peak(void)
{
    void *a[3], *b[2];
    for (int i = 0; i < 3; i++)
        a[i] = alloc_a(10000);
    free(a[0]);
    for (int i = 0; i < 2; i++)
        b[i] = alloc_b(6000);
    free(b[0]);
    void *c = alloc_c(6100);
    free(c);
    free(b[1]);
    free(a[1]);
    free(a[2]);
    keep = alloc_d(100);
    return 0;
}

__attribute__((noinline)) static void *alloc_parent(size_t n)
{
    return malloc(n); /* SITE:parent */
}

__attribute__((noinline)) static void *alloc_child(size_t n)
{
    return malloc(n); /* SITE:child */
}

/* Waits (at most 10 s) until the process PARENT has exited (this one is
 * then reparented). */
static void wait_for_exit_of(pid_t parent)
{
    for (int i = 0; i < 1000 && getppid() == parent; i++)
        usleep(10000);
}

/* The parent: 1000 bytes at parent, report 1, two children, 2000 more
 * bytes at parent, exit (its folded files and exit report). Then the
 * forked child: 300 bytes at child, exit; the other child execs /bin/ls /
 * (traced: LD_PRELOAD is inherited), its output to /dev/null. */
static int spawn(void)
{
    keep = alloc_parent(1000);
    ask_report();
    pid_t self = getpid();
    for (int i = 0; i < 2; i++) {
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0) {
            wait_for_exit_of(self);
            if (i == 1) {
                int null = open("/dev/null", O_WRONLY);
                dup2(null, 1);
                execl("/bin/ls", "ls", "/", (char *)NULL);
                _exit(127);
            }
            keep = alloc_child(300);
            exit(0);
        }
    }
    keep = alloc_parent(2000);
    return 0;
}

int main(int argc, char **argv)
{
    report = (void (*)(void))dlsym(RTLD_DEFAULT, "memtrace_report");
    const char *mode = argc > 1 ? argv[1] : "ranks";
    if (strcmp(mode, "ranks") == 0)
        return ranks();
    if (strcmp(mode, "peak") == 0)
        return peak();
    if (strcmp(mode, "spawn") == 0)
        return spawn();
    return 2;
}
