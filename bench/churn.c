/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* churn: the allocator hot path under a steady live set.
 *
 *   churn [THREADS [PAIRS [LIVE]]]     defaults: 1 3000000 100000
 *
 * Each thread keeps a ring of LIVE/THREADS blocks and does PAIRS/THREADS
 * steps; a step frees a random slot and allocates a new block of 16 to 528
 * bytes there, through a call chain of random depth 1 to 8, so the tracer
 * sees many distinct stacks. One byte of every block is written, so the peak
 * RSS is real. The PRNG is seeded per thread: runs are deterministic.
 *
 * With CHURN_WAIT=FILE (bench/attach.sh), waits for FILE to exist before
 * the work (so that `memtrace attach` can come first) and prints the
 * work's wall time to stderr: "churn: work N.NNN s".
 *
 * With CHURN_TAGS=1, each allocating call of a step runs in a tag scope
 * (memtrace_tag_push/pop, the public API's weak references, so churn
 * still runs without memtrace), named after the call chain's depth
 * ("d1" to "d8"): the cost of tags in use (the bench's tags line). */
#include "../include/memtrace.h"
#include "../src/runtime/descriptor.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct job {
    unsigned seed;
    long pairs;
    long live;
    unsigned long sum;
};

static uint64_t next_random(uint64_t *s)
{
    /* xorshift64* */
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

static int use_tags; /* CHURN_TAGS=1 */

static char *new_block(uint64_t *rng)
{
    static const char *const scope[] = { "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8" };
    uint64_t r = next_random(rng);
    size_t size = 16 + (r % 513);
    int depth = 1 + (int)((r >> 32) % 8);
    if (use_tags)
        memtrace_tag_push(scope[depth - 1]);
    char *p = allocate_at_depth(depth, size);
    if (use_tags)
        memtrace_tag_pop();
    if (!p) {
        fputs("churn: out of memory\n", stderr);
        exit(1);
    }
    p[0] = (char)r;
    return p;
}

static void *run(void *arg)
{
    struct job *job = arg;
    uint64_t rng = 0x9E3779B97F4A7C15ULL * (job->seed + 1);
    char **slot = malloc(job->live * sizeof *slot);
    for (long i = 0; i < job->live; i++)
        slot[i] = new_block(&rng);
    for (long i = 0; i < job->pairs; i++) {
        long k = (long)(next_random(&rng) % (uint64_t)job->live);
        job->sum += (unsigned char)slot[k][0];
        free(slot[k]);
        slot[k] = new_block(&rng);
    }
    for (long i = 0; i < job->live; i++)
        free(slot[i]);
    free(slot);
    return NULL;
}

/* memtrace's count of contention met so far, -1 without one. */
static long long contended(void)
{
    const struct memtrace_state *s = dlsym(RTLD_DEFAULT, "memtrace_state");
    if (!s || memcmp(s->magic, MT_STATE_MAGIC, 8) != 0 ||
        s->size < offsetof(struct memtrace_state, contended) + 8 || !s->contended)
        return -1;
    return (long long)__atomic_load_n((const uint64_t *)(uintptr_t)s->contended, __ATOMIC_RELAXED);
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    long pairs = argc > 2 ? atol(argv[2]) : 3000000;
    long live = argc > 3 ? atol(argv[3]) : 100000;
    if (threads < 1 || threads > 64 || pairs < 0 || live < threads) {
        fputs("usage: churn [THREADS [PAIRS [LIVE]]]\n", stderr);
        return 2;
    }
    struct job job[64];
    pthread_t tid[64];
    const char *wait_file = getenv("CHURN_WAIT");
    const char *tags = getenv("CHURN_TAGS");
    use_tags = tags && strcmp(tags, "1") == 0;
    struct timespec t0, t1, nap = { 0, 2 * 1000 * 1000 };
    if (wait_file) {
        fprintf(stderr, "churn: waiting\n");
        while (access(wait_file, F_OK) != 0)
            nanosleep(&nap, NULL);
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int t = 0; t < threads; t++) {
        job[t] = (struct job){ .seed = (unsigned)t, .pairs = pairs / threads,
                               .live = live / threads };
        if (t > 0 && pthread_create(&tid[t], NULL, run, &job[t]) != 0) {
            fputs("churn: pthread_create failed\n", stderr);
            return 1;
        }
    }
    run(&job[0]);
    unsigned long sum = job[0].sum;
    for (int t = 1; t < threads; t++) {
        pthread_join(tid[t], NULL);
        sum += job[t].sum;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (wait_file)
        fprintf(stderr, "churn: work %.3f s\n",
                (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    if (getenv("CHURN_CONTENDED")) {
        long long n = contended();
        if (n < 0)
            fprintf(stderr, "churn: contended -\n");
        else
            fprintf(stderr, "churn: contended %lld\n", n);
    }
    printf("churn: %d thread(s), %ld pairs, %ld live, checksum %lu\n",
           threads, pairs, live, sum);
    return 0;
}
