/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Freed history: a bounded ring of the most recently freed blocks, with the
 * stacks and threads that allocated and freed them. Answers "what was at this
 * dangling address", newest first. Best-effort: a record may be dropped
 * (see mt_freed_push), never torn. */
#ifndef MT_FREED_HISTORY_H
#define MT_FREED_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The stamp of a slot says who may trust it. The record pushed i-th (from
 * 0) lives in slot i % capacity; its stamp is
 * - i + 1 once it is complete (committed): the only value a reader trusts
 *   for that push;
 * - MT_FREED_WRITING | (i + 1) while its writer, which holds the slot
 *   alone, copies it in: never equal to a committed stamp, so a reader,
 *   inside the process or a debugger outside it, skips the slot;
 * - 0 if the slot was never written.
 * A slot's stamp goes from a committed value (or 0) to WRITING | (i + 1)
 * only by one writer's compare-and-swap, and from there only to i + 1, by
 * that writer.
 *
 * Push numbers are handed out to threads in blocks of mt_freed_block_size()
 * consecutive numbers (64 on a ring of at least 4,096 records, else 1):
 * a thread takes a block from the one shared count of blocks and pushes
 * into its own block's slots until it is used up, so two threads freeing
 * at once write no line in common (a block's 64 records are 64 lines of
 * their own). Push numbers are then not in the order of the frees across
 * threads; the clock stamp WHEN is: readers order by it. */
#define MT_FREED_WRITING ((uint64_t)1 << 63)

typedef struct {
    uint64_t stamp; /* see MT_FREED_WRITING */
    uintptr_t ptr;
    uint64_t size;
    uint64_t alloc_seq; /* the block's allocation number */
    uint64_t free_seq;  /* allocation numbers handed out before the free */
    uint32_t alloc_stack, free_stack;
    uint32_t alloc_thread, free_thread;
    uint64_t when; /* the free's time (mt_os_ticks), set by mt_freed_push:
                      rising within a thread; readers list records by it,
                      newest first (then by push number) */
} mt_freed_record;

/* Maps a ring of CAPACITY records; 0 disables the history. Called once,
 * before other threads use the history. */
void mt_freed_init(size_t capacity);
/* Whether the history is kept: set by mt_freed_init only, before other
 * threads use it, so a plain read (inline: asked on every free). */
extern bool mt_freed_on;
static inline bool mt_freed_enabled(void)
{
    return mt_freed_on;
}

/* Appends R (its stamp and when are ignored: the push sets them).
 * Lock-free: usually one compare-and-swap on a line of the thread's own
 * block, and one atomic add on the shared count once per block. A writer
 * never writes a slot another writer holds: if a slow writer still holds
 * the slot its push number maps to, it takes a new number (a few times at
 * most) and otherwise drops R; if a later push holds or has filled that
 * slot (the ring lapped the thread's block), the thread leaves its block
 * and takes a new one. So a reader never sees two writers' bytes mixed. */
void mt_freed_push(const mt_freed_record *r);

/* Calls FN for every record whose block covered ADDR (ptr <= ADDR < ptr +
 * size, or ADDR == ptr), newest first (by when, then push number);
 * returns how many. Lock-free; skips slots being written, and slots
 * rewritten while it copied them or before it called FN. */
size_t mt_freed_find(uintptr_t addr, void (*fn)(const mt_freed_record *, void *), void *ctx);

/* The same scan, which also calls FN with NEAR true for the newest NEAR_MAX
 * records whose block did not cover ADDR but lay at most NEAR_BYTES from it
 * (mt_block_gap), in the same newest-first order as the covering ones (NEAR
 * false). Returns how many covered ADDR. */
size_t mt_freed_find_around(uintptr_t addr, uint64_t near_bytes, unsigned near_max,
                            void (*fn)(const mt_freed_record *, bool near, void *), void *ctx);

/* Calls FN for every committed record pushed at or after push number FROM
 * that the ring still holds, oldest first (FN sees each push once across
 * calls that chain the returned number as the next FROM); returns the
 * number to start from next time: the first push of the window that was
 * not committed when read, whose slot no later push has taken (its
 * writer may still commit it) and that is among the newest 8,192 numbers
 * (a thread leaves a block once 1,024 numbers were handed out after it:
 * an older unwritten slot is only ever filled by a writer preempted that
 * long, whose record the caller then misses) or, if none, the count pushed. Lock-free, as
 * mt_freed_find; for readers that keep their own index over the ring (bad_free.c). */
uint64_t mt_freed_each_since(uint64_t from, void (*fn)(const mt_freed_record *, void *), void *ctx);

/* For the state descriptor: the ring, its capacity, and the push numbers
 * handed out so far (in blocks: the pushes of a block not yet made
 * included). */
const mt_freed_record *mt_freed_ring(size_t *capacity, uint64_t *pushed);

/* For the state descriptor: where the count of blocks of push numbers
 * handed out lives (times mt_freed_block_size(), the push numbers), so that a
 * reader outside the process can read only the slots pushed so far. Push
 * numbers a writer took and gave up (above), or has not used yet, leave
 * their slot to another push, whose stamp then does not match: the reader
 * skips it. */
const uint64_t *mt_freed_pushed(void);

/* Push numbers per block (see MT_FREED_WRITING); 1 before mt_freed_init. */
uint64_t mt_freed_block_size(void);

#endif
