/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The internal heap never waits without bound: print_trace allocates from
 * it while a thread stopped by a debugger may hold its lock. Here this test
 * thread holds the lock as such a thread would, and another thread must
 * still allocate, use and free blocks (from the spare region). */
#include "store/internal_heap.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

static void *allocate_while_held(void *arg)
{
    (void)arg;
    char *p = mt_iheap_alloc(100, 16);
    if (!p)
        return NULL;
    memset(p, 0xa5, 100);
    char *q = mt_iheap_realloc(p, 5000);
    if (!q || q[99] != (char)0xa5)
        return NULL;
    memset(q, 0x5a, 5000);
    mt_iheap_free(q);
    return mt_iheap_alloc(64, 64);
}

Test(internal_heap, a_stopped_holder_does_not_block_allocation, .timeout = 20)
{
    mt_iheap_free(mt_iheap_alloc(16, 16)); /* the range is reserved */
    cr_assert(mt_iheap_lock(), "took the heap lock");
    pthread_t t;
    void *got;
    cr_assert_eq(pthread_create(&t, NULL, allocate_while_held, NULL), 0);
    pthread_join(t, &got);
    cr_assert_not_null(got, "no block while the lock was held");
    cr_assert(mt_iheap_owns(got));
    cr_assert_eq((uintptr_t)got % 64, 0);
    cr_assert_geq(mt_iheap_usable(got), 64);
    mt_iheap_unlock();
    mt_iheap_free(got); /* a spare block: its free is a no-op */
    void *after = mt_iheap_alloc(100, 16);
    cr_assert_not_null(after, "the heap works normally once the lock is free");
    mt_iheap_free(after);
}
