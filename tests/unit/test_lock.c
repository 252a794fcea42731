/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The lock word names its holder (lock.h): a thread that fails to take a
 * held lock must leave the holder's token in it, or a fork from a signal
 * handler would skip a lock its thread does not hold (and take one it
 * does). */
#include "base/atomic.h"
#include "base/lock.h"

#include <criterion/criterion.h>
#include <pthread.h>

static mt_lock lock = MT_LOCK_INIT;

static void *try_once(void *arg)
{
    (void)arg;
    return (void *)(uintptr_t)mt_lock_try(&lock);
}

Test(lock, failed_try_keeps_the_holders_token)
{
    mt_lock_acquire(&lock);
    int mine = mt_lock_token();
    pthread_t t;
    void *took;
    cr_assert_eq(pthread_create(&t, NULL, try_once, NULL), 0);
    pthread_join(t, &took);
    cr_assert_eq((uintptr_t)took, 0, "the other thread took a held lock");
    cr_assert_eq(mt_atomic_load_relaxed(&lock.held), mine,
                 "the word holds %d, not the holder's token %d", mt_atomic_load_relaxed(&lock.held),
                 mine);
    cr_assert_not(mt_lock_acquire_unless_mine(&lock), "the holder does not see it as its own");
    mt_lock_release(&lock);
    cr_assert(mt_lock_try(&lock));
    mt_lock_release(&lock);
}

/* The same under contention: the race is a try whose first look finds the
 * lock free and whose swap finds it taken; the holder then finds another
 * token in the word when it lets go. Each holder checks, just before its
 * release, that the word still names it. */
#define ROUNDS 200000
static mt_lock contended = MT_LOCK_INIT;
static mt_atomic(unsigned long) foreign;

static void *hammer(void *arg)
{
    (void)arg;
    for (unsigned i = 0; i < ROUNDS; i++) {
        while (!mt_lock_try(&contended))
            mt_cpu_relax(); /* waiters pile up and race at each release */
        for (unsigned k = 0; k < 20; k++)
            mt_cpu_relax();
        if (mt_atomic_load_relaxed(&contended.held) != mt_lock_token())
            mt_atomic_add_relaxed(&foreign, 1);
        mt_atomic_store_release(&contended.held, 0); /* mt_lock_release, unchecked */
    }
    return NULL;
}

Test(lock, contended_word_always_names_its_holder)
{
    pthread_t t[4];
    for (unsigned i = 0; i < 4; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, hammer, NULL), 0);
    for (unsigned i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(mt_atomic_load_relaxed(&foreign), 0,
                 "%lu releases found another thread's token in the word",
                 mt_atomic_load_relaxed(&foreign));
}
