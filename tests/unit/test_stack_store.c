/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Stack store: identical stacks share an id, different ones do not, frames
 * read back unchanged, across chunk boundaries and from many threads. */
#include "store/stack_store.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

Test(stack_store, identical_stacks_share_an_id)
{
    uintptr_t a[] = { 0x401000, 0x402000, 0x403000 };
    uintptr_t b[] = { 0x401000, 0x402000, 0x403000 };
    mt_stack_id ia = mt_stack_intern(a, 3), ib = mt_stack_intern(b, 3);
    cr_assert_neq(ia, 0);
    cr_assert_eq(ia, ib);
    cr_assert_eq(mt_stack_count(), 1);
}

Test(stack_store, different_stacks_differ)
{
    uintptr_t a[] = { 0x401000, 0x402000, 0x403000 };
    uintptr_t c[] = { 0x401000, 0x402000, 0x403001 };
    mt_stack_id ia = mt_stack_intern(a, 3);
    cr_assert_neq(ia, mt_stack_intern(c, 3));
    cr_assert_neq(ia, mt_stack_intern(a, 2), "a prefix is another stack");
    cr_assert_eq(mt_stack_count(), 3);
}

Test(stack_store, frames_read_back)
{
    uintptr_t a[] = { 11, 22, 33, 44 };
    const uintptr_t *f;
    mt_stack_id id = mt_stack_intern(a, 4);
    cr_assert_eq(mt_stack_get(id, &f), 4);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(f[i], a[i]);
    cr_assert_eq(mt_stack_get(0, &f), 0, "id 0 is no stack");
}

/* 100,000 stacks of 16 frames fill several 4 MiB chunks and grow the index
 * many times; every one must still be found and read back. */
Test(stack_store, many_stacks_across_chunks)
{
    enum { N = 100000, D = 16 };
    static mt_stack_id ids[N];
    uintptr_t f[D];
    size_t wrong = 0;
    for (int i = 0; i < N; i++) {
        for (int d = 0; d < D; d++)
            f[d] = (uintptr_t)i * 1000 + d;
        ids[i] = mt_stack_intern(f, D);
        wrong += ids[i] == 0;
    }
    cr_assert_eq(wrong, 0);
    cr_assert_eq(mt_stack_count(), N);
    for (int i = 0; i < N; i++) {
        for (int d = 0; d < D; d++)
            f[d] = (uintptr_t)i * 1000 + d;
        const uintptr_t *g;
        wrong += mt_stack_intern(f, D) != ids[i] || mt_stack_get(ids[i], &g) != D ||
                 memcmp(g, f, sizeof f) != 0;
    }
    cr_assert_eq(wrong, 0, "%zu stacks not found again or read back wrong", wrong);
}

enum { THREADS = 4, STACKS = 20000 };
static mt_stack_id seen[THREADS][STACKS];

static void *interner(void *arg)
{
    long t = (long)arg;
    for (int i = 0; i < STACKS; i++) {
        int k = (t % 2) ? STACKS - 1 - i : i; /* meet in the middle */
        uintptr_t f[3] = { 0x1000, (uintptr_t)k, 0x2000 };
        seen[t][k] = mt_stack_intern(f, 3);
    }
    return NULL;
}

Test(stack_store, threads_agree_on_ids)
{
    pthread_t th[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, interner, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    cr_assert_eq(mt_stack_count(), STACKS);
    size_t split = 0;
    for (int k = 0; k < STACKS; k++)
        for (int t = 1; t < THREADS; t++)
            split += seen[t][k] != seen[0][k] || seen[t][k] == 0;
    cr_assert_eq(split, 0, "%zu stacks got two ids", split);
}

static unsigned visited, visited_depth;

static void visit(mt_stack_id id, const uintptr_t *frames, unsigned depth, void *ctx)
{
    (void)ctx;
    const uintptr_t *f;
    if (mt_stack_get(id, &f) == depth && f == frames)
        visited++;
    visited_depth += depth;
}

Test(stack_store, foreach_visits_every_stack_once)
{
    uintptr_t f[40];
    unsigned total = 0;
    for (unsigned i = 0; i < 30000; i++) {
        unsigned d = 1 + i % 40;
        for (unsigned k = 0; k < d; k++)
            f[k] = i * 64 + k;
        mt_stack_intern(f, d);
        total += d;
    }
    mt_stack_foreach(visit, NULL);
    cr_assert_eq(visited, 30000);
    cr_assert_eq(visited_depth, total);
}

/* A walk resumed at its cursor: batches of stacks stored between walks,
 * across chunk ends, each stack offered in the order stored, once accepted
 * never again, and a refused one offered again by the next walk. */
enum { RESUMED = 60000 };
static mt_stack_id resumed_ids[RESUMED];
static unsigned resumed_next, resumed_wrong, resumed_refusals;

static bool take(mt_stack_id id, const uintptr_t *frames, unsigned depth, void *ctx)
{
    (void)frames;
    (void)depth;
    unsigned *stored = ctx;
    /* Refuse every 7,000th stack the first time it is offered. */
    if (resumed_next % 7000 == 6999 && resumed_refusals < resumed_next / 7000 + 1) {
        resumed_refusals++;
        return false;
    }
    resumed_wrong += resumed_next >= *stored || id != resumed_ids[resumed_next];
    resumed_next++;
    return true;
}

Test(stack_store, foreach_new_resumes_where_it_stopped)
{
    uintptr_t f[40];
    mt_stack_cursor at = { 0, 0 };
    unsigned stored = 0, walks = 0;
    while (stored < RESUMED) {
        unsigned batch = 1 + (stored * 2654435761u) % 5000;
        for (unsigned b = 0; b < batch && stored < RESUMED; b++, stored++) {
            unsigned d = 1 + stored % 40;
            for (unsigned k = 0; k < d; k++)
                f[k] = stored * 64 + k;
            resumed_ids[stored] = mt_stack_intern(f, d);
        }
        mt_stack_foreach_new(&at, take, &stored);
        walks++;
    }
    while (resumed_next < RESUMED && walks++ < 100)
        mt_stack_foreach_new(&at, take, &stored);
    cr_assert_eq(resumed_refusals, RESUMED / 7000);
    cr_assert_eq(resumed_wrong, 0, "%u stacks offered out of order", resumed_wrong);
    cr_assert_eq(resumed_next, RESUMED);
    mt_stack_foreach_new(&at, take, &stored);
    cr_assert_eq(resumed_next, RESUMED, "a walk with nothing new offers nothing");
}
