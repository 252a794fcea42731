/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The facts of the last error reports (heap errors and bad frees), kept
 * by the library in a ring that a reader out of process finds through the
 * state descriptor (descriptor.h's error_records): `memtrace last-error`
 * prints the last one, `memtrace check` lists the damaged blocks they
 * name. Plain words, the same layout in the library and the reader;
 * error_record_size tells a reader whether it knows the layout. */
#ifndef MT_ERROR_RECORD_H
#define MT_ERROR_RECORD_H

#include <stdint.h>

/* Records kept: the ring's slots; error N (1 on) is in slot (N - 1) % it. */
#define MT_ERROR_RECORDS 32
/* Frames of the stack a report was detected at, kept. */
#define MT_ERROR_FRAMES 32
/* A bad free's KIND is MT_ERROR_BAD_FREE + its MT_BAD_FREE_*; a heap
 * error's its MT_HEAP_*. */
#define MT_ERROR_BAD_FREE 16

typedef struct {
    uint64_t number; /* the error's number, 1 on; 0: the slot is being written, or empty */
    uint64_t kind, access;
    uint64_t ptr, size, addr; /* the block; ADDR: the pointer a bad free was given */
    int64_t offset;
    uint64_t bytes, at_least, freed;
    uint64_t alloc_seq, free_seq;
    uint32_t alloc_stack, free_stack;           /* stack-store ids */
    uint32_t alloc_thread, free_thread, thread; /* thread numbers */
    uint32_t depth;                             /* of FRAMES */
    char where[48];                             /* "free", "exit", "a fault on a guard page", ... */
    char call[16], alloc[16];                   /* a bad free's call and allocation function */
    uint64_t frames[MT_ERROR_FRAMES];           /* where it was detected, innermost first */
} mt_error_record;

#endif
