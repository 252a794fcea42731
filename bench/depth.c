/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* depth: the cost of a malloc/free pair as a function of the stack's depth.
 *
 *   depth DEPTH PAIRS
 *
 * A thread (so that the cached-CFI unwinder knows its stack under valgrind
 * too, see bench/instr.sh) recurses until the stack holds DEPTH frames
 * counted from the leaf to the thread's start (the recursion makes DEPTH - 3
 * of them: the thread's routine, start_thread and clone3 are the others),
 * then makes PAIRS malloc(32)/free pairs at the leaf, and prints
 *   depth: D frames, N pairs, X.X ns a pair
 * (wall time of the loop only). Every recursive call is followed by an
 * asm statement that uses its result, so each level keeps its own frame
 * (no tail call, no inlining). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long pairs;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static __attribute__((noinline)) double leaf(void)
{
    double t0 = now();
    for (long i = 0; i < pairs; i++) {
        void *p = malloc(32);
        __asm__ volatile("" : : "r"(p) : "memory");
        free(p);
    }
    return now() - t0;
}

static __attribute__((noinline)) double recurse(int levels)
{
    double t = levels <= 1 ? leaf() : recurse(levels - 1);
    __asm__ volatile("" : "+x"(t) : : "memory");
    return t;
}

static int levels;

static void *run(void *out)
{
    *(double *)out = recurse(levels);
    __asm__ volatile("" : : : "memory");
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3 || atoi(argv[1]) < 4 || atol(argv[2]) < 1) {
        fputs("usage: depth DEPTH(>=4) PAIRS\n", stderr);
        return 2;
    }
    int depth = atoi(argv[1]);
    levels = depth - 3;
    pairs = atol(argv[2]);
    double secs = 0;
    pthread_t t;
    if (pthread_create(&t, NULL, run, &secs) != 0 || pthread_join(t, NULL) != 0) {
        fputs("depth: no thread\n", stderr);
        return 1;
    }
    printf("depth: %d frames, %ld pairs, %.1f ns a pair\n", depth, pairs, secs * 1e9 / pairs);
    return 0;
}
