/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* 8 threads x 200,000 seeded random operations over the whole allocation
 * API, every block filled with a pattern and checked before it is freed or
 * resized. While all threads hold their blocks (between two barriers), the
 * number of blocks memtrace counts must have grown by exactly the number the
 * threads hold, and be back to where it was once they freed them.
 * Exit 0 on success; 1 on a corrupted block; 2 on a count mismatch. */
#define _GNU_SOURCE
#include "../../include/memtrace.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { THREADS = 8, OPS = 200000, SLOTS = 512 };

struct block {
    unsigned char *p;
    size_t n;
};

static pthread_barrier_t all_started, all_holding, counted, all_freed, recounted;
static long held[THREADS];
static int corrupted;

static uint64_t next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void fill(struct block *b, unsigned char tag)
{
    memset(b->p, tag, b->n);
}

static void check(const struct block *b, unsigned char tag)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->p[i] != tag) {
            __atomic_store_n(&corrupted, 1, __ATOMIC_RELAXED);
            return;
        }
}

/* A new block of N bytes from one of the API's entry points, or NULL. */
static unsigned char *allocate(uint64_t *x, size_t n)
{
    void *p = NULL;
    size_t page = 4096;
    switch (next(x) % 8) {
    case 0: return malloc(n);
    case 1: return calloc(1 + n / 8, 8) ;
    case 2: return posix_memalign(&p, (size_t)16 << (next(x) % 6), n) == 0 ? p : NULL;
    case 3: return aligned_alloc((size_t)8 << (next(x) % 5), (n + 63) & ~(size_t)63);
    case 4: return memalign((size_t)32 << (next(x) % 4), n);
    case 5: return (next(x) % 16 == 0) ? valloc(n) : malloc(n);
    case 6: return reallocarray(NULL, n / 4 + 1, 4);
    default: (void)page; return malloc(n);
    }
}

static void *worker(void *arg)
{
    long t = (long)arg;
    struct block slot[SLOTS] = { { 0 } };
    uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(t + 1);
    pthread_barrier_wait(&all_started);
    for (int op = 0; op < OPS; op++) {
        size_t k = next(&x) % SLOTS;
        unsigned char tag = (unsigned char)(k * 7 + t);
        struct block *b = &slot[k];
        if (!b->p) {
            size_t n = 1 + next(&x) % 700;
            b->p = allocate(&x, n);
            if (!b->p)
                continue;
            b->n = n;
            fill(b, tag);
        } else if (next(&x) % 3 == 0) {
            check(b, tag);
            size_t n = (next(&x) & 1) ? b->n * 2 + 1 : b->n / 2 + 1; /* grow or shrink */
            unsigned char *q = (next(&x) & 1) ? realloc(b->p, n) : reallocarray(b->p, n, 1);
            if (!q)
                continue;
            b->p = q;
            b->n = n;
            fill(b, tag);
        } else {
            check(b, tag);
            free(b->p);
            b->p = NULL;
        }
    }
    for (size_t k = 0; k < SLOTS; k++)
        held[t] += slot[k].p != NULL;
    pthread_barrier_wait(&all_holding);
    pthread_barrier_wait(&counted);
    for (size_t k = 0; k < SLOTS; k++) {
        if (slot[k].p)
            check(&slot[k], (unsigned char)(k * 7 + t));
        free(slot[k].p);
    }
    pthread_barrier_wait(&all_freed);
    pthread_barrier_wait(&recounted);
    return NULL;
}

int main(void)
{
    void (*stats)(struct memtrace_stats *) =
        (void (*)(struct memtrace_stats *))dlsym(RTLD_DEFAULT, "memtrace_get_stats");
    pthread_t th[THREADS];
    pthread_barrier_init(&all_started, NULL, THREADS + 1);
    pthread_barrier_init(&all_holding, NULL, THREADS + 1);
    pthread_barrier_init(&counted, NULL, THREADS + 1);
    pthread_barrier_init(&all_freed, NULL, THREADS + 1);
    pthread_barrier_init(&recounted, NULL, THREADS + 1);
    for (long t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);

    struct memtrace_stats before = { 0 }, holding = { 0 }, after = { 0 };
    /* Before releasing the threads: they allocate nothing until then. */
    if (stats)
        stats(&before);
    pthread_barrier_wait(&all_started);
    pthread_barrier_wait(&all_holding);
    if (stats)
        stats(&holding);
    pthread_barrier_wait(&counted);
    pthread_barrier_wait(&all_freed);
    if (stats)
        stats(&after);
    pthread_barrier_wait(&recounted);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);

    long total = 0;
    for (int t = 0; t < THREADS; t++)
        total += held[t];
    printf("stress_api: %d threads x %d operations, %s\n", THREADS, OPS,
           corrupted ? "CORRUPTED blocks" : "every block intact");
    if (corrupted)
        return 1;
    if (stats) {
        long grew = (long)holding.live_blocks - (long)before.live_blocks;
        long back = (long)after.live_blocks - (long)before.live_blocks;
        fprintf(stderr, "stress_api: program holds %ld blocks, memtrace counted %ld more; "
                        "after freeing them, %ld more\n", total, grew, back);
        if (grew != total || back != 0 || !holding.recording)
            return 2;
    }
    return 0;
}
