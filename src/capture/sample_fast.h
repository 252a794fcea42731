/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sample mode's fast path: the entry points' first test, taken
 * before everything else they do (the *_fast_first functions at the end,
 * which capture/interposed.def's malloc, free, calloc and C++ operators
 * call ahead of malloc.c's and cxx.c's entry points).
 *
 * An allocation whose block will not be sampled is made here, with its
 * shadow mark or its trailer (sample.h), when nothing else needs the
 * general path:
 *   - the thread's sample countdown (mt_sample_me.left) stays above zero
 *     after SIZE: the block is not sampled. The countdown is above zero
 *     only in sample mode, after the thread's first draw: it is the test
 *     that sample mode is on (sample.c alone writes it, and only from the
 *     sample-mode paths);
 *     Compared unsigned, the countdown never being negative: SIZE is then
 *     below 2^63, so SIZE + MT_TRAILER cannot overflow (the slack's fit is
 *     mt_fast_trail_leaf's test);
 *   - the thread is not inside memtrace (mt_busy) and in no pass-through
 *     scope (mt_passthrough, raised also through a fork window);
 *   - the phase is READY (not start-up, paused, stopped or standing aside);
 *   - the guard pages' countdown (mt_guard_left) does not run out here.
 * Each test is one thread-local or read-mostly load; the two countdowns
 * are consumed only once every test passed, so that a call that falls
 * through to the general path draws exactly what it would have drawn
 * without the fast path (a seeded run samples the same blocks).
 *
 * A free takes the fast path when its block has a matching shadow mark or
 * trailer
 * and the general path would do nothing more than mt_sample_free: sample
 * mode with glibc's allocator next, no pass-through scope, and PTR neither
 * the internal heap's nor the guard pool's (their blocks have no glibc
 * header to read; they never have a shadow mark, so the shadow's byte is
 * read before those tests). The phase is not tested: marks and trailers
 * are made only once READY, and the general path frees such a block the
 * same way in every phase from READY on (mt_release's mt_sample_free).
 * Everything else (a sampled block, a bad free, NULL, a free whose count
 * would flush the live bytes) goes on to the general path, which tests
 * again what it needs.
 *
 * Both fast paths make no call but the next allocator's (the free is a
 * leaf that tail-calls the next free; the malloc keeps one register across
 * its call): what would need a call is refused by the try forms of the
 * counts (mt_tag_alloc_try, mt_sample_free_try), changing nothing, and
 * taken by the general form. */
#ifndef MT_SAMPLE_FAST_H
#define MT_SAMPLE_FAST_H

#include "base/atomic.h"
#include "base/common.h"
#include "base/config.h"
#include "base/reentry.h"
#include "capture/entry_points.h"
#include "capture/guard.h"
#include "capture/state.h"
#include "capture/sample.h"
#include "store/internal_heap.h"
#include "tags/tags.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when an allocation of SIZE bytes takes the fast path; the two
 * countdowns are then consumed. */
static inline bool mt_fast_alloc_ok(size_t size)
{
    uint64_t left = (uint64_t)mt_sample_me.left; /* >= 0 */
    if (MT_UNLIKELY(size >= left))               /* sampled, or no draw yet (0) */
        return false;
    if (MT_UNLIKELY(mt_busy_or_passthrough))
        return false;
    if (MT_UNLIKELY(mt_atomic_load_acquire(&mt_phase) != MT_READY))
        return false;
    uint32_t guard;
    if (MT_UNLIKELY(__builtin_sub_overflow(mt_guard_left, 1u, &guard))) /* it was 0 */
        return false;
    mt_guard_left = guard;
    mt_sample_me.left = (int64_t)(left - size);
    return true;
}

/* P (NULL when the next allocator failed), a SIZE-byte block of family
 * KIND the fast path allocated: its trailer written, counted in its tag;
 * recorded as a sample when its slack does not fit the trailer. The
 * general form of mt_fast_trail (out of line, cold). */
MT_COLD void *mt_fast_trail_call(void *p, size_t size, unsigned kind);

/* mt_fast_trail_call without a call: true when P's trailer is written and
 * counted; false, with nothing changed, when that needs a call or more
 * (P NULL, an allocator other than glibc, an mmapped chunk, a slack that
 * does not fit, the thread's tag root to make, a live-bytes flush). P is a
 * block glibc has just handed out: its header word needs none of
 * mt_glibc_usable's checks. */
static inline __attribute__((always_inline)) bool mt_fast_trail_leaf(void *p, size_t size,
                                                                     unsigned kind)
{
    if (MT_UNLIKELY(p == NULL) || MT_UNLIKELY(!mt_sample_glibc))
        return false;
    size_t h = ((const size_t *)p)[-1];
    if (MT_UNLIKELY(h & 2)) /* mmapped: two header words */
        return false;
    size_t u = (h & ~(size_t)7) - 8;
    uint32_t id;
    if (MT_UNLIKELY(!mt_trailer_fits(u, size)) || MT_UNLIKELY(!mt_tag_alloc_try(size, &id)))
        return false;
    mt_trailer_write(p, u, size, id, kind);
    return true;
}

/* P (NULL when the next allocator failed), a SIZE-byte block of family
 * KIND the fast path allocated, as mt_fast_trail_call leaves it. Its
 * usual case makes no call: a caller that makes the next allocator's call
 * keeps only SIZE across it, and tail-calls the general form. */
static inline __attribute__((always_inline)) void *mt_fast_trail(void *p, size_t size,
                                                                 unsigned kind)
{
    if (MT_LIKELY(mt_fast_trail_leaf(p, size, kind)))
        return p;
    return mt_fast_trail_call(p, size, kind);
}

/* P (NULL when the next allocator failed), a SIZE-byte block of family
 * KIND the fast path allocated unpadded (mt_shadow_wanted said so): its
 * shadow mark written, counted live; recorded as a sample when it cannot
 * be shadowed. The general form of mt_fast_shadow (out of line, cold). */
MT_COLD void *mt_fast_shadow_call(void *p, size_t size, unsigned kind);

/* mt_fast_trail for a block allocated unpadded: its usual case makes no
 * call (mt_shadow_try). */
static inline __attribute__((always_inline)) void *mt_fast_shadow(void *p, size_t size,
                                                                  unsigned kind)
{
    if (MT_LIKELY(p != NULL) && MT_LIKELY(mt_shadow_try(p, size)))
        return p;
    return mt_fast_shadow_call(p, size, kind);
}

/* True when the next operators new and delete in their plain, nothrow and
 * sized forms are libstdc++'s and the next malloc glibc's: libstdc++'s new
 * is malloc (of 1 byte for 0) with, when it fails, the new_handler loop or
 * std::bad_alloc; its delete is free. False outside sample mode. Set by mt_sample_ext_found, once
 * the next definitions are known (before mt_ext_ready); never cleared. */
extern bool mt_sample_cxx MT_HIDDEN;

/* Sets mt_sample_cxx from mt_ext (called by mt_ext_lookup). */
void mt_sample_ext_found(void);

/* malloc's and calloc's fast path once mt_fast_alloc_ok said yes (out of
 * line, so that an entry point that goes on to the general path does so
 * by a bare jump, with no frame to set up). */
void *mt_fast_malloc(size_t size);
void *mt_fast_calloc(size_t total);

/* True when the free of PTR was made here (see above): a leaf that
 * tail-calls the next free. */
static inline __attribute__((always_inline)) bool mt_fast_free(void *ptr)
{
    /* The usual case first: tags not in use, the block shadowed. The limit
     * above 0 says sample mode and glibc next at once; no test of NULL, of
     * the internal heap or of the guard pool is needed before the byte's:
     * none of their bytes is ever a mark (sample.h). */
    if (MT_LIKELY(mt_atomic_load_relaxed(&mt_shadow_limit) != 0)) {
        uint8_t *s = mt_shadow_at((uintptr_t)ptr), *at, mark;
        size_t size;
        if (MT_LIKELY(s != NULL) && MT_LIKELY(mt_shadow_match(ptr, s, &at, &size, &mark))) {
            if (MT_UNLIKELY(mt_passthrough) || MT_UNLIKELY(!mt_live_free_try(size)))
                return false;
            __atomic_store_n(at, 0, __ATOMIC_RELAXED);
            mt_real.next_free(ptr);
            return true;
        }
    }
    /* NULL next: C++ deletes it often, and the general path's test of it
     * is cheap. */
    if (MT_UNLIKELY(!mt_sample_glibc) || MT_UNLIKELY(ptr == NULL))
        return false;
    if (MT_UNLIKELY(mt_iheap_owns(ptr) || mt_guard_owns(ptr)))
        return false;
    if (MT_UNLIKELY(mt_passthrough))
        return false;
    if (!mt_sample_free_try(ptr))
        return false;
    mt_real.next_free(ptr);
    return true;
}

/* operator new of SIZE bytes, family KIND, in one of the forms mt_sample_cxx
 * covers: the block, or NULL when the general path must make the call (also
 * when malloc failed here: the next operator new's call there runs the
 * new_handler loop or throws; the countdowns were consumed twice then). */
static inline __attribute__((always_inline)) void *mt_fast_new(size_t size, unsigned kind)
{
    if (MT_LIKELY(mt_sample_cxx) && mt_fast_alloc_ok(size)) {
        if (MT_LIKELY(mt_shadow_wanted(size)))
            return mt_fast_shadow(mt_real.next_malloc(size), size, kind);
        return mt_fast_trail(mt_real.next_malloc(size + MT_TRAILER), size, kind);
    }
    return NULL;
}

/* operator delete of PTR in one of the forms mt_sample_cxx covers: true
 * when the free was made here. */
static inline __attribute__((always_inline)) bool mt_fast_delete(void *ptr)
{
    return MT_LIKELY(mt_sample_cxx) && mt_fast_free(ptr);
}

/* ---- the interposed names' bodies: the fast path, else the general one */

static inline __attribute__((always_inline)) void *mt_malloc_fast_first(size_t size)
{
    if (MT_LIKELY(mt_fast_alloc_ok(size)))
        return mt_fast_malloc(size);
    return mt_malloc(size);
}

static inline __attribute__((always_inline)) void mt_free_fast_first(void *ptr)
{
    if (MT_LIKELY(mt_fast_free(ptr)))
        return;
    mt_free(ptr);
}

static inline __attribute__((always_inline)) void *mt_calloc_fast_first(size_t n, size_t size)
{
    size_t total;
    if (MT_LIKELY(!__builtin_mul_overflow(n, size, &total) && mt_fast_alloc_ok(total)))
        return mt_fast_calloc(total);
    return mt_calloc(n, size);
}

/* True when realloc(PTR, SIZE) may take the fast path (mt_fast_realloc):
 * the tests of realloc's general path that send it to mt_sample_realloc
 * with a block that will not be sampled and goes in the shadow, PTR's
 * own shadow mark aside (which PTR NULL, or of the internal heap or the
 * guard pool, never has: mt_fast_realloc sends them on). Nothing is
 * consumed: the guard pages' countdown never is by a realloc. */
static inline __attribute__((always_inline)) bool mt_fast_realloc_ok(void *ptr, size_t size)
{
    (void)ptr; /* NULL, the internal heap's, the guard pool's: no mark (sample.h) */
    /* the limit above 0 says sample mode with glibc next */
    if (MT_UNLIKELY(size == 0) || MT_UNLIKELY(!mt_shadow_wanted(size)))
        return false;
    if (MT_UNLIKELY(size >= (uint64_t)mt_sample_me.left)) /* sampled, or no draw yet */
        return false;
    if (MT_UNLIKELY(mt_busy_or_passthrough | (uint64_t)(unsigned)mt_held))
        return false;
    return MT_LIKELY(mt_atomic_load_acquire(&mt_phase) == MT_READY);
}

/* realloc(PTR, SIZE) once mt_fast_realloc_ok said yes: what
 * mt_sample_realloc does for a shadowed block whose new block is not
 * sampled (the same draw, the same counts, the same marks), without the
 * general path's tests; a PTR without a shadow mark goes on to mt_realloc
 * with nothing consumed. Out of line, as mt_fast_malloc. */
void *mt_fast_realloc(void *ptr, size_t size);

static inline __attribute__((always_inline)) void *mt_realloc_fast_first(void *ptr, size_t size)
{
    if (MT_LIKELY(mt_fast_realloc_ok(ptr, size)))
        return mt_fast_realloc(ptr, size);
    return mt_realloc(ptr, size);
}

/* operator new's forms without an alignment; OP as mt_new's. */
static inline __attribute__((always_inline)) void *mt_new_fast_first(size_t size,
                                                                     const void *nothrow,
                                                                     unsigned op)
{
    void *p = mt_fast_new(size, MT_OP_KIND(op));
    return p ? p : mt_new(size, 0, nothrow, op);
}

/* operator delete's forms without an alignment; OP as mt_delete's. */
static inline __attribute__((always_inline)) void mt_delete_fast_first(void *ptr, size_t size,
                                                                       const void *nothrow,
                                                                       unsigned op)
{
    if (!mt_fast_delete(ptr))
        mt_delete(ptr, size, 0, nothrow, op);
}

#endif
