/* Per-call-site counters: what the profiler build adds to every stored
 * stack, and the one place where the two builds differ on the hot path.
 * In the tracer build the counters take no space and the updates vanish. */
#ifndef MT_SITE_H
#define MT_SITE_H

#include "common.h"
#include "stack_store.h"

#include <stddef.h>
#include <stdint.h>

/* Monotonic counts since start; live = alloc - freed. */
typedef struct {
    uint64_t alloc_bytes, alloc_blocks;
    uint64_t freed_bytes, freed_blocks;
} mt_site_counters;

#ifdef MEMTRACE_PROFILER
#define MT_SITE_WORDS (sizeof(mt_site_counters) / sizeof(uint64_t))
/* Bytes live over all sites (blocks with a stored stack), and the most it
 * has ever been. The peak is exact: every allocation that raises the total
 * past it raises it (profiler.c, out of line). Invariant at any quiescent
 * point: mt_site_live_total == sum over sites of alloc_bytes - freed_bytes. */
extern uint64_t mt_site_live_total;
extern uint64_t mt_site_peak_total;
void mt_site_new_peak(uint64_t live);
#else
#define MT_SITE_WORDS 0
#endif

static inline void mt_site_alloc(mt_stack_id id, size_t size)
{
#ifdef MEMTRACE_PROFILER
    mt_site_counters *c = mt_stack_site(id);
    if (c) {
        __atomic_fetch_add(&c->alloc_bytes, size, __ATOMIC_RELAXED);
        __atomic_fetch_add(&c->alloc_blocks, 1, __ATOMIC_RELAXED);
        uint64_t live = __atomic_add_fetch(&mt_site_live_total, size, __ATOMIC_RELAXED);
        if (MT_UNLIKELY(live > __atomic_load_n(&mt_site_peak_total, __ATOMIC_RELAXED)))
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
        __atomic_fetch_add(&c->freed_bytes, size, __ATOMIC_RELAXED);
        __atomic_fetch_add(&c->freed_blocks, 1, __ATOMIC_RELAXED);
        __atomic_fetch_sub(&mt_site_live_total, size, __ATOMIC_RELAXED);
    }
#else
    (void)id;
    (void)size;
#endif
}

#endif
