/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A server for memtrace top's screen (tests/e2e/live_top_screen.sh): for
 * SECONDS (argv[1]) it loops about every millisecond, each time taking a
 * heartbeat (the monotonic clock) and allocating at known sites, so that
 * each order of the view puts another site first:
 *   by live bytes   alloc_big      one block of 1,000,000 bytes
 *   by allocations  and temporary  alloc_churn: 20 blocks of 32 bytes
 *                   an iteration, each freed at once
 *   by growth       alloc_grow: one 64-byte block an iteration, kept (at
 *                   most 12,000: 768,000 bytes, below alloc_big's)
 *   and alloc_steady: 50 blocks of 1,000 bytes from the start.
 * Prints "ready PID" once started and, at the end, "max_gap_us N": the
 * longest time between two heartbeats, microseconds (a stop of the
 * process shows there), and "long_gaps N": how many were over 50 ms. With WORK (argv[2], a count), it also runs a
 * fixed count of allocations as fast as it can and prints their rate
 * (bench/run.sh's arm). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define GROW_MAX 12000

static void *big, *steady[50], *grown[GROW_MAX];
static size_t ngrown;

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

__attribute__((noinline)) static void *alloc_big(void)
{
    return malloc(1000000); /* SITE:big */
}

__attribute__((noinline)) static void *alloc_steady(void)
{
    return malloc(1000); /* SITE:steady */
}

__attribute__((noinline)) static void *alloc_grow(void)
{
    return malloc(64); /* SITE:grow */
}

__attribute__((noinline)) static void alloc_churn(void)
{
    for (int i = 0; i < 20; i++) {
        volatile char *p = malloc(32); /* SITE:churn */
        p[0] = 1;
        free((void *)p);
    }
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 10;
    big = alloc_big();
    for (int i = 0; i < 50; i++)
        steady[i] = alloc_steady();
    char line[64];
    int len = snprintf(line, sizeof line, "ready %d\n", (int)getpid());
    if (write(1, line, (size_t)len) != len)
        return 1;
    uint64_t start = now_us(), last = start, max_gap = 0, long_gaps = 0;
    const struct timespec ms = { 0, 1000000 };
    while (now_us() - start < (uint64_t)(seconds * 1e6)) {
        uint64_t t = now_us();
        if (t - last > max_gap)
            max_gap = t - last;
        long_gaps += t - last > 50000;
        last = t;
        alloc_churn();
        if (ngrown < GROW_MAX)
            grown[ngrown++] = alloc_grow();
        nanosleep(&ms, NULL);
    }
    if (argc > 2) {
        long work = atol(argv[2]);
        uint64_t t0 = now_us();
        for (long i = 0; i < work; i++)
            alloc_churn();
        uint64_t dt = now_us() - t0;
        len = snprintf(line, sizeof line, "allocs_per_s %.0f\n", work * 20 / (dt / 1e6));
        if (write(1, line, (size_t)len) != len)
            return 1;
    }
    len = snprintf(line, sizeof line, "long_gaps %llu\nmax_gap_us %llu\n",
                   (unsigned long long)long_gaps, (unsigned long long)max_gap);
    return write(1, line, (size_t)len) == len ? 0 : 1;
}
