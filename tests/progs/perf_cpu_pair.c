/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* perf_cpu_pair: the tracer's malloc/free pair at its defaults, counted
 * (tests/e2e/perf_cpu_pair.sh).
 *
 *   perf_cpu_pair N
 *
 * Does N steps of bench/churn.c's shape on a thread of its own (under
 * valgrind the tracer's unwinder does not know the main thread's stack):
 * on a ring of 4096 blocks, a free of a random slot's block and a malloc
 * of 16 to 528 bytes into it through a call chain of random depth 1 to 8.
 * The PRNG is seeded: the steps are the same in every run, so callgrind's
 * count of a run with N steps less one with fewer is the steps' own cost.
 * Prints a sum of the bytes read back. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define RING 4096

static long steps;
static unsigned long sum;

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

/* The asm after the call keeps each level a real frame (no tail call). */
__attribute__((noinline)) static char *allocate_at_depth(int depth, size_t size)
{
    char *p = depth <= 1 ? malloc(size) : allocate_at_depth(depth - 1, size);
    __asm__ volatile("" ::: "memory");
    return p;
}

static char *new_block(uint64_t *rng)
{
    uint64_t r = next_random(rng);
    char *p = allocate_at_depth(1 + (int)((r >> 32) % 8), 16 + (size_t)(r % 513));
    if (!p) {
        fputs("perf_cpu_pair: out of memory\n", stderr);
        exit(1);
    }
    p[0] = (char)r;
    return p;
}

static void *run(void *arg)
{
    (void)arg;
    static char *ring[RING];
    uint64_t rng = 0x9E3779B97F4A7C15ULL;
    for (long i = 0; i < RING; i++)
        ring[i] = new_block(&rng);
    for (long i = 0; i < steps; i++) {
        long k = (long)(next_random(&rng) % RING);
        sum += (unsigned char)ring[k][0];
        free(ring[k]);
        ring[k] = new_block(&rng);
    }
    for (long i = 0; i < RING; i++)
        free(ring[i]);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    steps = atol(argv[1]);
    pthread_t t;
    if (pthread_create(&t, NULL, run, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 1;
    printf("%lu\n", sum);
    return 0;
}
