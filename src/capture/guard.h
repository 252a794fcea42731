/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sampled guard pages (MEMTRACE_GUARD_SAMPLE=N, GWP-ASan's idea): one
 * traced allocation in N of each thread is placed in a pool of slots
 * mapped once at start-up, each slot one data page between two
 * inaccessible guard pages:
 *
 *   pool: G D0 G D1 G ... G D(S-1) G     (2S + 1 pages, S = MEMTRACE_GUARD_SLOTS)
 *
 * A block sits at the end of its data page (right-aligned, as low as the
 * alignment it needs asks: glibc's 16 bytes at least, whatever its size)
 * or, every other block a thread places, at its start (left-aligned), so
 * that the first access past its end, or before its start, touches a
 * guard page and faults; the rest of its page, before and after it, is
 * filled with the redzone byte and checked at its free. A freed block's
 * page is made inaccessible, its bytes kept; slots are reused oldest
 * freed first (FIFO) once every slot was used once, so a freed page stays
 * inaccessible for as long as the pool allows. When no slot is free the
 * allocation is made by the real allocator as usual. The fault is
 * explained by runtime/guard_signal.c.
 *
 * Invariants: the pool's address range never changes once published
 * (mt_guard_lo, mt_guard_len; 0 and 0 when the guard is off, so
 * mt_guard_owns is false for every pointer); a slot is LIVE exactly while
 * its block is the program's, and its data page is accessible exactly
 * then; a slot enters the FIFO only after its page was made inaccessible.
 * The slot table is written under the pool's lock; the fault handler
 * reads it without (a stale slot only makes the report name an older
 * block). */
#ifndef MT_GUARD_H
#define MT_GUARD_H

#include "base/common.h"
#include "base/hot.h"
#include "store/stack_store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A slot's block, as the frees and the fault handler see it. */
enum { MT_GUARD_NEVER, MT_GUARD_LIVE, MT_GUARD_FREED };
typedef struct {
    int state;       /* MT_GUARD_*: of the slot chosen */
    uintptr_t start; /* the block */
    uint64_t size;
    /* FREED: the block's record as it left the live table (alloc_stack 0:
     * it had none), and its free */
    uint64_t alloc_seq, free_seq;
    uint32_t alloc_thread, free_thread;
    mt_stack_id alloc_stack, free_stack;
    /* FREED: the page is the redzone byte but for the block's bytes (its
     * redzones were found intact, or mended, at the free) */
    bool tidy;
} mt_guard_block;

/* Allocations left before this thread's next sampled one; 0 means "ask
 * mt_guard_alloc", which sets it again (to N - 1, or to UINT32_MAX when the
 * guard is off: a thread then asks once in 2^32 allocations). */
/* mt_guard_left: a member of base/hot.h's mt_hot. */
extern uintptr_t mt_guard_lo MT_HIDDEN, mt_guard_len MT_HIDDEN;

/* A block of SIZE bytes aligned to ALIGN (a power of two; 0: malloc's) in
 * the pool, or NULL (not this one's turn, the guard off, SIZE too large
 * for a page, no free slot): the caller then allocates as usual. */
void *mt_guard_alloc(size_t size, size_t align);

/* The sampled allocation of an entry point that traces this call: NULL
 * unless this thread's countdown ran out (the cost of the guard on every
 * allocation: a thread-local decrement and a branch). */
static inline void *mt_guard_take(bool traced, size_t size, size_t align)
{
    if (MT_LIKELY(!traced || mt_guard_left-- != 0))
        return NULL;
    return mt_guard_alloc(size, align);
}

/* CALL, or the sampled block when it is this allocation's turn. */
#define MT_GUARD_OR(traced, size, align, call)                        \
    ({                                                                \
        void *mt_guard_p_ = mt_guard_take((traced), (size), (align)); \
        mt_guard_p_ ? mt_guard_p_ : (call);                           \
    })

/* True if P is in the pool (a range check: false for every pointer when
 * the guard is off). */
static inline bool mt_guard_owns(const void *p)
{
    return (uintptr_t)p - mt_guard_lo < mt_guard_len;
}

/* The slot of the live block starting at P, now FREEING (no other thread
 * frees it again), or NULL when P is no live block's start in the pool
 * (freed already, inside a block, a guard page) or when the pool's lock
 * could not be taken (*LOST: a lock a forked child inherited held). */
mt_guard_block *mt_guard_claim(const void *p, bool *lost);

/* The bytes of S's page after its block (its slack, LEN bytes, filled
 * with the redzone byte at the allocation) that differ from it, from
 * FIRST to END (offsets from the block's end); false when none does. S
 * is live or claimed (its page accessible). */
bool mt_guard_slack(const mt_guard_block *s, size_t *first, size_t *end, size_t *len);

/* The same for the bytes of S's page before its block (LEN bytes, the
 * page's start to the block's; FIRST and END offsets from the page's
 * start): an underflow of a right-aligned block. */
bool mt_guard_head(const mt_guard_block *s, size_t *first, size_t *end, size_t *len);

/* The live block P of the pool resized in its page to SIZE bytes (at
 * most a page; its redzones checked by the caller): a left-aligned block
 * keeps its start, a right-aligned one moves with its bytes so that its
 * end stays next to the guard page; what it held outside its new bytes is
 * the redzone byte again. Its new start. No system call: a realloc of a
 * pool block costs no mprotect. */
void *mt_guard_resize(const void *p, size_t size);

/* The pool's page size (the largest block it holds). */
size_t mt_guard_page_size(void);

/* Whether the MT_GUARD_NEAR bytes of S's page before its block, or the
 * MT_GUARD_NEAR after it, differ from the redzone byte: the free's check
 * (a linear overflow or underflow passes through them; reading the whole
 * page at every free cost as much as the rest of the free). */
#define MT_GUARD_NEAR 256
bool mt_guard_near_damage(const mt_guard_block *s);

/* Fills the rest of claimed S's page, before and after its block, with
 * the redzone byte again (after a report of its damage). */
void mt_guard_mend(const mt_guard_block *s);

/* Makes the page of S, claimed, inaccessible and S the newest freed slot.
 * TIDY: the caller found the rest of its page intact or mended it (the
 * slot's next block then fills only where this one was). */
void mt_guard_release(mt_guard_block *s, bool tidy);

/* The live block starting at P (its size is the size the program asked
 * for), or NULL: P is no live block's start in the pool. */
const mt_guard_block *mt_guard_live(const void *p);

/* Whether P is the start of a freed block of the pool (being freed or
 * freed, its slot not reused yet): a second free of it. */
bool mt_guard_freed(const void *p);

/* Sets the pool up (runtime/guard_signal.c, at start-up, after the
 * settings): EVERY (MEMTRACE_GUARD_SAMPLE) > 0 and SLOTS slots. False,
 * with the guard off, when the pool cannot be mapped. */
bool mt_guard_init(unsigned long every, unsigned long slots);

/* The block ADDR (in the pool) belongs to: in a data page, its slot's
 * block; in a guard page, the block of the two around it that lies nearer
 * (the one right-aligned before it or left-aligned after it, by distance);
 * false when neither slot was ever used. */
bool mt_guard_block_at(uintptr_t addr, mt_guard_block *out);

#endif
