/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The thread-local words every malloc and free reads, in one struct.
 *
 * memtrace is a shared library built -ftls-model=initial-exec: each
 * thread-local variable costs its own GOT load (its offset from the
 * thread pointer) before its first use in a function, whatever the loads
 * after. Kept in one struct, the words sample mode's fast path reads
 * (capture/sample_fast.h: the sample countdown, the inside-memtrace flag,
 * the pass-through count, the guard pages' countdown, the live bytes'
 * delta; with tag scopes, the current and root nodes) cost one GOT load a
 * function. The first line holds what every fast-path call reads; the
 * tag scopes' words, read only once tags are in use, start the second.
 *
 * Each word keeps its own name (a macro for the member) and its own
 * contract, stated where its name was declared: base/reentry.h (mt_busy),
 * capture/state.h (mt_passthrough, mt_held), capture/guard.h (mt_guard_left),
 * capture/sample.h (mt_sample_me), store/live_bytes.h (mt_live_me),
 * tags/tags.h (mt_tag_cur, mt_tag_root). The
 * struct is defined in base/pausable.c, below every layer that uses it. */
#ifndef MT_HOT_H
#define MT_HOT_H

#include "base/common.h"

#include <stdint.h>

typedef struct {
    int64_t delta; /* bytes allocated less bytes freed since the last flush */
    int64_t hi;    /* the highest delta since the last flush, >= 0 */
    int64_t lo;    /* -MT_LIVE_FLUSH once the thread's end flushes it, else 0:
                    * a free below it takes mt_live_free_slow */
} mt_live_thread;

typedef struct {
    int64_t left; /* bytes before the next sample; 0 until the first draw,
                   * never negative (sample_fast.h compares it unsigned) */
    uint64_t rng; /* xorshift64* state; 0 until the thread's first draw */
    int pending;  /* MT_SAMPLE_*: mt_sample_padded's last decision */
} mt_sample_thread;

typedef struct {
    mt_sample_thread sample;
    union {
        struct {
            int busy;
            int passthrough;
        };
        uint64_t inside; /* mt_busy | mt_passthrough in one load: 0 when both are */
    };
    int held;
    uint32_t guard_left;
    mt_live_thread live;
    /* tags/tags.h's: this thread's current node and root, 0 = none yet */
    uint32_t tag_cur __attribute__((aligned(64)));
    uint32_t tag_root;
} __attribute__((aligned(64))) mt_hot_thread;

extern MT_TLS mt_hot_thread mt_hot MT_HIDDEN;

#define mt_busy (mt_hot.busy)
#define mt_passthrough (mt_hot.passthrough)
#define mt_guard_left (mt_hot.guard_left)
#define mt_held (mt_hot.held)
#define mt_sample_me (mt_hot.sample)
/* Not 0 when mt_busy or mt_passthrough is not (sample_fast.h's one test). */
#define mt_busy_or_passthrough (mt_hot.inside)
#define mt_live_me (mt_hot.live)
#define mt_tag_cur (mt_hot.tag_cur)
#define mt_tag_root (mt_hot.tag_root)

#endif
