/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The exact live total and peak (live_bytes.h). */
#include "store/live_bytes.h"

#include "base/atomic.h"
#include "base/reentry.h"

#include <pthread.h>
#include <stdbool.h>


/* The flushed total and the peak: a line of their own, written once per
 * flush. */
static struct {
    mt_atomic(int64_t) total, peak;
} __attribute__((aligned(MT_CACHELINE))) shared;

void mt_live_flush(void)
{
    int64_t d = mt_live_me.delta, hi = mt_live_me.hi;
    mt_live_me.delta = 0;
    mt_live_me.hi = 0;
    int64_t before = mt_atomic_add_relaxed(&shared.total, d);
    int64_t top = before + (hi > d ? hi : d);
    int64_t peak = mt_atomic_load_relaxed(&shared.peak);
    while (peak < top && !mt_atomic_cas_weak_relaxed(&shared.peak, &peak, top)) {
    }
}

void mt_live_read(uint64_t *live, uint64_t *peak)
{
    mt_live_flush();
    int64_t t = mt_atomic_load_relaxed(&shared.total), p = mt_atomic_load_relaxed(&shared.peak);
    *live = t > 0 ? (uint64_t)t : 0;
    *peak = p > t ? (uint64_t)p : *live;
}

static pthread_key_t key;
static int key_made; /* 1 made, -1 failed; pthread_once below */
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void thread_ends(void *unused)
{
    (void)unused;
    mt_live_flush();
}

static void make_key(void)
{
    key_made = pthread_key_create(&key, thread_ends) == 0 ? 1 : -1;
}

void mt_live_free_slow(size_t size)
{
    if (mt_live_me.lo == 0)
        mt_live_thread_start();
    mt_live_me.delta -= (int64_t)size;
    if (mt_live_me.delta <= -MT_LIVE_FLUSH)
        mt_live_flush();
}

void mt_live_thread_start(void)
{
    mt_live_me.lo = -MT_LIVE_FLUSH; /* once, even if the key cannot be made */
    int was = mt_enter();
    pthread_once(&key_once, make_key);
    if (key_made == 1)
        pthread_setspecific(key, &mt_live_me);
    mt_leave(was);
}

const int64_t *mt_live_total_word(void)
{
    return (const int64_t *)&shared.total;
}

const int64_t *mt_live_peak_word(void)
{
    return (const int64_t *)&shared.peak;
}
