/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What a temporary allocation is: the one rule shared by the profiler
 * (store/site.h, per thread in TLS) and the timeline's readers
 * (tools/export/replay.c: the JSON and so the page; heaptrack.c writes
 * the events so that heaptrack_print's own count is this one).
 *
 * heaptrack's rule (src/analyze/accumulatedtracedata.cpp): every
 * allocation is of a kind, its (size, stack); an allocation makes its
 * kind the latest; a free is a temporary allocation when the freed block's
 * kind is the latest, and any free then clears the latest. A realloc is
 * the free of the old block and then the allocation of the new one (in
 * place or not). So "freed with no other allocation or free in between",
 * except that the kind, not the block, is compared: malloc a; malloc b;
 * free a, with a and b of one size and stack, is a temporary allocation
 * of a (heaptrack counts it; memtrace does too).
 *
 * Where memtrace differs from heaptrack, on purpose:
 *  - per thread: heaptrack applies the rule to its one stream of all
 *    threads' events (in the order its lock gave them); memtrace to each
 *    thread's own events, so the count does not depend on the schedule;
 *  - heaptrack clears "the latest" to kind number 0, which is also the
 *    number of the program's first kind: a free of that kind right after
 *    another free counts as temporary there (usually one, at exit);
 *  - heaptrack does not see what it cannot hook (realloc(p, 0) that
 *    frees, blocks allocated by its own startup's libstdc++).
 * On one thread and the same calls the counts are equal (tests/e2e/
 * temporaries.sh checks it against heaptrack's runs).
 *
 * A plain struct, no locks: each instance is one thread's (or one
 * reader's per thread). */
#ifndef MT_TEMPORARY_H
#define MT_TEMPORARY_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    uint64_t size; /* the latest allocation's kind, when armed */
    uint32_t stack;
    bool armed; /* false: no allocation since the latest free */
} mt_temp_state;

/* An allocation of SIZE bytes at STACK: its kind is now the latest. */
static inline void mt_temp_alloc(mt_temp_state *st, uint32_t stack, uint64_t size)
{
    st->size = size;
    st->stack = stack;
    st->armed = true;
}

/* A free of a block of SIZE bytes at STACK: whether it ends a temporary
 * allocation. The latest kind is cleared either way. */
static inline bool mt_temp_free(mt_temp_state *st, uint32_t stack, uint64_t size)
{
    bool temp = st->armed && st->stack == stack && st->size == size;
    st->armed = false;
    return temp;
}

#endif
