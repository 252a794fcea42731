/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* perf_samp_exit: many allocation stacks, each block kept to the exit, for
 * tests/e2e/perf_samp_exit.sh (the profiler's exit cost, counted).
 *
 *   perf_samp_exit N
 *
 * Allocates N blocks (N at most 4096) of 64 bytes at the leaf of a chain
 * of 12 calls, each through one of two functions as the bits of the
 * block's number say: N distinct stacks of 15 frames or so, so that the
 * exit's pprof profiles hold N samples and about 2N locations. Prints the
 * number of blocks kept. */
#include <stdio.h>
#include <stdlib.h>

#define DEPTH 12

static void *kept[4096];

static void *step_a(unsigned k, int d);
static void *step_b(unsigned k, int d);

static void *next(unsigned k, int d)
{
    if (d == DEPTH)
        return malloc(64);
    return k >> d & 1 ? step_b(k, d + 1) : step_a(k, d + 1);
}

__attribute__((noinline)) static void *step_a(unsigned k, int d)
{
    void *p = next(k, d);
    __asm__ volatile("" ::: "memory"); /* no tail call: a frame each */
    return p;
}

__attribute__((noinline)) static void *step_b(unsigned k, int d)
{
    void *p = next(k, d);
    __asm__ volatile("" ::: "memory");
    return p;
}

int main(int argc, char **argv)
{
    long n = argc == 2 ? atol(argv[1]) : 0;
    if (n < 1 || n > 4096)
        return 2;
    for (long i = 0; i < n; i++)
        kept[i] = next((unsigned)i, 0);
    long live = 0;
    for (long i = 0; i < n; i++)
        live += kept[i] != NULL;
    printf("%ld blocks kept\n", live);
    return 0;
}
