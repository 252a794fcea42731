/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The stack store: every distinct call stack stored once, named by a 32-bit
 * id. Stacks are never freed (call sites are finite), so a frame array read
 * through an id stays valid and unchanged for the life of the process. */
#ifndef MT_STACK_STORE_H
#define MT_STACK_STORE_H

#include "base/atomic.h"
#include "base/common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint32_t mt_stack_id; /* 0 means "no stack" */

/* MT_MAX_DEPTH (frames in a stack at most) is in common.h: settings check
 * MEMTRACE_DEPTH against it. */

/* Returns the id of FRAMES[0..DEPTH) (return addresses, innermost first),
 * storing it if new; 0 if the store could not grow. Lock-free when the stack
 * is already known; takes the store's lock only to add one. */
mt_stack_id mt_stack_intern(const uintptr_t *frames, unsigned depth);

/* Depth of stack ID and, in *FRAMES, its frames; 0 for an id that was never
 * handed out. Lock-free. */
unsigned mt_stack_get(mt_stack_id id, const uintptr_t **frames);

/* Words stored with every stack for its site (site.h): the profiler
 * build's one, the site's number, none in the tracer build. */
#ifdef MEMTRACE_PROFILER
#define MT_STACK_SITE_WORDS 1
#else
#define MT_STACK_SITE_WORDS 0
#endif

/* The MT_STACK_SITE_WORDS words stored with stack ID, or NULL for id 0 or
 * in a build without them. */
void *mt_stack_site_words(mt_stack_id id);

/* The chunk table (stack_store.c): entry C goes once from NULL to chunk C,
 * of 2^MT_STACK_CHUNK_BITS words. Here for mt_stack_site_number only. */
#define MT_STACK_CHUNK_BITS 19
extern mt_atomic(uint64_t *) mt_stack_chunks[] MT_HIDDEN;

/* The site number of stack ID: its ordinal among the stored stacks (0 for
 * the first; so numbers are dense and never reused), UINT32_MAX for id 0
 * or in a build without site words. Inline: the profiler reads it on every
 * allocation and free (a handed-out id always has its chunk; the acquire
 * load pairs with the chunk's release store, as in mt_stack_get). */
static inline uint32_t mt_stack_site_number(mt_stack_id id)
{
    if (MT_STACK_SITE_WORDS == 0 || id == 0)
        return UINT32_MAX;
    const uint64_t *chunk = mt_atomic_load_acquire(&mt_stack_chunks[id >> MT_STACK_CHUNK_BITS]);
    if (!chunk)
        return UINT32_MAX;
    return (uint32_t)chunk[(id & ((UINT32_C(1) << MT_STACK_CHUNK_BITS) - 1)) + 1];
}

/* Calls FN for every stored stack, in the order they were stored. Safe
 * while other threads intern: it sees the stacks stored before it began
 * and maybe some after. */
void mt_stack_foreach(void (*fn)(mt_stack_id id, const uintptr_t *frames, unsigned depth,
                                 void *ctx),
                      void *ctx);

/* Where mt_stack_foreach_new resumes: the place of the next record to
 * visit. Zeroed: the store's start. */
typedef struct {
    uint32_t chunk, word;
} mt_stack_cursor;

/* Calls FN, in the order they were stored, for every stack stored from *AT
 * on whose record is published, moving *AT past each stack FN accepts
 * (returns true); stops at the first it refuses, so that the next call
 * offers it again. Lock-free like mt_stack_foreach, but a walk repeated
 * with the same cursor reads only the records added since (a report's
 * walk must not read the whole store each time). */
void mt_stack_foreach_new(mt_stack_cursor *at,
                          bool (*fn)(mt_stack_id id, const uintptr_t *frames, unsigned depth,
                                     void *ctx),
                          void *ctx);

/* Number of distinct stacks stored. */
uint32_t mt_stack_count(void);
/* Bytes mapped for the store (frames and index). */
size_t mt_stack_mapped_bytes(void);

/* For the state descriptor (descriptor.c): the chunk table (max_chunks chunk
 * pointers, NULL past the last) and the record layout described at the top
 * of stack_store.c, for readers outside the process. */
typedef struct {
    const void *chunks;
    const uint32_t *count;
    uint32_t max_chunks, chunk_bits;
    uint32_t frames_offset; /* words from a record's header to its frames */
    uint32_t depth_mask;    /* of the header */
    uint64_t present_bit;   /* of the header */
} mt_stack_layout;
void mt_stack_describe(mt_stack_layout *out);

/* Held across fork. Returns whether it took the lock (see
 * mt_lock_acquire_unless_mine). */
bool mt_stack_lock(void);
void mt_stack_unlock(void);

#endif
