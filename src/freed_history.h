/* Freed history: a bounded ring of the most recently freed blocks, with the
 * stacks and threads that allocated and freed them. Answers "what was at this
 * dangling address", newest first. */
#ifndef MT_FREED_HISTORY_H
#define MT_FREED_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t stamp; /* position in the ring's history + 1; 0 = never written */
    uintptr_t ptr;
    uint64_t size;
    uint64_t alloc_seq; /* the block's allocation number */
    uint64_t free_seq;  /* allocation numbers handed out before the free */
    uint32_t alloc_stack, free_stack;
    uint32_t alloc_thread, free_thread;
} mt_freed_record;

/* Maps a ring of CAPACITY records; 0 disables the history. */
void mt_freed_init(size_t capacity);
bool mt_freed_enabled(void);

/* Appends R (its stamp is set here). Lock-free; when writers lap a slow
 * writer on the same slot, readers skip the torn record by its stamp. */
void mt_freed_push(mt_freed_record *r);

/* Calls FN for every record whose block covered ADDR (ptr <= ADDR < ptr +
 * size, or ADDR == ptr), newest first; returns how many. */
size_t mt_freed_find(uintptr_t addr, void (*fn)(const mt_freed_record *, void *), void *ctx);

/* For the state descriptor: the ring, its capacity, and the count pushed. */
const mt_freed_record *mt_freed_ring(size_t *capacity, uint64_t *pushed);

/* For the state descriptor: where the count of pushes begun lives, so that
 * a reader outside the process can read only the slots pushed so far. */
const uint64_t *mt_freed_pushed(void);

#endif
