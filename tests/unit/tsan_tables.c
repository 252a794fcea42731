/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The shared tables under ThreadSanitizer: threads insert and remove in the
 * live table, intern overlapping stacks and push freed records into a ring
 * so small that writers lap each other, while reader threads look records
 * up in the ring. Built with -fsanitize=thread; any data race makes TSan
 * fail the run (exit 66). Every field of a freed record is derived from one
 * number, so a reader that accepts a record mixing two pushes shows it.
 * Prints one line; exits 0 when the final counts are exact, no torn record
 * was accepted and the readers accepted some. */
#include "store/freed_history.h"
#include "store/live_table.h"
#include "store/stack_store.h"
#include "freed_records.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>

enum { THREADS = 4, OPS = 50000, READERS = 2, RING = 3 };

static int workers_done;

static void *worker(void *arg)
{
    uintptr_t t = (uintptr_t)arg;
    for (uintptr_t i = 0; i < OPS; i++) {
        uintptr_t frames[4] = { 0x1000, i % 97, 0x2000, 0x3000 };
        mt_live_entry e = { .ptr = (t << 40) + i * 16,
                            .size = i % 500,
                            .seq = i,
                            .stack = mt_stack_intern(frames, 4),
                            .thread = (uint32_t)t };
        mt_live_insert(&e);
        if (i % 2) {
            mt_live_entry old;
            if (mt_live_remove(e.ptr, &old)) {
                mt_freed_record r = freed_record_of(old.ptr);
                mt_freed_push(&r);
            }
        }
    }
    __atomic_fetch_add(&workers_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void *reader(void *arg)
{
    struct freed_tally *t = arg;
    while (__atomic_load_n(&workers_done, __ATOMIC_ACQUIRE) < THREADS)
        mt_freed_find(FREED_PROBE, freed_tally, t);
    return NULL;
}

int main(void)
{
    mt_freed_init(RING); /* far smaller than the pushes: writers lap each other */
    pthread_t th[THREADS], rd[READERS];
    struct freed_tally tallies[READERS] = { { 0, 0 } };
    for (int r = 0; r < READERS; r++)
        pthread_create(&rd[r], NULL, reader, &tallies[r]);
    for (uintptr_t t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, worker, (void *)(t + 1));
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    struct freed_tally all = { 0, 0 };
    for (int r = 0; r < READERS; r++) {
        pthread_join(rd[r], NULL);
        all.accepted += tallies[r].accepted;
        all.torn += tallies[r].torn;
    }
    size_t want = THREADS * (OPS / 2);
    printf("tsan_tables: %zu live (want %zu), %u stacks (want 97), freed ring of %d: "
           "%" PRIu64 " records read, %" PRIu64 " torn (want 0)\n",
           mt_live_count(), want, mt_stack_count(), RING, all.accepted, all.torn);
    return mt_live_count() == want && mt_stack_count() == 97 && all.torn == 0 && all.accepted > 0
               ? 0
               : 1;
}
