/* The shared tables under ThreadSanitizer: threads insert and remove in the
 * live table, intern overlapping stacks and push freed records into a ring
 * so small that writers lap each other, while reader threads look records
 * up in the ring. Built with -fsanitize=thread; any data race makes TSan
 * fail the run (exit 66). Every field of a freed record is derived from one
 * number, so a reader that accepts a record mixing two pushes shows it.
 * Prints one line; exits 0 when the final counts are exact, no torn record
 * was accepted and the readers accepted some. */
#include "../../src/freed_history.h"
#include "../../src/live_table.h"
#include "../../src/stack_store.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>

enum { THREADS = 4, OPS = 50000, READERS = 2, RING = 3 };

/* Covered by every record below, torn or not: ptr < 2^44, size > 2^62. */
#define PROBE ((uintptr_t)1 << 61)

static mt_freed_record freed_of(uint64_t k)
{
    mt_freed_record r = {
        .ptr = k,
        .size = ((uint64_t)1 << 62) + 3 * k,
        .alloc_seq = k ^ 0x5555555555555555ull,
        .free_seq = k ^ 0x0123456789abcdefull,
        .alloc_stack = (uint32_t)(k * 0x9E3779B1u),
        .free_stack = (uint32_t)(k >> 32) ^ 0x5bd1e995u,
        .alloc_thread = (uint32_t)k ^ 0xdeadbeefu,
        .free_thread = (uint32_t)(k >> 16),
    };
    return r;
}

static int consistent(const mt_freed_record *r)
{
    mt_freed_record want = freed_of(r->ptr);
    return r->ptr != 0 && r->size == want.size && r->alloc_seq == want.alloc_seq &&
           r->free_seq == want.free_seq && r->alloc_stack == want.alloc_stack &&
           r->free_stack == want.free_stack && r->alloc_thread == want.alloc_thread &&
           r->free_thread == want.free_thread;
}

struct tally {
    uint64_t accepted, torn;
};

static void check(const mt_freed_record *r, void *ctx)
{
    struct tally *t = ctx;
    t->accepted++;
    t->torn += !consistent(r);
}

static int workers_done;

static void *worker(void *arg)
{
    uintptr_t t = (uintptr_t)arg;
    for (uintptr_t i = 0; i < OPS; i++) {
        uintptr_t frames[4] = { 0x1000, i % 97, 0x2000, 0x3000 };
        mt_live_entry e = { .ptr = (t << 40) + i * 16, .size = i % 500, .seq = i,
                            .stack = mt_stack_intern(frames, 4), .thread = (uint32_t)t };
        mt_live_insert(&e);
        if (i % 2) {
            mt_live_entry old;
            if (mt_live_remove(e.ptr, &old)) {
                mt_freed_record r = freed_of(old.ptr);
                mt_freed_push(&r);
            }
        }
    }
    __atomic_fetch_add(&workers_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void *reader(void *arg)
{
    struct tally *t = arg;
    while (__atomic_load_n(&workers_done, __ATOMIC_ACQUIRE) < THREADS)
        mt_freed_find(PROBE, check, t);
    return NULL;
}

int main(void)
{
    mt_freed_init(RING); /* far smaller than the pushes: writers lap each other */
    pthread_t th[THREADS], rd[READERS];
    struct tally tallies[READERS] = { { 0, 0 } };
    for (int r = 0; r < READERS; r++)
        pthread_create(&rd[r], NULL, reader, &tallies[r]);
    for (uintptr_t t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, worker, (void *)(t + 1));
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    struct tally all = { 0, 0 };
    for (int r = 0; r < READERS; r++) {
        pthread_join(rd[r], NULL);
        all.accepted += tallies[r].accepted;
        all.torn += tallies[r].torn;
    }
    size_t want = THREADS * (OPS / 2);
    printf("tsan_tables: %zu live (want %zu), %u stacks (want 97), freed ring of %d: "
           "%" PRIu64 " records read, %" PRIu64 " torn (want 0)\n",
           mt_live_count(), want, mt_stack_count(), RING, all.accepted, all.torn);
    return mt_live_count() == want && mt_stack_count() == 97 && all.torn == 0 &&
                   all.accepted > 0
               ? 0
               : 1;
}
