/* Per-call-site counters: what the profiler build adds to every stored
 * stack, and the one place where the two builds differ on the hot path.
 * In the tracer build the counters take no space, the updates vanish and
 * site.c is not built. */
#ifndef MT_SITE_H
#define MT_SITE_H

#include "atomic.h"
#include "common.h"
#include "stack_store.h"

#include <stddef.h>
#include <stdint.h>

/* Monotonic counts since start; live = alloc - freed. Updated with relaxed
 * atomics by every thread; a reader (the profiler's walk) reads frees
 * before allocations, so live never reads below what it was. */
typedef struct {
    uint64_t alloc_bytes, alloc_blocks;
    uint64_t freed_bytes, freed_blocks;
} mt_site_counters;

#define mt_stack_site(id) ((mt_site_counters *)mt_stack_site_words(id))
_Static_assert(MT_STACK_SITE_WORDS == 0 ||
                   MT_STACK_SITE_WORDS * sizeof(uint64_t) == sizeof(mt_site_counters),
               "the stack store keeps room for exactly the counters");

#ifdef MEMTRACE_PROFILER
/* Bytes live over all sites (blocks with a stored stack), and the most it
 * has ever been. The peak is exact: every allocation that raises the total
 * past it raises it (site.c, out of line). Invariant at any quiescent
 * point: mt_site_live_total == sum over sites of alloc_bytes - freed_bytes. */
extern mt_atomic(uint64_t) mt_site_live_total MT_HIDDEN;
extern mt_atomic(uint64_t) mt_site_peak_total MT_HIDDEN;
void mt_site_new_peak(uint64_t live);

/* When the peak was last raised (CLOCK_MONOTONIC ns); a racing raise of a
 * smaller value may leave its own time. */
extern mt_atomic(uint64_t) mt_site_peak_ns MT_HIDDEN;
/* Called by the thread that raised the peak, at NOW, inside memtrace
 * (mt_busy set); set once at start-up by the profiler, which samples the
 * per-site peak profile there. NULL: nothing to do. */
void mt_site_set_peak_hook(void (*hook)(uint64_t now));
#endif

static inline void mt_site_alloc(mt_stack_id id, size_t size)
{
#ifdef MEMTRACE_PROFILER
    mt_site_counters *c = mt_stack_site(id);
    if (c) {
        mt_atomic_add_relaxed(&c->alloc_bytes, size);
        mt_atomic_add_relaxed(&c->alloc_blocks, 1);
        uint64_t live = mt_atomic_add_relaxed(&mt_site_live_total, size) + size;
        if (MT_UNLIKELY(live > mt_atomic_load_relaxed(&mt_site_peak_total)))
            mt_site_new_peak(live);
    }
#else
    (void)id;
    (void)size;
#endif
}

static inline void mt_site_free(mt_stack_id id, size_t size)
{
#ifdef MEMTRACE_PROFILER
    mt_site_counters *c = mt_stack_site(id);
    if (c) {
        mt_atomic_add_relaxed(&c->freed_bytes, size);
        mt_atomic_add_relaxed(&c->freed_blocks, 1);
        mt_atomic_sub_relaxed(&mt_site_live_total, size);
    }
#else
    (void)id;
    (void)size;
#endif
}

#endif
