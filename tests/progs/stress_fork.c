/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Eight threads allocate, check and free blocks while a ninth forks 20
 * children that allocate, free and exit; then one child execs this program
 * again, which must be traced too (LD_PRELOAD is inherited). Exits 0 only if
 * every block kept its pattern, every child exited 0, and nothing hung (the
 * harness times out). A lock held across fork shows here as a child that
 * never exits. */
#include "../../include/memtrace.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { THREADS = 8, OPS = 100000, SLOTS = 1000, FORKS = 20 };

static int bad;

static uint64_t next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void fill(unsigned char *p, size_t n, unsigned char v)
{
    memset(p, v, n);
}

static int intact(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

static void churn(uint64_t seed, int ops)
{
    unsigned char *slot[SLOTS] = { 0 };
    size_t size[SLOTS] = { 0 };
    uint64_t x = seed;
    for (int i = 0; i < ops; i++) {
        size_t k = next(&x) % SLOTS;
        unsigned char tag = (unsigned char)k;
        if (slot[k]) {
            if (!intact(slot[k], size[k], tag))
                __atomic_store_n(&bad, 1, __ATOMIC_RELAXED);
            if (next(&x) % 4 == 0) {
                size_t n = 1 + next(&x) % 2000;
                unsigned char *q = realloc(slot[k], n);
                if (!q)
                    continue;
                fill(q, n, tag);
                slot[k] = q;
                size[k] = n;
                continue;
            }
            free(slot[k]);
            slot[k] = NULL;
        } else {
            size_t n = 1 + next(&x) % 600;
            slot[k] = (next(&x) & 1) ? malloc(n) : calloc(1, n);
            if (!slot[k])
                continue;
            fill(slot[k], n, tag);
            size[k] = n;
        }
    }
    for (size_t k = 0; k < SLOTS; k++)
        free(slot[k]);
}

static void *worker(void *arg)
{
    churn((uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1, OPS);
    return NULL;
}

static int failed_children;

static void *forker(void *arg)
{
    (void)arg;
    for (int f = 0; f < FORKS; f++) {
        pid_t pid = fork();
        if (pid == 0) {
            churn(1000 + (uint64_t)f, 20000);
            exit(bad ? 1 : 0);
        }
        int status;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
            failed_children++;
    }
    return NULL;
}

/* The exec'd copy: allocates and checks that memtrace recorded it. */
static int exec_child(void)
{
    void (*stats)(struct memtrace_stats *) =
        (void (*)(struct memtrace_stats *))dlsym(RTLD_DEFAULT, "memtrace_get_stats");
    if (!stats)
        return 5; /* memtrace is not loaded: the exec lost it */
    struct memtrace_stats a, b;
    stats(&a);
    void *volatile p = malloc(1000); /* volatile: -O2 would elide the pair */
    stats(&b);
    free(p);
    return b.live_blocks == a.live_blocks + 1 ? 0 : 6;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--exec-child") == 0)
        return exec_child();
    pthread_t t[THREADS], f;
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)(i + 1));
    pthread_create(&f, NULL, forker, NULL);
    pthread_join(f, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);

    int exec_status = -1;
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", argv[0], "--exec-child", (char *)NULL);
        _exit(7);
    }
    int status;
    if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status))
        exec_status = WEXITSTATUS(status);
    int traced = dlsym(RTLD_DEFAULT, "memtrace_get_stats") != NULL;
    printf("stress_fork: %d forks, %d failed children, %s; exec'd child exit %d\n", FORKS,
           failed_children, bad ? "corrupted blocks" : "all blocks intact", exec_status);
    return failed_children || bad || (traced && exec_status != 0) ? 1 : 0;
}
