/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Per-call-site counters: what the profiler build adds to every stored
 * stack, and the one place where the two builds differ on the hot path.
 * In the tracer build the counters take no space, the updates vanish and
 * site.c is not built. */
#ifndef MT_SITE_H
#define MT_SITE_H

#include "base/atomic.h"
#include "base/common.h"
#include "store/sample_weight.h"
#include "store/stack_store.h"
#include "store/temporary.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Monotonic counts since start; live = alloc - freed. One set per site in
 * each table (mt_site_table below): a thread's own, written by that thread
 * alone with plain adds, or the shared one, with relaxed atomics; a reader
 * sums them (mt_site_read), frees before allocations, so live never reads
 * below what it was.
 *
 * temp_blocks: the site's temporary allocations, by the rule of
 * store/temporary.h (heaptrack's, per thread), which the timeline's
 * readers share.
 *
 * The peak snapshot (copy on write by epoch): peak_bytes and peak_blocks
 * hold the site's live bytes and blocks at the moment of the global peak
 * when peak_epoch == mt_site_peak_epoch; otherwise the site has not changed
 * since that moment and its live counts are its peak counts. Each new
 * global peak bumps the epoch; the first change to a site after a bump
 * first saves its live counts (its value at the peak) and then tags them
 * with the epoch (release; pairs with the acquire in mt_site_peak_of).
 * One thread saves per epoch: it claims the site by compare-and-swap of
 * peak_epoch to the epoch with MT_SITE_PEAK_SAVING set, after reading the
 * counts (site.c's mt_site_save_peak). In a thread's own table the owner
 * alone saves, with no claim (mt_site_own_save). */
typedef struct {
    uint64_t alloc_bytes, alloc_blocks;
    uint64_t freed_bytes, freed_blocks;
    uint64_t temp_blocks;
    uint64_t peak_epoch;
    uint64_t peak_bytes, peak_blocks;
} mt_site_counters;

/* Where the counters live. Every thread that changes a site's counts
 * writes them in its own table (mt_site_table), on lines no other thread
 * writes, with plain adds (no locked instruction); a report sums the
 * tables (mt_site_read). A table is a thread's until the thread ends, then
 * free for the next thread that starts: its counts stay in it, so nothing
 * moves and nothing is counted twice or lost. A thread that has no table
 * (its exit destructor ran, or no memory for one) updates the shared table
 * with atomics, as every thread did before.
 *
 * An entry is found by the site's number (its stack's ordinal in the stack
 * store, mt_stack_site_number): chunk N >> MT_SITE_CHUNK_BITS, slot
 * N & MT_SITE_CHUNK_MASK; chunks are mapped (without reserve) when first
 * used and never moved, so a reader needs no lock. */
#define MT_SITE_CHUNK_BITS 16
#define MT_SITE_CHUNK_MASK ((UINT32_C(1) << MT_SITE_CHUNK_BITS) - 1)
#define MT_SITE_CHUNKS (UINT32_C(1) << 15) /* 2^31 sites: more than the store can hold */
typedef struct mt_site_table {
    mt_atomic(int) owner;       /* the writer's lock token; 0 = free */
    struct mt_site_table *next; /* set before the table is published, never after */
    mt_atomic(mt_site_counters *) chunks[MT_SITE_CHUNKS];
} mt_site_table;
_Static_assert(MT_STACK_SITE_WORDS == 0 || MT_STACK_SITE_WORDS == 1,
               "the stack store keeps the site's number");

/* In peak_epoch: a thread is saving the site's counts for that epoch. */
#define MT_SITE_PEAK_SAVING (UINT64_C(1) << 63)

#ifdef MEMTRACE_PROFILER
/* Bytes live over all sites (blocks with a stored stack), and the most it
 * has ever been. The peak is exact: every allocation that raises the total
 * past it raises it (site.c, out of line). Invariant at any quiescent
 * point: mt_site_live_total == sum over sites of alloc_bytes - freed_bytes. */
extern mt_atomic(uint64_t) mt_site_live_total MT_HIDDEN;
extern mt_atomic(uint64_t) mt_site_peak_total MT_HIDDEN;
void mt_site_new_peak(uint64_t live);

/* Bumped by every raise of mt_site_peak_total (after it) and by a forked
 * child's restart of the peak; see mt_site_counters. Never 0 once a site
 * has been counted, so that a new site's zeroed peak_epoch is stale. */
extern mt_atomic(uint64_t) mt_site_peak_epoch MT_HIDDEN;
/* Saves C's live counts as its peak snapshot for EPOCH (cold). */
void mt_site_save_peak(mt_site_counters *c, uint64_t epoch);

/* This thread's latest allocation's kind for the temporary rule
 * (store/temporary.h). Initial-exec TLS, like mt_busy. */
extern MT_TLS mt_temp_state mt_site_latest MT_HIDDEN;
/* Counts a temporary allocation of stack ID (out of line: it keeps the
 * callers' frames small). */
void mt_site_temporary(mt_stack_id id);

/* When the peak was last raised (CLOCK_MONOTONIC ns); a racing raise of a
 * smaller value may leave its own time. */
extern mt_atomic(uint64_t) mt_site_peak_ns MT_HIDDEN;

/* Restarts the peak at the current live total, now (a forked child; the
 * saves other threads left half done are then claimed over). */
void mt_site_restart_peak(uint64_t now);

/* C's live bytes and blocks at the latest global peak (see
 * mt_site_counters). Exact when no thread changed the site while the peak
 * was raised; otherwise the value of a moment close to it (see site.c). */
void mt_site_peak_of(const mt_site_counters *c, uint64_t *bytes, uint64_t *blocks);

/* Calls FN for every stored stack whose live bytes at the latest global
 * peak are not 0, with those bytes and blocks (mt_site_peak_of), in the
 * order the stacks were stored. Allocates nothing and takes no lock; safe
 * while other threads allocate (the values are then those of
 * mt_site_peak_of). The one source of the peak profile: the folded
 * `.peak` file and any other peak writer. */
typedef void mt_site_peak_fn(mt_stack_id id, const uintptr_t *frames, unsigned depth,
                             uint64_t bytes, uint64_t blocks, void *ctx);
void mt_site_peak_foreach(mt_site_peak_fn *fn, void *ctx);

/* Before the first change to C (the shared table's) since the latest
 * peak: save its value. */
static inline void mt_site_touch(mt_site_counters *c)
{
    uint64_t epoch = mt_atomic_load_relaxed(&mt_site_peak_epoch);
    if (MT_UNLIKELY(mt_atomic_load_relaxed(&c->peak_epoch) != epoch))
        mt_site_save_peak(c, epoch);
}

/* The calling thread's table, NULL until its first change to a site and
 * again once it has ended. Initial-exec TLS, like mt_busy. */
extern MT_TLS mt_site_table *mt_site_mine MT_HIDDEN;
/* The shared table (see mt_site_table), and every thread's, newest first. */
extern mt_site_table mt_site_shared MT_HIDDEN;
extern mt_atomic(mt_site_table *) mt_site_tables MT_HIDDEN;

/* Entry N of the calling thread's table, mapping its table or chunk when
 * missing (cold); NULL when the thread can have none: then the shared
 * table takes the change. */
mt_site_counters *mt_site_own_slow(uint32_t n);
static inline mt_site_counters *mt_site_own(uint32_t n)
{
    mt_site_table *t = mt_site_mine;
    if (MT_LIKELY(t != NULL)) {
        mt_site_counters *chunk = mt_atomic_load_relaxed(&t->chunks[n >> MT_SITE_CHUNK_BITS]);
        if (MT_LIKELY(chunk != NULL))
            return &chunk[n & MT_SITE_CHUNK_MASK];
    }
    return mt_site_own_slow(n);
}

/* *P += X for a word only the calling thread writes: one instruction, so
 * that a signal handler that changes the same word on this thread cannot
 * be lost in between, but no locked one (no other thread writes it; a
 * reader's aligned load of it is atomic). */
static inline void mt_site_local_add(uint64_t *p, uint64_t x)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("addq %1, %0" : "+m"(*p) : "er"(x));
#else
    mt_atomic_add_relaxed(p, x);
#endif
}

/* Saves the calling thread's entry C as its peak snapshot for EPOCH (cold;
 * the owner alone writes it, so no claim: the counts, then the tag with
 * release). */
void mt_site_own_save(mt_site_counters *c, uint64_t epoch);
static inline void mt_site_own_touch(mt_site_counters *c)
{
    uint64_t epoch = mt_atomic_load_relaxed(&mt_site_peak_epoch);
    if (MT_UNLIKELY(mt_atomic_load_relaxed(&c->peak_epoch) != epoch))
        mt_site_own_save(c, epoch);
}

/* The shared table's changes (cold): a thread without a table of its own. */
void mt_site_shared_add(uint32_t n, uint64_t bytes, uint64_t blocks, bool freed, bool temp);

/* Site ID's counts summed over every table, into OUT: frees read before
 * allocations (so live never reads below what it was at the first read),
 * the peak fields are its live bytes and blocks at the latest peak
 * (mt_site_peak_of, per table). False for an id with no site. Takes no lock;
 * safe while other threads change the counts. */
bool mt_site_read(mt_stack_id id, mt_site_counters *out);
/* mt_site_read of the site numbered N (mt_stack_site_number), for a reader
 * that knows it: the stack's record is not read. */
void mt_site_read_number(uint32_t n, mt_site_counters *out);
#endif

#ifdef MEMTRACE_PROFILER
/* One block of SIZE bytes at stack ID counted in its site, allocated or
 * FREED (and with TEMP, a free only, one more temporary allocation), in the
 * calling thread's table (the shared one when it has none): as many bytes
 * and blocks as it stands for (sample mode: scaled). Returns those bytes,
 * the live total's change; 0 for an id with no site. */
static inline uint64_t mt_site_count(mt_stack_id id, size_t size, bool freed, bool temp)
{
    mt_sample_estimate est = { size, 1 };
    if (MT_UNLIKELY(mt_sample_rate))
        est = mt_sample_scale(size, mt_sample_rate);
    uint32_t n = mt_stack_site_number(id);
    if (n == UINT32_MAX)
        return 0;
    mt_site_counters *c = mt_site_own(n);
    if (MT_LIKELY(c != NULL)) {
        mt_site_own_touch(c);
        if (temp)
            mt_site_local_add(&c->temp_blocks, 1);
        mt_site_local_add(freed ? &c->freed_bytes : &c->alloc_bytes, est.bytes);
        mt_site_local_add(freed ? &c->freed_blocks : &c->alloc_blocks, est.blocks);
    } else {
        mt_site_shared_add(n, est.bytes, est.blocks, freed, temp);
    }
    return est.bytes;
}
#endif

/* A block of SIZE bytes at stack ID enters the totals (a new block, or one
 * resized in place). */
static inline void mt_site_alloc(mt_stack_id id, size_t size)
{
#ifdef MEMTRACE_PROFILER
    uint64_t bytes = mt_site_count(id, size, false, false);
    if (bytes == 0)
        return;
    uint64_t live = mt_atomic_add_relaxed(&mt_site_live_total, bytes) + bytes;
    if (MT_UNLIKELY(live > mt_atomic_load_relaxed(&mt_site_peak_total)))
        mt_site_new_peak(live);
#else
    (void)id;
    (void)size;
#endif
}

#ifdef MEMTRACE_PROFILER
/* A block of SIZE bytes at ID (with TEMP, a temporary allocation) leaves
 * its site's totals and the live total. */
static inline void mt_site_leaves(mt_stack_id id, size_t size, bool temp)
{
    uint64_t bytes = mt_site_count(id, size, true, temp);
    if (bytes)
        mt_atomic_sub_relaxed(&mt_site_live_total, bytes);
}
#endif

/* A block of SIZE bytes at stack ID leaves the totals. */
static inline void mt_site_free(mt_stack_id id, size_t size)
{
#ifdef MEMTRACE_PROFILER
    mt_site_leaves(id, size, false);
#else
    (void)id;
    (void)size;
#endif
}

/* The program allocated a new block, number SEQ, at ID: mt_site_alloc,
 * and its kind is now this thread's latest allocation's. */
static inline void mt_site_new_block(mt_stack_id id, size_t size, uint64_t seq)
{
    (void)seq;
    mt_site_alloc(id, size);
#ifdef MEMTRACE_PROFILER
    mt_temp_alloc(&mt_site_latest, id, size);
#endif
}

/* A block of SIZE bytes at ID is gone (freed, or moved or resized by
 * realloc) by this thread's hand: a temporary allocation by the rule of
 * store/temporary.h. */
static inline void mt_site_note_gone(mt_stack_id id, size_t size)
{
#ifdef MEMTRACE_PROFILER
    if (mt_temp_free(&mt_site_latest, id, size))
        mt_site_temporary(id);
#else
    (void)id;
    (void)size;
#endif
}

/* This thread freed block SEQ of SIZE bytes at ID: mt_site_note_gone and
 * mt_site_free, with the site's entry found once (a third of the frees in
 * sqlite end a temporary allocation). */
static inline void mt_site_end_block(mt_stack_id id, size_t size, uint64_t seq)
{
    (void)seq;
#ifdef MEMTRACE_PROFILER
    bool temp = mt_temp_free(&mt_site_latest, id, size);
    mt_site_leaves(id, size, temp);
#else
    (void)id;
    (void)size;
#endif
}

#endif
