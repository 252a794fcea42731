/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What every interposed entry point shares (capture/ only; the entry
 * points themselves are declared in entry_points.h): when a call bypasses
 * tracing, how a block the program gets untraced is accounted for, how a
 * free's record leaves, and the one way to call the next allocator
 * (MT_NEXT_CALL, MT_NEXT_ALLOC, MT_NEXT_FREE).
 *
 * The entry points are split by API family: malloc.c (the records, the C
 * allocator's functions), aligned_sized.c (posix_memalign and the aligned
 * allocators, C23's sized frees), cxx.c (operator new and delete), jemalloc.c
 * (jemalloc's *allocx), tcmalloc.c (tcmalloc's tc_* C functions). Everything
 * here is inline or in malloc.c: the fast paths of malloc, free, calloc and
 * realloc call nothing of memtrace's but the records' stores. */
#ifndef MT_RECORD_H
#define MT_RECORD_H

#include "base/atomic.h"
#include "base/common.h"
#include "base/config.h"
#include "base/reentry.h"
#include "base/upcalls.h"
#include "capture/capture.h"
#include "capture/guard.h"
#include "capture/quarantine.h"
#include "capture/state.h"
#include "capture/sample.h"
#include "store/freed_history.h"
#include "store/internal_heap.h"
#include "store/live_table.h"
#include "timeline/timeline.h"

#include <stdbool.h>
#include <stddef.h>

/* ---- the records (malloc.c) */

/* Records a new block, allocated as KIND says (MT_KIND_*), and fills its
 * redzone: the next allocator was asked for mt_padded(SIZE, true) bytes.
 * Never fails the allocation: when the tables cannot grow the block just
 * goes unrecorded. Called with mt_busy clear (bypass() sent the thread's
 * own calls elsewhere). */
void mt_record(void *p, size_t size, unsigned kind);

/* The record E of a block being freed by the call C has left the table:
 * its redzone is checked (a report if damaged), C's size argument padded,
 * the record noted freed (mt_note_freed, with EARLY as the free's stack
 * when not 0) and, recording, the block held in the thread's quarantine.
 * True when C must be made now, false when the quarantine makes it
 * later. */
bool mt_freed_block(const mt_live_entry *e, mt_free_call *c, mt_stack_id early);

/* A free's stack: through the thread's memo of frees (capture.h). */
static inline mt_stack_id mt_capture_free_stack(void)
{
    return mt_capture_stack(mt_cfg.depth, MT_MEMO_FREE);
}

/* Whether this free is captured (its stack, for the freed history or the
 * quarantine): outside memtrace, recording, and one of those on. */
static inline bool mt_free_captured(void)
{
    return !mt_busy && mt_atomic_load_relaxed(&mt_phase) == MT_READY &&
           (mt_quarantine_on || mt_freed_enabled());
}

/* The live table's lines for P (mt_live_prefetch's) and those of P's
 * block that its free's checks read, fetched before the stack's capture
 * so that their misses overlap it and each other: the chunk header
 * (P - 8), the redzone at the block's end and the next chunk's size word
 * just past it (where mt_glibc_request2size puts it). The end is found
 * in the live table's lines (mt_live_prefetch_size; 0 when not found:
 * then only P's line), the record not yet taken out: the block's tail
 * line is seldom touched since its allocation, and a miss there was most
 * of the free's checks' time (churn, perf). Prefetches never fault, so a
 * size that is stale or wrong costs a line at most. */
static inline void mt_prefetch_free_lines(void *p)
{
    __builtin_prefetch((const char *)p - 8);
    if (!mt_cfg.redzone && !mt_real_glibc) {
        mt_live_prefetch((uintptr_t)p);
        return;
    }
    size_t size = mt_live_prefetch_size((uintptr_t)p);
    const char *end = (const char *)p + size;
    __builtin_prefetch(end);
    __builtin_prefetch((const char *)p + mt_glibc_request2size(size + mt_cfg.redzone) - 8);
}

/* The stack of a free of P about to take P's record out of the table,
 * captured first, with the table's lines for P fetched meanwhile: a block
 * freed was seldom touched in the table lately, and the miss then
 * overlaps the unwinding instead of stalling the remove. 0 when the free
 * would not be captured (inside memtrace, not recording, neither the
 * freed history nor the quarantine on). Inline in the free entry points:
 * a call less, and a frame less for the capture to climb. */
static inline __attribute__((always_inline)) mt_stack_id mt_free_stack_first(void *p)
{
    mt_prefetch_free_lines(p);
    if (!mt_free_captured())
        return 0;
    mt_busy = 1;
    mt_stack_id s = mt_capture_free_stack();
    mt_busy = 0;
    return s;
}

/* The block of record E is about to be resized by WHO ("realloc",
 * "rallocx"): its redzone is checked, and glibc's chunk header (its own
 * size word, the next chunk's), a report if damaged. */
void mt_check_resized(const mt_live_entry *e, const char *who);

/* The block E was freed by this thread: it leaves the site totals, and
 * enters the freed history when recording, unless this thread is already
 * inside memtrace (a free from libunwind or dlinfo must not unwind again
 * from there). (mt_resized says when a resize moved a block away.) */
void mt_note_freed(const mt_live_entry *e);

/* Before a resize's call to the next allocator: the old block OLD (if
 * HAD), whose record was removed, is stamped freed in the recording
 * (MEMTRACE_RECORD) now. Once the call has freed it, another thread may be
 * handed its address and record that allocation: the recording must have
 * the free first. mt_resized takes the stamp back if the call fails. */
static inline void mt_resize_stamp(bool had, const mt_live_entry *old)
{
    if (had)
        mt_tl_free(old->ptr);
}

/* A resize's call failed: OLD, whose record was removed and stamped freed
 * (mt_resize_stamp), is intact and live again, in the recording and in the
 * table. */
static inline void mt_resize_unstamp(const mt_live_entry *old)
{
    mt_tl_alloc(old->ptr, old->size, old->stack);
    mt_live_insert(old);
}

/* The records around a resize: OLD (if HAD) was removed, and stamped freed
 * (mt_resize_stamp), before the next allocator's call, whose result is Q.
 * The new block is recorded; the old one leaves (moved, or freed by a size
 * of 0 when ZERO_FREES) or, if the call failed, comes back (the old block
 * is then intact, and allocated again in the recording). */
void mt_resized(void *ptr, bool had, const mt_live_entry *old, void *q, size_t size,
                bool zero_frees);

/* A block the real allocator handed out untraced outside any scope or
 * window, because the phase was not READY (recording off, or start-up). */
MT_COLD void mt_untraced_outside(void);

/* ---- bypass and the untraced blocks */

/* True when this call must bypass tracing (and, if the real allocator is
 * not known yet, the real allocator too). Taken before the next
 * allocator's call: it may start memtrace (mt_start). */
static inline bool mt_bypass(void)
{
    if (MT_LIKELY(mt_atomic_load_acquire(&mt_phase) == MT_READY))
        return mt_busy | mt_passthrough | mt_held;
    if (!mt_busy && mt_atomic_load_acquire(&mt_phase) == MT_UNINIT)
        mt_start();
    return mt_busy || mt_passthrough || mt_held || mt_atomic_load_acquire(&mt_phase) != MT_READY;
}

/* A bypassed allocation comes from the internal heap, not the next
 * allocator: inside memtrace, or in a signal handler that interrupted a
 * held part of a traced call (mt_held) outside any pass-through scope
 * when the next allocator is glibc's, which calls no interposed name from
 * inside its own calls. Another allocator may (tcmalloc's posix_memalign
 * does): such a call, and a signal handler's there, goes to it untraced. */
static inline bool mt_own_heap(void)
{
    return mt_busy || (mt_held && !mt_passthrough && mt_real_glibc);
}

/* P, from a next function that calls no interposed name (MT_NEXT_PLAIN),
 * goes unrecorded: noted in a fork window, counted in a pass-through scope
 * (mt_passthrough_end). */
static inline void mt_untraced(void *p)
{
    if (MT_UNLIKELY(mt_fork_window) && p)
        mt_note_untraced();
    else if (mt_passthrough && p)
        mt_passthrough_allocs++;
    else if (p)
        mt_untraced_outside();
}

/* The same for a block from a next definition called in a pass-through
 * scope (MT_NEXT_SCOPED) that the entry point returns without recording it:
 * not counted again, since when a pass-through scope is what bypassed it,
 * the real allocator's own mt_untraced() below already counted it, if it
 * came from there. */
static inline void mt_untraced_entry(void *p)
{
    if (MT_UNLIKELY(mt_fork_window) && p)
        mt_note_untraced();
    else if (p && !mt_passthrough && !mt_busy)
        mt_untraced_outside();
}

/* A block goes back to the real allocator without its record leaving:
 * noted in a fork window (the record, if any, is stale from now on). */
static inline void mt_untraced_free(void)
{
    if (MT_UNLIKELY(mt_fork_window))
        mt_note_untraced();
}

/* ---- redzones (capture/quarantine.h) */

/* The size asked of the next allocator for a block of SIZE bytes: with the
 * redzone after it when the block will be recorded (TRACED); SIZE itself
 * when it will not be, or when no allocator can give that much anyway
 * (the call fails, nothing is recorded). */
static inline size_t mt_padded(size_t size, bool traced)
{
    if (!traced || size > PTRDIFF_MAX)
        return size;
    if (MT_UNLIKELY(mt_cfg.sample)) /* and decides whether it is sampled */
        return mt_sample_padded(size, mt_cfg.redzone);
    return size + mt_cfg.redzone;
}

/* mt_record, or in sample mode the block's trailer when mt_padded decided
 * it is not sampled (sample.h). */
static inline void mt_record_block(void *p, size_t size, unsigned kind)
{
    if (MT_UNLIKELY(mt_cfg.sample) && mt_sample_trail(p, size, kind))
        return;
    mt_record(p, size, kind);
}

/* ---- frees */

/* A free of family KIND found the record E of another family (malloc.c):
 * reported (mt_bad_free); true when the free goes on, false for a block
 * of the program's own pool (MT_KIND_POOL), whose record is put back: the
 * real allocator must never see it. */
bool mt_free_mismatched(void *p, unsigned kind, mt_live_entry *e);

/* E, a pool block's record just taken out of the table, starts where an
 * allocator's block starts whose record it shadows (malloc.c): E goes
 * back, *E becomes that block's record, and true; false if none. */
bool mt_pool_unshadow(mt_live_entry *e);

/* P is being freed by a function of family KIND (MT_KIND_*): its record
 * leaves the table, into *E; false when it had none (E->ptr 0) or when P
 * is a block of the program's own pool (E->ptr P, the record kept: the
 * free must not be made). A free the table cannot match (P is no live
 * block's start, or the block is of another family) goes to mt_bad_free
 * first. The caller then notes the record freed (mt_note_freed), or puts
 * it back if the free did not happen. */
static inline bool mt_unrecord(void *p, unsigned kind, mt_live_entry *e)
{
    if (MT_LIKELY(mt_live_remove((uintptr_t)p, e))) {
        if (MT_UNLIKELY(mt_entry_kind(e) != kind))
            return mt_free_mismatched(p, kind, e);
        return true;
    }
    e->ptr = 0;
    if (!mt_busy && mt_atomic_load_relaxed(&mt_phase) == MT_READY)
        mt_bad_free(p, kind, NULL);
    return false;
}

/* P is being freed by a function of family KIND: mt_unrecord, and the
 * record, if any, noted freed. */
static inline void mt_forget(void *p, unsigned kind)
{
    mt_live_entry e;
    if (mt_unrecord(p, kind, &e))
        mt_note_freed(&e);
}

/* True when the free of PTR is memtrace's own business, done here: PTR is
 * NULL, or a block of the internal heap. */
static inline bool mt_free_own(void *ptr)
{
    if (MT_UNLIKELY(ptr == NULL))
        return true;
    if (MT_UNLIKELY(mt_iheap_owns(ptr))) {
        mt_iheap_free(ptr);
        return true;
    }
    return false;
}

/* P, which the live table cannot match, is freed again or resized: if the
 * quarantine holds it, its first free is made now, so that the next
 * allocator sees the calls it would see without memtrace. False when
 * the call must not be made (another thread's busy ring holds it). */
bool mt_unheld(void *p);

/* The traced free of P by the call C (recording or paused, outside a
 * pass-through scope): P's record leaves (mt_unrecord) and FREED_BLOCK
 * (mt_freed_block, or its inline form in mt_free) takes it on. True when
 * C must be made now. */
static inline __attribute__((always_inline)) bool mt_release_by(
    bool (*freed_block)(const mt_live_entry *, mt_free_call *, mt_stack_id), void *p, unsigned kind,
    mt_free_call *c)
{
    size_t pad;
    if (MT_UNLIKELY(mt_cfg.sample) && mt_sample_free(p, &pad)) {
        mt_free_call_pad(c, pad); /* a sized free: the size asked */
        return true;
    }
    mt_live_entry e;
    mt_stack_id early = mt_free_stack_first(p);
    if (MT_LIKELY(mt_unrecord(p, kind, &e)))
        return freed_block(&e, c, early);
    if (MT_UNLIKELY(e.ptr != 0))
        return false; /* the program's own pool's: never the allocator's */
    if (!mt_quarantine_on)
        return true;
    mt_quarantine_idle_free(); /* after a detach, most frees come here */
    return mt_unheld(p);
}

/* ---- the next allocator */

/* An allocating entry point's call: P = CALL (its next function, HOW),
 * then P recorded with SIZE and KIND when TRACED (!mt_bypass(), taken
 * before), else passed on untraced. The call is written in each branch so
 * that the traced path is straight code (TRACED is often a constant or
 * tested just before). A block the entry point must make without its
 * next function (inside memtrace, before the real allocator is known) is
 * the caller's business, before this. */
#define MT_NEXT_ALLOC(how, traced, p, call, size, kind) \
    MT_NEXT_ALLOC_BY(mt_record_block, how, traced, p, call, size, kind)

/* MT_NEXT_ALLOC recording the block with RECORD (mt_record_block's
 * signature): an entry point may record inline (mt_malloc). */
#define MT_NEXT_ALLOC_BY(record, how, traced, p, call, size, kind) \
    do {                                                           \
        if (MT_LIKELY(traced)) {                                   \
            MT_HELD_SCOPE;                                         \
            MT_NEXT_CALL(how, (p) = (call), (p) != NULL);          \
            if (MT_LIKELY((p) != NULL))                            \
                record((p), (size), (kind));                       \
        } else {                                                   \
            MT_NEXT_CALL(how, (p) = (call), (p) != NULL);          \
            if ((how) == MT_NEXT_PLAIN)                            \
                mt_untraced(p);                                    \
            else                                                   \
                mt_untraced_entry(p);                              \
        }                                                          \
    } while (0)

/* A freeing entry point's call: FC (an mt_free_call: its next function
 * and arguments as data) frees PTR, a block of family KIND (MT_KIND_*).
 * Recording or paused, PTR's record leaves first (mt_release_by): once freed,
 * the address can be handed to another thread, whose new record must not
 * be the one removed; the block may then wait in quarantine, and FC is
 * made when it leaves. Else (start-up, a pass-through scope, a fork
 * window, a signal handler inside a held call: mt_held) its record, if
 * any, stays behind, stale, and FC is made only
 * when KNOWN (false before the real allocator is known: the block cannot
 * be its). A block of the guard pages' pool (guard.h) goes back there
 * instead, at once (it has no redzone, and its page is its quarantine). */
#define MT_NEXT_FREE(ptr, kind, known, fc) MT_NEXT_FREE_BY(mt_freed_block, ptr, kind, known, fc)

/* MT_NEXT_FREE with FREED_BLOCK (mt_release_by's). */
#define MT_NEXT_FREE_BY(freed_block, ptr, kind, known, fc)             \
    do {                                                               \
        if (mt_free_own(ptr))                                          \
            break;                                                     \
        if (MT_UNLIKELY(mt_guard_owns(ptr))) {                         \
            mt_guard_free((ptr), (kind));                              \
            break;                                                     \
        }                                                              \
        mt_free_call mt_fc_ = (fc);                                    \
        if (MT_LIKELY(mt_atomic_load_acquire(&mt_phase) >= MT_READY && \
                      !(mt_passthrough | mt_held))) {                  \
            MT_HELD_SCOPE;                                             \
            if (mt_release_by(freed_block, (ptr), (kind), &mt_fc_))    \
                mt_free_call_run((ptr), &mt_fc_);                      \
        } else if (known) {                                            \
            if (MT_UNLIKELY(mt_cfg.sample)) /* no stale mark behind */ \
                mt_shadow_forget(ptr);                                 \
            mt_free_call_run((ptr), &mt_fc_);                          \
            mt_untraced_free();                                        \
        }                                                              \
    } while (0)

/* ---- shared by the families */

/* A free of P, a pointer in the guard pages' pool (guard.h), by a function
 * of family KIND (malloc.c): its record leaves as in any free (a bad free
 * is reported the same way), the slot keeps the allocation's and the
 * free's stacks for the fault handler, and the page becomes inaccessible.
 * A pointer that is no live block's start changes nothing more. */
void mt_guard_free(void *p, unsigned kind);

/* realloc of P, a pointer in the pool (malloc.c): a new block (sampled or
 * not) with the contents, then P freed; SIZE 0 frees P and answers NULL,
 * as glibc's realloc does. */
void *mt_guard_realloc(void *p, size_t size);

/* realloc through FN (malloc.c): glibc's, or another allocator's with
 * realloc's contract (tc_realloc). */
void *mt_realloc_next(void *(*fn)(void *, size_t), void *ptr, size_t size);

/* A free by the next definition mt_ext[I] taking PTR and ARGS (0 to 2)
 * words more, A and B (free_sized, free_aligned_sized, tc_free_sized...),
 * or by free when there is none (malloc.c). */
void mt_free_next(unsigned i, void *ptr, size_t a, size_t b, int args);

/* realloc through FN of PTR, the unsampled block B (malloc.c): its tag
 * count leaves, the new block is sampled or not as any allocation. */
void *mt_sample_realloc(void *(*fn)(void *, size_t), void *ptr, size_t size,
                        const mt_sample_block *b);

/* posix_memalign through FN (aligned_sized.c): glibc's or tc_posix_memalign. */
int mt_posix_memalign_next(int (*fn)(void **, size_t, size_t), void **out, size_t align,
                           size_t size);

/* The aligned entry points that return the block (aligned_sized.c): through FN
 * (ALIGN, SIZE) when not NULL (they differ in what they accept), else
 * posix_memalign with the alignment ALIGN they imply. */
void *mt_aligned_next(void *(*fn)(size_t, size_t), size_t align, size_t size);

#endif
