/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* perf_samp_call: the sampled profiler's per-call cost, counted
 * (tests/e2e/perf_samp_call.sh).
 *
 *   perf_samp_call N
 *
 * Does N steps on a thread of its own (under valgrind the unwinder does
 * not know the main thread's stack, and a sampled block is unwound): on a
 * ring of 4096 blocks of 16 to 528 bytes, a random slot's block freed and
 * a new one made there by malloc (two steps in four), calloc (one) or
 * realloc of the block instead of its free (one, which makes one call, not
 * two). The PRNG is seeded: the steps are the same in every run, so
 * callgrind's count of a run with N steps less one with fewer is the
 * steps' own cost. Prints the allocator calls made and a sum of the bytes
 * read back from realloc's and calloc's blocks. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define RING 4096

static long steps, calls;
static unsigned long sum;

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static void *run(void *arg)
{
    (void)arg;
    static char *ring[RING];
    uint64_t rng = 0x9E3779B97F4A7C15ULL;
    for (long i = 0; i < RING; i++) {
        ring[i] = malloc(16 + (size_t)(next_random(&rng) % 513));
        ring[i][0] = (char)i;
    }
    for (long i = 0; i < steps; i++) {
        uint64_t r = next_random(&rng);
        long k = (long)((r >> 40) % RING);
        size_t size = 16 + (size_t)(r % 513);
        char *p;
        switch ((r >> 32) & 3) {
        case 0:
            p = realloc(ring[k], size);
            calls += 1;
            break;
        case 1:
            free(ring[k]);
            p = calloc(1, size);
            calls += 2;
            break;
        default:
            free(ring[k]);
            p = malloc(size);
            calls += 2;
            break;
        }
        if (!p) {
            fputs("perf_samp_call: out of memory\n", stderr);
            exit(1);
        }
        if (((r >> 32) & 3) < 2) /* kept by realloc, zeroed by calloc */
            sum += (unsigned char)p[0];
        p[0] = (char)r;
        ring[k] = p;
    }
    for (long i = 0; i < RING; i++)
        free(ring[i]);
    return NULL;
}

int main(int argc, char **argv)
{
    steps = argc > 1 ? atol(argv[1]) : 10000;
    pthread_t t;
    if (pthread_create(&t, NULL, run, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 1;
    printf("%ld calls, sum %lu\n", calls, sum);
    return 0;
}
