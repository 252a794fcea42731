/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Thread numbers (src/store/threads.c): given in order of each thread's first
 * allocation, from 1; the first MT_THREADS_MAX are registered, later ones
 * cycle through the numbers above the registry up to what the live table
 * entry's thread bits hold, never 0 and never into the kind bits. */
#include "base/hot.h"
#include "store/live_table.h"
#include "store/threads.h"

#include <criterion/criterion.h>
#include <pthread.h>

MT_TLS mt_hot_thread mt_hot; /* mt_busy (base/hot.h), defined by base/pausable.c in the library */

Test(threads, wrap_keeps_numbers_in_the_entry_bits)
{
    cr_assert_eq(MT_THREAD_NUMBER_MAX, MT_ENTRY_THREAD_MASK);
    cr_assert_eq(mt_thread_wrap(1), 1);
    cr_assert_eq(mt_thread_wrap(MT_THREADS_MAX), MT_THREADS_MAX);
    cr_assert_eq(mt_thread_wrap(MT_THREADS_MAX + 1), MT_THREADS_MAX + 1);
    cr_assert_eq(mt_thread_wrap(MT_THREAD_NUMBER_MAX), MT_THREAD_NUMBER_MAX);
    cr_assert_eq(mt_thread_wrap((uint64_t)MT_THREAD_NUMBER_MAX + 1), MT_THREADS_MAX + 1);
    cr_assert_eq(mt_thread_wrap((uint64_t)MT_THREAD_NUMBER_MAX + 6), MT_THREADS_MAX + 6);
    /* One full cycle later, the same number again. */
    uint64_t cycle = MT_THREAD_NUMBER_MAX - MT_THREADS_MAX;
    cr_assert_eq(mt_thread_wrap((uint64_t)MT_THREAD_NUMBER_MAX + 1 + cycle), MT_THREADS_MAX + 1);
    /* Past 2^32 threads (a 32-bit counter would have come back to 0). */
    uint64_t huge[] = { 1ull << 32, (1ull << 32) + 1, (1ull << 40) + 12345, UINT64_MAX };
    for (unsigned i = 0; i < sizeof huge / sizeof huge[0]; i++) {
        uint32_t n = mt_thread_wrap(huge[i]);
        cr_assert(n > MT_THREADS_MAX && n <= MT_THREAD_NUMBER_MAX, "%llu -> %u",
                  (unsigned long long)huge[i], n);
    }
}

static void *number_of_new_thread(void *arg)
{
    *(uint32_t *)arg = mt_thread_number();
    return NULL;
}

static uint32_t new_thread_number(void)
{
    uint32_t n = 0;
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, number_of_new_thread, &n), 0);
    pthread_join(t, NULL);
    return n;
}

/* Where numbers are given: the threads after the 16,777,215th take the
 * cycle, in order, and are not registered (no name from another thread). */
Test(threads, numbers_given_past_the_bits_wrap)
{
    uint32_t first = mt_thread_number();
    cr_assert_eq(first, 1, "the first thread to ask is number 1");
    cr_assert_eq(new_thread_number(), 2);
    mt_threads_skip_to(MT_THREAD_NUMBER_MAX - 1);
    cr_assert_eq(new_thread_number(), MT_THREAD_NUMBER_MAX - 1);
    cr_assert_eq(new_thread_number(), MT_THREAD_NUMBER_MAX);
    cr_assert_eq(new_thread_number(), MT_THREADS_MAX + 1, "the 2^24th thread");
    cr_assert_eq(new_thread_number(), MT_THREADS_MAX + 2);
    cr_assert_eq(*mt_threads_highest(), 2, "threads past the registry are not registered");
    cr_assert_null(mt_threads_name(MT_THREADS_MAX + 1));
    cr_assert_eq(mt_thread_number(), first, "a thread keeps its number");
}
