/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The hot path: every allocation and free of the program comes through the
 * entry points here (the C allocator's: malloc, free, calloc, realloc) or
 * in the files of the other API families (capture/record.h says which),
 * which share this file's records (and state.c's state).
 *
 * Contract: the program sees the real allocator's results unchanged (same
 * pointers, same errno); memtrace only adds records. A thread already inside
 * memtrace (mt_busy set: unwinding, interning, symbolizing) gets its
 * allocations from the internal heap, untraced, so nothing recurses and no
 * allocator lock is taken from inside memtrace. The same holds before the real
 * allocator has been looked up (dlsym itself calls calloc).
 *
 * Layering: this file and the headers it includes are the hot path and the
 * stores below it; none of them includes a slow-path header (tests/static/layers.py
 * checks). Start-up, fork handling and the stop-recording policy are in
 * runtime/startup.c, reached through base/upcalls.h. */
#include "capture/entry_points.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/config.h"
#include "base/lock.h"
#include "base/os.h"
#include "base/output.h"
#include "base/reentry.h"
#include "base/upcalls.h"
#include "capture/capture.h"
#include "capture/record.h"
#include "capture/guard.h"
#include "capture/quarantine.h"
#include "capture/state.h"
#include "store/freed_history.h"
#include "store/internal_heap.h"
#include "store/live_table.h"
#include "store/site.h"
#include "store/stack_store.h"
#include "store/threads.h"
#include "tags/tags.h"
#include "timeline/timeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const mt_atomic(uint64_t) * mt_seq_counter(void)
{
    return &mt_next_seq;
}

/* ---- allocation numbers
 *
 * Unique, from 1; a thread's rise in the order it allocates. Each thread
 * takes MT_SEQ_BATCH numbers at a time from mt_next_seq, so that two
 * threads allocating at once write no line in common but the counter's,
 * once per batch; a single-threaded program's numbers are 1, 2, 3, ...
 * as ever. Numbers are therefore not in time order across threads (within
 * a batch's span), and a batch given up (mt_seq_new_epoch: untraced blocks
 * and recording turned on, which need every later block to have a number
 * above a mark) leaves a gap. */

/* A new batch for this thread (or one number, without a slot); returns the
 * allocation's number. */
static MT_COLD MT_NOINLINE uint64_t next_seq_refill(void)
{
    mt_thread_info *me = mt_thread_slot;
    if (!me)
        return mt_atomic_add_relaxed(&mt_next_seq, 1);
    /* Acquire: pairs with mt_seq_new_epoch's release, see there. */
    uint32_t epoch = mt_atomic_load_acquire(&mt_seq.epoch);
    uint64_t n = mt_atomic_load_relaxed(&me->seq_next), end = mt_atomic_load_relaxed(&me->seq_end);
    if (n < end) /* the epoch moved on: the rest is given up */
        mt_atomic_add_relaxed(&mt_seq.discarded, end - n);
    n = mt_atomic_add_relaxed(&mt_next_seq, MT_SEQ_BATCH);
    me->seq_epoch = epoch;
    /* next first: a reader of the two words mid-refill sees no unused
     * numbers rather than a whole batch too many. */
    mt_atomic_store_relaxed(&me->seq_next, n + 1);
    mt_atomic_store_relaxed(&me->seq_end, n + MT_SEQ_BATCH);
    return n;
}

/* The number of the allocation this thread is recording (registered
 * already: mt_thread_number was called). */
static inline uint64_t next_seq(void)
{
    mt_thread_info *me = mt_thread_slot;
    if (MT_LIKELY(me != NULL)) {
        uint64_t n = mt_atomic_load_relaxed(&me->seq_next);
        if (MT_LIKELY(n < mt_atomic_load_relaxed(&me->seq_end) &&
                      me->seq_epoch == mt_atomic_load_relaxed(&mt_seq.epoch))) {
            mt_atomic_store_relaxed(&me->seq_next, n + 1);
            return n;
        }
    }
    return next_seq_refill();
}

/* A free's free_seq: the greatest allocation number this thread has handed
 * out, or the block's own if greater (freed by another thread than the one
 * that allocated it). In a single-threaded program, the last allocation
 * made before the free. */
static inline uint64_t seq_seen(uint64_t alloc_seq)
{
    mt_thread_info *me = mt_thread_slot;
    uint64_t next = me ? mt_atomic_load_relaxed(&me->seq_next)
                       : mt_atomic_load_relaxed(&mt_next_seq);
    uint64_t last = next ? next - 1 : 0;
    return last > alloc_seq ? last : alloc_seq;
}

uint64_t mt_seq_last(void)
{
    uint64_t last = mt_threads_seq_highest();
    uint64_t bound = mt_atomic_load_relaxed(&mt_next_seq) - 1;
    return last < bound ? last : bound;
}

/* If recording came on meanwhile (recording.c moved mt_untraced_seq before
 * making the phase READY), a freed record at the block's address may
 * already have been pushed after that mark: move it again, so that the
 * block's free is not taken for a double free. */
MT_COLD MT_NOINLINE void mt_untraced_outside(void)
{
    if (mt_atomic_load_acquire(&mt_phase) == MT_READY)
        mt_note_untraced();
}

static inline mt_stack_id capture_stack(void)
{
    return mt_capture_stack(mt_cfg.depth, MT_MEMO_ALLOC);
}

/* mt_record's work; REDZONES false for a block of the program's own pool
 * (memtrace_malloclike), which has none: nothing is written past it. */
static inline __attribute__((always_inline)) void record(void *p, size_t size, unsigned kind,
                                                         bool redzones)
{
    MT_ASSERT(!mt_busy); /* mt_bypass() sent the thread's own calls elsewhere */
    /* The redzone's line is usually one the program has not touched yet
     * (the block's end), and the live table's lines for P cold (an address
     * reused long after its free): fetched now, written after the stack's
     * capture, so that the misses overlap the unwinding. */
    bool redzone = redzones && mt_cfg.redzone && !mt_guard_owns(p);
    if (redzone)
        __builtin_prefetch((char *)p + size, 1);
    mt_live_prefetch((uintptr_t)p);
    mt_busy = 1;
    uint32_t thread = mt_thread_number(); /* registers it: next_seq's slot */
    mt_live_entry e = {
        .ptr = (uintptr_t)p,
        .size = size,
        .seq = next_seq(),
        .stack = capture_stack(),
        .thread = mt_entry_thread_word(thread, kind),
    };
    e.tag = mt_tag_alloc(size);
    /* Before the record: a checker that finds the record finds the redzone.
     * A block on a guard page has none: the page after it is its redzone. */
    if (redzone)
        mt_pattern_fill((unsigned char *)p + size, mt_cfg.redzone, MT_REDZONE_BYTE);
    if (mt_live_insert(&e)) { /* a block not recorded must not count as live */
        mt_site_new_block(e.stack, size, e.seq);
        mt_tl_alloc(e.ptr, size, e.stack);
    } else {
        mt_tag_free(e.tag, size);
    }
    mt_busy = 0;
}

MT_NOINLINE void mt_record(void *p, size_t size, unsigned kind)
{
    record(p, size, kind, true);
}

/* ---- the program's own pool's blocks (memtrace_malloclike)
 *
 * The live table holds one record an address. A pool block that starts
 * where a block of the allocator starts (the first block carved from a
 * malloc'd pool) takes the address's slot, and the allocator's record
 * waits here, shadowed, until the pool block is freed (memtrace_freelike
 * puts it back) or the allocator's block itself is (free, realloc or
 * delete of the address find the pool block, then this record, which is
 * the one they free: mt_free_mismatched). Few pools are live at once: a
 * small table, searched whole, under its own lock, off the hot path. */
#define SHADOWED_MAX 256
static mt_lock shadow_lock;
static mt_live_entry shadowed[SHADOWED_MAX];
static mt_atomic(unsigned) nshadowed; /* written under the lock */

/* Keeps E, the record a pool block displaced; false when the table is
 * full (E is then forgotten, as a block memtrace never saw). */
static bool shadow(const mt_live_entry *e)
{
    mt_lock_acquire(&shadow_lock);
    unsigned n = mt_atomic_load_relaxed(&nshadowed);
    bool kept = n < SHADOWED_MAX;
    if (kept) {
        shadowed[n] = *e;
        mt_atomic_store_relaxed(&nshadowed, n + 1);
    }
    mt_lock_release(&shadow_lock);
    return kept;
}

/* The record shadowed at PTR, taken out into *OUT; false if none. */
static bool unshadow(uintptr_t ptr, mt_live_entry *out)
{
    if (mt_atomic_load_relaxed(&nshadowed) == 0)
        return false;
    bool found = false;
    mt_lock_acquire(&shadow_lock);
    unsigned n = mt_atomic_load_relaxed(&nshadowed);
    for (unsigned i = 0; i < n && !found; i++) {
        if (shadowed[i].ptr == ptr) {
            *out = shadowed[i];
            shadowed[i] = shadowed[n - 1];
            mt_atomic_store_relaxed(&nshadowed, n - 1);
            found = true;
        }
    }
    mt_lock_release(&shadow_lock);
    return found;
}

MT_NOINLINE void mt_pool_record(const void *p, size_t size)
{
    if (p == NULL || mt_bypass())
        return;
    MT_HELD_SCOPE;
    mt_live_entry old;
    /* A pool block declared again without its freelike ends; a heap block
     * (the pool's storage) is set aside by shadow() unless it cannot be. */
    if (mt_live_remove((uintptr_t)p, &old) &&
        (mt_entry_kind(&old) == MT_KIND_POOL || !shadow(&old)))
        mt_note_freed(&old);
    record((void *)p, size, MT_KIND_POOL, false);
}

MT_NOINLINE void mt_pool_release(const void *p)
{
    if (p == NULL || mt_busy || mt_passthrough || mt_held ||
        mt_atomic_load_acquire(&mt_phase) < MT_READY)
        return;
    MT_HELD_SCOPE;
    mt_live_entry e;
    if (!mt_live_remove((uintptr_t)p, &e)) {
        if (mt_atomic_load_relaxed(&mt_phase) == MT_READY)
            mt_bad_free(p, MT_KIND_POOL, NULL);
        return;
    }
    if (mt_entry_kind(&e) != MT_KIND_POOL) {
        mt_free_mismatched((void *)p, MT_KIND_POOL, &e);
        mt_live_insert(&e); /* a block of the allocator's: it stays live */
        return;
    }
    mt_note_freed(&e);
    mt_live_entry storage;
    if (unshadow((uintptr_t)p, &storage))
        mt_live_insert(&storage);
}

bool mt_pool_unshadow(mt_live_entry *e)
{
    mt_live_entry storage;
    if (!unshadow(e->ptr, &storage))
        return false;
    mt_live_insert(e); /* the pool block stays, in memory its program freed */
    *e = storage;
    return true;
}

MT_COLD bool mt_free_mismatched(void *p, unsigned kind, mt_live_entry *e)
{
    /* The allocator's block under a pool block at its start: its free. */
    if (mt_entry_kind(e) == MT_KIND_POOL && kind != MT_KIND_POOL && mt_pool_unshadow(e) &&
        mt_entry_kind(e) == kind)
        return true;
    if (!mt_busy)
        mt_bad_free(p, kind, e);
    if (mt_entry_kind(e) != MT_KIND_POOL)
        return true;
    mt_live_insert(e);
    return false;
}

/* E's free, by FREE_THREAD at FREE_STACK after allocation FREE_SEQ, as the
 * freed history keeps it. */
static inline mt_freed_record freed_record(const mt_live_entry *e, mt_stack_id free_stack,
                                           uint64_t free_seq, uint32_t free_thread)
{
    return (mt_freed_record){ .ptr = e->ptr,
                              .size = e->size,
                              .alloc_seq = e->seq,
                              .free_seq = free_seq,
                              .alloc_stack = e->stack,
                              .free_stack = free_stack,
                              .alloc_thread = mt_entry_thread(e),
                              .free_thread = free_thread };
}


/* mt_note_freed's work; GONE_NOTED: mt_site_note_gone was called for E
 * already (a resize that moved it, before the new block became the
 * thread's latest allocation); STAMPED: E's free is in the recording
 * already (a resize's, mt_resize_stamp). Outside memtrace and recording,
 * the free (its stack EARLY, captured here when 0) is recorded, for the
 * freed history (pushed when enabled) or the quarantine, into *R (then
 * true). */
static inline __attribute__((always_inline)) bool note_freed(const mt_live_entry *e,
                                                             bool gone_noted, bool stamped,
                                                             mt_stack_id early, mt_freed_record *r)
{
    if (!stamped)
        mt_tl_free(e->ptr);
    mt_tag_free(e->tag, e->size);
    if (gone_noted)
        mt_site_free(e->stack, e->size);
    else
        mt_site_end_block(e->stack, e->size, e->seq);
    if (!early && !mt_free_captured()) /* EARLY: mt_free_stack_first found it captured */
        return false;
    mt_busy = 1;
    mt_stack_id free_stack = early ? early : mt_capture_free_stack();
    *r = freed_record(e, free_stack, seq_seen(e->seq), mt_thread_number());
    if (mt_freed_enabled())
        mt_freed_push(r);
    mt_busy = 0;
    return true;
}

MT_NOINLINE void mt_note_freed(const mt_live_entry *e)
{
    mt_freed_record r;
    note_freed(e, false, false, 0, &r);
}

static const char *free_name(const mt_live_entry *e)
{
    unsigned kind = mt_entry_kind(e);
    return kind == MT_KIND_NEW ? "delete" : kind == MT_KIND_NEW_ARRAY ? "delete[]" : "free";
}

/* E's redzone differs from its pattern: reported as WHO (the resize; NULL:
 * E's free) found it, outside memtrace only (a report needs it), and for
 * a block recorded since the last untraced window. */
static MT_COLD MT_NOINLINE void redzone_damaged(const mt_live_entry *e, const char *who)
{
    size_t first, end;
    mt_pattern_find((const unsigned char *)e->ptr + e->size, mt_cfg.redzone, MT_REDZONE_BYTE,
                    &first, &end);
    if (mt_busy || e->seq <= mt_atomic_load_relaxed(&mt_untraced_seq))
        return;
    mt_heap_error_report(&(struct mt_heap_error){
        .kind = MT_HEAP_OVERFLOW,
        .ptr = e->ptr,
        .size = e->size,
        .offset = (int64_t)(e->size + first),
        .bytes = end - first,
        .at_least = end == mt_cfg.redzone,
        .alloc_seq = e->seq,
        .alloc_stack = e->stack,
        .alloc_thread = mt_entry_thread(e),
        .where = who ? who : free_name(e),
    });
    /* Said once: the quarantine must not find it again. */
    memset((char *)e->ptr + e->size, MT_REDZONE_BYTE, mt_cfg.redzone);
}

/* Whether E's chunk header (glibc's size word, and the next chunk's) can
 * be checked: a block of glibc's, recorded since the last untraced window,
 * that memtrace asked E's size and the redzone for (not in sample mode,
 * whose blocks carry a trailer; not on a guard page), of the C family
 * (C++'s new may be the program's own, handing out a block inside one of
 * glibc's). */
static inline bool header_checked(const mt_live_entry *e)
{
    return mt_real_glibc && !mt_cfg.sample && mt_entry_kind(e) == MT_KIND_MALLOC &&
           e->size <= PTRDIFF_MAX && !mt_guard_owns((const void *)e->ptr) &&
           e->seq > mt_atomic_load_relaxed(&mt_untraced_seq);
}

/* E's chunk header is damaged: reported as WHO (NULL: E's free) found it,
 * an underflow of DAMAGE bytes (mt_glibc_header_damage's), or a write past
 * its end into the next chunk's header at offset AT (DAMAGE 0). Outside
 * memtrace only. The call then goes to glibc as without memtrace (which
 * aborts on most such headers: the report comes first, and glibc's own
 * check is never hidden), not into the quarantine. */
static MT_COLD MT_NOINLINE void header_damaged(const mt_live_entry *e, const char *who,
                                               unsigned damage, size_t at)
{
    if (mt_busy)
        return;
    mt_heap_error_report(&(struct mt_heap_error){
        .kind = damage ? MT_HEAP_UNDERFLOW : MT_HEAP_OVERFLOW,
        .ptr = e->ptr,
        .size = e->size,
        .offset = damage ? -(int64_t)damage : (int64_t)at,
        .bytes = damage ? damage : 8,
        .alloc_seq = e->seq,
        .alloc_stack = e->stack,
        .alloc_thread = mt_entry_thread(e),
        .where = who ? who : free_name(e),
    });
}

/* Checks E's chunk header and the next chunk's as WHO; false when either
 * is damaged (reported). */
static inline bool header_sound(const mt_live_entry *e, const char *who)
{
    size_t at = 0;
    unsigned damage = mt_glibc_header_damage(e->ptr, e->size + mt_cfg.redzone);
    if (MT_LIKELY(!damage && mt_glibc_next_ok(e->ptr, &at)))
        return true;
    header_damaged(e, who, damage, at);
    return false;
}

/* Checks E's redzone as WHO (redzone_damaged's). */
static inline __attribute__((always_inline)) void check_redzone(const mt_live_entry *e,
                                                                const char *who)
{
    if (MT_UNLIKELY(e->size > PTRDIFF_MAX))
        return; /* a record damaged by a wild write: its block is elsewhere */
    if (MT_UNLIKELY(mt_pattern_differs((const unsigned char *)e->ptr + e->size, mt_cfg.redzone,
                                       MT_REDZONE_BYTE)))
        redzone_damaged(e, who);
}

void mt_check_resized(const mt_live_entry *e, const char *who)
{
    if (mt_cfg.redzone)
        check_redzone(e, who);
    if (header_checked(e))
        header_sound(e, who);
}

/* mt_freed_block's work: inline in mt_free, the entry point most programs
 * free through, which saves a call. */
static inline __attribute__((always_inline)) bool freed_block(const mt_live_entry *e,
                                                              mt_free_call *c, mt_stack_id early)
{
    /* The redzone's line (the block's end, seldom touched since its
     * allocation) is fetched now and checked after the free's bookkeeping:
     * the miss overlaps that (the stack was captured before the record
     * left the table, mt_free_stack_first). */
    size_t redzone = mt_cfg.redzone;
    if (redzone)
        __builtin_prefetch((const char *)e->ptr + e->size);
    mt_freed_record r;
    bool noted = note_freed(e, false, false, early, &r);
    if (redzone) {
        check_redzone(e, NULL);
        mt_free_call_pad(c, redzone);
    }
    if (header_checked(e) && MT_UNLIKELY(!header_sound(e, NULL)))
        return true; /* to glibc now, not held: what glibc alone does with it */
    if (mt_cfg.sample)
        mt_free_call_pad(c, MT_TRAILER);
    if (!mt_quarantine_on)
        return true;
    if (MT_UNLIKELY(!noted)) {
        mt_quarantine_idle_free(); /* recording went off: what it held goes */
        return true;
    }
    return !mt_quarantine_hold(&r, c);
}

MT_NOINLINE bool mt_freed_block(const mt_live_entry *e, mt_free_call *c, mt_stack_id early)
{
    return freed_block(e, c, early);
}

MT_COLD bool mt_unheld(void *p)
{
    mt_quarantine_slot s;
    int held = mt_quarantine_take((uintptr_t)p, &s);
    if (held > 0)
        mt_free_call_run(p, &s.call);
    return held >= 0;
}

/* E moved away by a resize: mt_note_freed's, after mt_site_note_gone and
 * mt_resize_stamp. */
static MT_NOINLINE void note_moved(const mt_live_entry *e)
{
    mt_freed_record r;
    note_freed(e, true, true, 0, &r);
}

/* E freed by a resize to 0 bytes: mt_note_freed's, after mt_resize_stamp. */
static MT_NOINLINE void note_resize_freed(const mt_live_entry *e)
{
    mt_freed_record r;
    note_freed(e, false, true, 0, &r);
}

/* mt_record_block with the record made inline: malloc, the entry point
 * most programs call most, saves a call and the capture a frame to climb. */
static inline __attribute__((always_inline)) void record_block_inline(void *p, size_t size,
                                                                      unsigned kind)
{
    if (MT_UNLIKELY(mt_cfg.sample) && mt_sample_trail(p, size, kind))
        return;
    record(p, size, kind, true);
}

void *mt_malloc(size_t size)
{
    bool traced = !mt_bypass();
    if (MT_UNLIKELY(!traced && (mt_own_heap() || !mt_real.next_malloc)))
        return mt_iheap_alloc(size, 16);
    void *p;
    MT_NEXT_ALLOC_BY(record_block_inline, MT_NEXT_PLAIN, traced, p,
                     MT_GUARD_OR(traced, size, 0, mt_real.next_malloc(mt_padded(size, traced))),
                     size, MT_KIND_MALLOC);
    return p;
}

void mt_free(void *ptr)
{
    MT_NEXT_FREE_BY(freed_block, ptr, MT_KIND_MALLOC, mt_real.next_free != NULL,
                    MT_FREE_CALL(NULL, MT_FC_REAL, 0, 0));
}

void *mt_calloc(size_t n, size_t size)
{
    size_t total;
    if (MT_UNLIKELY(__builtin_mul_overflow(n, size, &total))) {
        errno = ENOMEM;
        return NULL;
    }
    bool traced = !mt_bypass();
    void *p;
    if (MT_UNLIKELY(!traced && (mt_own_heap() || !mt_real.next_calloc))) {
        p = mt_iheap_alloc(total, 16);
        if (p)
            memset(p, 0, total);
        return p;
    }
    /* calloc(1, padded): the redzone is zeroed, then filled */
    if (traced && (mt_cfg.redzone || mt_cfg.sample)) /* sample mode: the trailer too */
        MT_NEXT_ALLOC(MT_NEXT_PLAIN, traced, p,
                      MT_GUARD_OR(traced, total, 0, mt_real.next_calloc(1, mt_padded(total, true))),
                      total, MT_KIND_MALLOC);
    else
        MT_NEXT_ALLOC(MT_NEXT_PLAIN, traced, p,
                      MT_GUARD_OR(traced, total, 0, mt_real.next_calloc(n, size)), total,
                      MT_KIND_MALLOC);
    return p;
}

/* realloc of a block of the internal heap outside memtrace: the program got
 * it during bootstrap; move it to the real allocator. */
static MT_COLD void *realloc_from_iheap(void *ptr, size_t size)
{
    if (mt_bypass())
        return mt_iheap_realloc(ptr, size);
    void *q = mt_malloc(size);
    if (q) {
        size_t old = mt_iheap_usable(ptr);
        memcpy(q, ptr, old < size ? old : size);
        mt_iheap_free(ptr);
    }
    return q;
}

void mt_resized(void *ptr, bool had, const mt_live_entry *old, void *q, size_t size,
                bool zero_frees)
{
    /* The old block goes before the new one becomes the thread's latest
     * allocation (a realloc(p, 0) that freed it: in note_resize_freed). Its free
     * is in the recording already (mt_resize_stamp). */
    if (had && q == ptr) { /* resized in place: the old size leaves the */
        mt_site_note_gone(old->stack, old->size);
        mt_site_free(old->stack, old->size); /* totals before the new one enters */
        mt_tag_free(old->tag, old->size);
    } else if (had && q != NULL) {
        mt_site_note_gone(old->stack, old->size);
    }
    if (q != NULL)
        mt_record_block(q, size, MT_KIND_MALLOC);
    if (had && (q != NULL || (zero_frees && size == 0))) {
        if (q != NULL && q != ptr)
            note_moved(old);
        else if (q == NULL)
            note_resize_freed(old); /* realloc(p, 0) freed it */
    } else if (had) {
        mt_resize_unstamp(old); /* failed: the old block is intact */
    }
}

/* realloc through FN while memtrace does not record (paused, detached, a
 * pass-through scope): the new block is untraced. Paused or detached,
 * PTR's record leaves as in mt_free, but comes back when FN fails and the
 * block is intact (not a realloc(p, 0), which freed it). */
static MT_COLD void *realloc_freed(void);

static MT_COLD MT_NOINLINE void *realloc_bypassed(void *(*fn)(void *, size_t), void *ptr,
                                                  size_t size)
{
    mt_live_entry old = { 0 };
    bool had = false;
    mt_sample_block b;
    /* An unsampled block's trailer must not stay behind in memory the
     * next allocator frees or moves (see mt_sample_realloc). */
    bool trailed = mt_cfg.sample && !mt_busy && fn && mt_sample_unsampled(ptr, &b);
    if (trailed)
        mt_sample_unmark(ptr, &b);
    else if (!mt_busy && !mt_passthrough && !mt_held &&
             mt_atomic_load_acquire(&mt_phase) >= MT_PAUSED)
        had = mt_unrecord(ptr, MT_KIND_MALLOC, &old);
    if (MT_UNLIKELY(!had && old.ptr)) /* the program's own pool's */
        return realloc_freed();
    mt_resize_stamp(had, &old);
    void *q = NULL;
    if (fn)
        MT_NEXT_CALL(MT_NEXT_PLAIN, q = fn(ptr, size), q != NULL);
    if (trailed && q == NULL && size != 0)
        mt_sample_remark(ptr, &b);
    else if (trailed)
        mt_tag_free(b.id, b.size);
    if (had && q == NULL && size != 0) {
        mt_resize_unstamp(&old);
    } else if (had) {
        note_resize_freed(&old);
    }
    mt_untraced(q);
    return q;
}

/* realloc of a freed block held in a ring another thread keeps busy
 * (mt_unheld): the next allocator still has it as a live block and must
 * not resize it; realloc fails. */
static MT_COLD void *realloc_freed(void)
{
    errno = ENOMEM;
    return NULL;
}

/* realloc(PTR, 0) returned Q, a block (an allocator other than glibc's):
 * Q is resized to the redzone's size so that it has one, and recorded as
 * a 0-byte block; when that fails it goes back to the program untraced. */
static MT_COLD void *realloc_zero_kept(void *(*fn)(void *, size_t), void *ptr, bool had,
                                       const mt_live_entry *old, void *q)
{
    void *r;
    MT_NEXT_CALL(MT_NEXT_PLAIN, r = fn(q, mt_cfg.redzone), r != NULL);
    if (r == NULL) {
        mt_resized(ptr, had, old, NULL, 0, true); /* freed, as realloc(p, 0) said */
        mt_untraced_outside();
        return q;
    }
    mt_resized(ptr, had, old, r, 0, true);
    return r;
}

void *mt_sample_realloc(void *(*fn)(void *, size_t), void *ptr, size_t size,
                        const mt_sample_block *b)
{
    /* Cleared first: once the next allocator has freed or moved PTR, its
     * trailer must not stay behind to match a later block. */
    mt_sample_unmark(ptr, b);
    mt_sample_me.pending = MT_SAMPLE_NONE; /* size 0 asks mt_padded nothing */
    void *q;
    MT_NEXT_CALL(MT_NEXT_PLAIN, q = fn(ptr, size ? mt_padded(size, true) : 0), q != NULL);
    if (q == NULL && size != 0) { /* failed: PTR intact, unsampled still */
        mt_sample_me.pending = MT_SAMPLE_NONE;
        mt_sample_remark(ptr, b);
        return NULL;
    }
    mt_tag_free(b->id, b->size);
    if (q != NULL)
        mt_record_block(q, size, MT_KIND_MALLOC);
    return q;
}

/* realloc through FN (see mt_realloc_next), inlined in both. */
static inline __attribute__((always_inline)) void *realloc_with(void *(*fn)(void *, size_t),
                                                                void *ptr, size_t size)
{
    if (ptr == NULL)
        return mt_malloc(size);
    if (MT_UNLIKELY(mt_iheap_owns(ptr)))
        return realloc_from_iheap(ptr, size);
    if (MT_UNLIKELY(mt_guard_owns(ptr)))
        return mt_guard_realloc(ptr, size);
    void *q = NULL;
    if (MT_UNLIKELY(mt_bypass()))
        return realloc_bypassed(fn, ptr, size);
    MT_HELD_SCOPE;
    if (MT_UNLIKELY(mt_cfg.sample)) {
        mt_sample_block b;
        if (mt_sample_unsampled(ptr, &b))
            return mt_sample_realloc(fn, ptr, size, &b);
    }
    /* The old record goes first, for the same reason as in mt_free. */
    mt_live_entry old;
    bool had = mt_live_remove((uintptr_t)ptr, &old);
    MT_ASSERT(!had || old.ptr == (uintptr_t)ptr);
    if (MT_UNLIKELY(!had || mt_entry_kind(&old) != MT_KIND_MALLOC)) {
        if (had && mt_entry_kind(&old) == MT_KIND_POOL && !mt_pool_unshadow(&old)) {
            mt_bad_free(ptr, MT_KIND_MALLOC | MT_FREE_BY_REALLOC, &old);
            mt_live_insert(&old); /* the program's own pool's: never resized */
            return realloc_freed();
        }
        if (!had || mt_entry_kind(&old) != MT_KIND_MALLOC)
            mt_bad_free(ptr, MT_KIND_MALLOC | MT_FREE_BY_REALLOC, had ? &old : NULL);
    }
    if (MT_UNLIKELY(!had) && mt_quarantine_on && !mt_unheld(ptr))
        return realloc_freed();
    if (had)
        mt_check_resized(&old, "realloc");
    mt_resize_stamp(had, &old);
    /* realloc(p, 0) as the next allocator does it (glibc's frees p) */
    if (size == 0)
        mt_sample_me.pending = MT_SAMPLE_NONE;
    MT_NEXT_CALL(MT_NEXT_PLAIN, q = fn(ptr, size ? mt_padded(size, true) : 0), q != NULL);
    if (MT_UNLIKELY(size == 0 && q != NULL && mt_cfg.redzone))
        return realloc_zero_kept(fn, ptr, had, &old, q);
    mt_resized(ptr, had, &old, q, size, true);
    return q;
}

void *mt_realloc(void *ptr, size_t size)
{
    return realloc_with(mt_real.next_realloc, ptr, size);
}

void *mt_realloc_next(void *(*fn)(void *, size_t), void *ptr, size_t size)
{
    return realloc_with(fn, ptr, size);
}

void *mt_reallocarray(void *ptr, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return mt_realloc(ptr, total);
}

/* ---- the guard pages' blocks (guard.h) */

/* The freed block of slot S leaves with its record E (if HAD): the site
 * totals and the freed history as note_freed does, and the slot keeps
 * both stacks for the fault handler, however long the history keeps
 * them. */
static void note_guard_freed(mt_guard_block *s, bool had, const mt_live_entry *e)
{
    s->alloc_stack = s->free_stack = 0;
    if (had) {
        mt_site_end_block(e->stack, e->size, e->seq);
        mt_tag_free(e->tag, e->size);
        s->alloc_stack = e->stack;
        s->alloc_seq = e->seq;
        s->alloc_thread = mt_entry_thread(e);
    }
    if (mt_busy || mt_atomic_load_relaxed(&mt_phase) != MT_READY)
        return;
    mt_busy = 1;
    s->free_stack = mt_capture_free_stack();
    s->free_thread = mt_thread_number();
    s->free_seq = seq_seen(had ? e->seq : 0);
    if (had && mt_freed_enabled()) {
        mt_freed_record r = freed_record(e, s->free_stack, s->free_seq, s->free_thread);
        mt_freed_push(&r);
    }
    mt_busy = 0;
}

/* The rest of claimed slot S's page, before and after its block P, is
 * still the redzone byte: else reported, at P's free, while P's record
 * and stacks are still in the live table (MEMTRACE_ON_ERROR=abort's core
 * knows the block), and mended. */
static MT_COLD void check_guard_page(const mt_guard_block *s, const void *p, const char *who)
{
    if (MT_LIKELY(!mt_guard_near_damage(s)))
        return;
    size_t hfirst, hend, hlen, tfirst, tend, tlen;
    bool head = mt_guard_head(s, &hfirst, &hend, &hlen);
    bool tail = mt_guard_slack(s, &tfirst, &tend, &tlen);
    if (MT_LIKELY(!head && !tail))
        return;
    mt_live_entry r;
    bool unlocked = false;
    if (mt_live_find((uintptr_t)p, &r, &unlocked)) {
        struct mt_heap_error e = {
            .ptr = r.ptr,
            .size = r.size,
            .alloc_seq = r.seq,
            .alloc_stack = r.stack,
            .alloc_thread = mt_entry_thread(&r),
            .where = who ? who : free_name(&r),
        };
        if (head) {
            /* As the fault's: the distance of the farthest byte written. */
            e.kind = MT_HEAP_UNDERFLOW;
            e.bytes = hlen - hfirst;
            e.offset = -(int64_t)e.bytes;
            mt_heap_error_report(&e);
        }
        if (tail) {
            e.kind = MT_HEAP_OVERFLOW;
            e.offset = (int64_t)(r.size + tfirst);
            e.bytes = tend - tfirst;
            e.at_least = tend == tlen;
            mt_heap_error_report(&e);
        }
    }
    mt_guard_mend(s);
}

MT_COLD void mt_guard_free(void *p, unsigned kind)
{
    bool lost;
    mt_guard_block *s = mt_guard_claim(p, &lost);
    /* Checked only where a report can be made (outside memtrace, READY);
     * a page not checked is filled whole for the slot's next block. */
    bool tidy = s && !mt_busy && mt_atomic_load_relaxed(&mt_phase) == MT_READY;
    if (tidy)
        check_guard_page(s, p, NULL);
    mt_live_entry e;
    bool had = false;
    /* As MT_NEXT_FREE: the record leaves while recording or paused. */
    if (mt_atomic_load_acquire(&mt_phase) >= MT_READY && !mt_passthrough && !mt_held)
        had = mt_unrecord(p, kind, &e);
    if (!s) {
        /* A double free or a free inside a block (reported above, by
         * mt_unrecord) ends the program as it would without memtrace,
         * whose allocator aborts on it ("free(): invalid pointer"); the
         * pool's lock lost in a fork leaves the block where it is. */
        if (lost)
            return;
        mt_warn("%s: aborting, as the allocator would",
                mt_guard_freed(p) ? "a block of the guard pages freed twice"
                                  : "a free of an address of the guard pages that is no block's "
                                    "start");
        abort();
    }
    note_guard_freed(s, had, &e);
    mt_guard_release(s, tidy);
}

MT_COLD void *mt_guard_realloc(void *p, size_t size)
{
    const mt_guard_block *b = mt_guard_live(p);
    if (!b) {
        /* Freed already, or inside a block: its page may be inaccessible,
         * so nothing is copied; reported as a bad free, and refused. */
        if (!mt_busy && mt_atomic_load_relaxed(&mt_phase) == MT_READY)
            mt_bad_free(p, MT_KIND_MALLOC | MT_FREE_BY_REALLOC, NULL);
        errno = EINVAL;
        return NULL;
    }
    if (size == 0) {
        mt_free(p);
        return NULL;
    }
    if (size <= mt_guard_page_size() && !mt_bypass()) {
        /* Resized in its page, as realloc_with resizes in place: the old
         * record leaves, the new one enters (a moved block's old address
         * goes to the freed history). */
        MT_HELD_SCOPE;
        check_guard_page(b, p, "realloc");
        mt_live_entry old;
        if (mt_live_remove((uintptr_t)p, &old)) {
            if (MT_UNLIKELY(mt_entry_kind(&old) != MT_KIND_MALLOC))
                mt_bad_free(p, MT_KIND_MALLOC | MT_FREE_BY_REALLOC, &old);
            mt_resize_stamp(true, &old);
            void *q = mt_guard_resize(p, size);
            mt_resized(p, true, &old, q, size, true);
            return q;
        }
    }
    size_t old = b->size;
    void *q = mt_malloc(size);
    if (q) {
        memcpy(q, p, old < size ? old : size);
        mt_free(p);
    }
    return q;
}

size_t mt_malloc_usable_size(void *ptr)
{
    if (ptr == NULL)
        return 0;
    if (mt_iheap_owns(ptr))
        return mt_iheap_usable(ptr);
    if (mt_guard_owns(ptr)) {
        const mt_guard_block *b = mt_guard_live(ptr);
        return b ? b->size : 0;
    }
    if (!mt_real.next_malloc_usable_size)
        mt_start();
    /* A recorded block's redzone is not the program's to use; nor is a
     * trailer (sample mode). */
    mt_sample_block b;
    if (mt_cfg.sample && mt_real.next_malloc_usable_size && mt_sample_unsampled(ptr, &b))
        return b.size;
    mt_live_entry e;
    bool unlocked = false;
    if ((mt_cfg.redzone || mt_cfg.sample) && mt_live_find((uintptr_t)ptr, &e, &unlocked))
        return e.size;
    return mt_real.next_malloc_usable_size ? mt_real.next_malloc_usable_size(ptr) : 0;
}
