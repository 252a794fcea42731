/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The per-thread rings of the timeline (timeline/ only): one producer,
 * the owning thread (append.c), which writes records and publishes HEAD; one
 * consumer, the drain (the writer thread, or an appender whose ring is
 * full while no writer runs), which reads records up to HEAD and
 * publishes TAIL (drain.h). HEAD and TAIL count words ever written and
 * read; a ring holds HEAD - TAIL <= MT_TL_RING_WORDS words. A record is MT_TL_ALLOC_WORDS
 * or MT_TL_FREE_WORDS words: word 0 its tag (top byte) and time (ns since
 * the start, low 56 bits), then its address, and for an allocation its
 * size and stack. */
#ifndef MT_TL_RING_H
#define MT_TL_RING_H

#include "base/atomic.h"
#include "base/common.h"
#include "store/temporary.h"

#include <stdbool.h>
#include <stdint.h>

#define MT_TL_RING_WORDS ((uint64_t)1 << 16)
#define MT_TL_TIME_MASK ((UINT64_C(1) << 56) - 1)
#define MT_TL_TAG_SHIFT 56
#define MT_TL_ALLOC_WORDS 4
#define MT_TL_FREE_WORDS 2

typedef struct mt_tl_ring {
    struct mt_tl_ring *next; /* all rings, newest first; set before it is listed */
    uint32_t thread;         /* memtrace's number of the owner */
    mt_atomic(int) done;     /* the owner has exited: freed once drained (release) */
    /* The drain's alone, with culling (drain.c, under its lock): the
     * temporary rule's latest kind over all this thread's events, culled
     * ones included, and whether the file's reader may not know it (a
     * culled event, or an allocation still held back, since the last F). */
    mt_temp_state temp;
    bool temp_hidden;
    mt_atomic(uint64_t) head __attribute__((aligned(MT_CACHELINE))); /* owner: release */
    uint64_t tail_seen;                                              /* owner's copy of tail */
    mt_atomic(uint64_t) tail __attribute__((aligned(MT_CACHELINE))); /* drain: release */
    uint64_t words[MT_TL_RING_WORDS] __attribute__((aligned(MT_CACHELINE)));
} mt_tl_ring;

#endif
