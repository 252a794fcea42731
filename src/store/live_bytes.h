/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The exact live total and peak: bytes of the traced blocks,
 * sampled or not, counted on every allocation and free (tags/tags.h's
 * mt_tag_alloc and mt_tag_free, through which every traced block passes,
 * call these), so that in sample mode the totals are not estimates.
 *
 * Each thread counts in its own thread-local word the bytes it allocated
 * less those it freed since its last flush (DELTA: a free counts in the
 * freeing thread, so the sum over threads is exact), and the highest DELTA
 * reached since then (HI). A flush, when DELTA leaves
 * (-MT_LIVE_FLUSH, MT_LIVE_FLUSH), adds DELTA to the shared total and
 * raises the shared peak to (the total before the add) + HI. Hence:
 *   - the total is exact but for the threads' unflushed deltas: each less
 *     than MT_LIVE_FLUSH in size; mt_live_read flushes the caller's first,
 *     and a thread's is flushed when it ends (a thread-specific key's
 *     destructor, registered on the thread's first sample draw or first
 *     free, whichever comes first: a thread that only frees flushes too);
 *   - the peak is exact for a single-threaded program, and within
 *     MT_LIVE_FLUSH bytes per other thread allocating at the time.
 * The hot path's cost: a thread-local add, a compare and a store; the
 * shared line is written once per MT_LIVE_FLUSH bytes of net growth or
 * shrinkage of a thread. Sizes are the sizes asked, as the records'. */
#ifndef MT_LIVE_BYTES_H
#define MT_LIVE_BYTES_H

#include "base/common.h"
#include "base/hot.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MT_LIVE_FLUSH ((int64_t)256 * 1024)

/* mt_live_me, the thread's mt_live_thread: a member of base/hot.h's mt_hot. */

/* Adds the calling thread's delta to the shared total and peak. */
void mt_live_flush(void);

/* mt_live_alloc and mt_live_free without the flush's call, for a caller
 * that makes no call on its fast path (capture/sample_fast.h): false,
 * with nothing changed, when this count would flush (the caller then
 * calls mt_live_alloc or mt_live_free, which count it with the flush). */
static inline bool mt_live_alloc_try(size_t size)
{
    int64_t d = mt_live_me.delta + (int64_t)size;
    if (MT_UNLIKELY(d > mt_live_me.hi)) {
        if (MT_UNLIKELY(d >= MT_LIVE_FLUSH))
            return false;
        mt_live_me.hi = d;
    }
    mt_live_me.delta = d;
    return true;
}

static inline bool mt_live_free_try(size_t size)
{
    int64_t d = mt_live_me.delta - (int64_t)size;
    if (MT_UNLIKELY(d <= mt_live_me.lo))
        return false;
    mt_live_me.delta = d;
    return true;
}

static inline void mt_live_alloc(size_t size)
{
    if (MT_UNLIKELY(!mt_live_alloc_try(size))) {
        mt_live_me.delta += (int64_t)size;
        mt_live_me.hi = mt_live_me.delta;
        mt_live_flush();
    }
}

/* mt_live_free's other case: the flush, or the thread's first free before
 * any draw (its end's flush registered first). */
void mt_live_free_slow(size_t size);

static inline void mt_live_free(size_t size)
{
    if (MT_UNLIKELY(!mt_live_free_try(size)))
        mt_live_free_slow(size);
}

/* The shared total and peak after the caller's flush (0 for a total
 * that the threads' unflushed frees would make negative). When the peak
 * was reached is not kept: a flush can come long after. */
void mt_live_read(uint64_t *live, uint64_t *peak);

/* The calling thread's delta is flushed when it ends, too (once per
 * thread; no heap but the internal heap's). */
void mt_live_thread_start(void);

/* For the state descriptor: the shared total's and peak's words. */
const int64_t *mt_live_total_word(void);
const int64_t *mt_live_peak_word(void);

#endif
