/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Known call sites for tests/e2e/pprof.sh (pprof profiles). Each site's
 * malloc line is marked "SITE:<name>"; the test reads the lines from here.
 * Reports are asked for with memtrace_report (found with dlsym) at fixed
 * points, so the profiles' numbers do not depend on timing.
 *
 *   pprof_sites          keep 7 * 48 (live, through an inlined function),
 *                        freed 5 * 64 (freed), report 1; thread
 *                        "pprof-worker" 3 * 200 (live); peak 1 * 100000
 *                        (freed), report 2; checkpoint(); exit
 *   pprof_sites fork     keep 7 * 48; a child adds child 2 * 500 and exits;
 *                        the parent waits, then exits */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void (*report)(void);
static void *volatile sink; /* so that no malloc is optimised away */
static void *keep[7], *worker_blocks[3];

static inline __attribute__((always_inline)) void *inlined_alloc(size_t n)
{
    return malloc(n); /* SITE:inlined */
}

__attribute__((noinline)) static void *alloc_keep(size_t n)
{
    return inlined_alloc(n); /* SITE:keep */
}

__attribute__((noinline)) static void alloc_freed(size_t n)
{
    sink = malloc(n); /* SITE:freed */
    free(sink);
}

__attribute__((noinline)) static void *alloc_thread(size_t n)
{
    return malloc(n); /* SITE:thread */
}

__attribute__((noinline)) static void alloc_peak(size_t n)
{
    sink = malloc(n); /* SITE:peak */
    free(sink);
}

__attribute__((noinline)) static void *alloc_child(size_t n)
{
    return malloc(n); /* SITE:child */
}

/* The gdb tests stop here. */
__attribute__((noinline)) void checkpoint(void)
{
    __asm__ volatile("" ::: "memory");
}

static void ask_report(void)
{
    if (report)
        report();
}

static void *worker(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "pprof-worker");
    for (int i = 0; i < 3; i++)
        worker_blocks[i] = alloc_thread(200); /* SITE:thread_call */
    return NULL;
}

static void keep_some(void)
{
    for (int i = 0; i < 7; i++)
        keep[i] = alloc_keep(48); /* SITE:keep_call */
}

static int sites(void)
{
    keep_some();
    for (int i = 0; i < 5; i++)
        alloc_freed(64); /* SITE:freed_call */
    ask_report();
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    /* Past the profiler's 10 ms between peak samples: this allocation's
     * peak is sampled. */
    usleep(30000);
    alloc_peak(100000); /* SITE:peak_call */
    ask_report();
    checkpoint();
    return 0;
}

static int forking(void)
{
    keep_some();
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        for (int i = 0; i < 2; i++)
            sink = alloc_child(500);
        exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    report = (void (*)(void))dlsym(RTLD_DEFAULT, "memtrace_report");
    if (argc > 1 && strcmp(argv[1], "fork") == 0)
        return forking();
    return sites();
}
