/* What the hot path (tracer.c) shares with start-up (startup.c): the real
 * allocator's functions and the tracer's phase. startup.c fills them in
 * once, before the phase becomes READY; the hot path only reads them. */
#ifndef MT_REAL_H
#define MT_REAL_H

#include "atomic.h"
#include "common.h"
#include "live_table.h"

#include <stddef.h>
#include <stdint.h>

/* The next allocator in lookup order (RTLD_NEXT): glibc's, or whatever the
 * program preloaded after memtrace. Written before the phase leaves
 * UNINIT's start-up (release on mt_phase), read after an acquire of it. */
typedef struct {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*malloc_usable_size)(void *);
} mt_real_allocator;

extern mt_real_allocator mt_real MT_HIDDEN;

/* UNINIT -> INITIALIZING -> READY, and to STOPPED from INITIALIZING or
 * READY when a metadata mapping fails: new blocks then go unrecorded,
 * records of freed blocks are still removed. Never back. */
enum { MT_UNINIT, MT_INITIALIZING, MT_READY, MT_STOPPED };
extern mt_atomic(int) mt_phase MT_HIDDEN;

/* Set in the forking thread between memtrace's fork handlers: other
 * libraries' prepare handlers (run after memtrace's) may allocate while
 * memtrace's locks are held, so such calls go to the real allocator
 * untraced. */
extern MT_TLS int mt_forking MT_HIDDEN;

/* Looks up the real allocator and sets everything up, once (startup.c).
 * Called by the hot path on a call that finds the phase UNINIT, outside
 * memtrace (mt_busy clear). */
void mt_start(void);

/* A free the live table cannot match (bad_free.c, slow path): PTR is no
 * live block's start (FOUND NULL), or FOUND, its record (already removed),
 * was allocated by another family than the free's KIND (MT_KIND_*, with
 * MT_FREE_BY_REALLOC added when the call is realloc's). Says so if it is a
 * double free, a free inside a block or a mismatched pair; the caller then
 * hands the call to the real allocator unchanged. Called with mt_busy
 * clear, in the READY phase, before the real free. */
#define MT_FREE_BY_REALLOC 0x100u
void mt_bad_free(const void *ptr, unsigned kind, const mt_live_entry *found);

/* The allocation number last handed out (mt_next_seq - 1) when the real
 * allocator last returned or freed a block without memtrace recording it
 * while recording (a fork window), read after the real call returned and
 * stored before the program saw its result. Only grows. A freed-history
 * record whose free_seq is not above it may have been followed by such a
 * block at its address, and a live record whose seq is not above it may
 * be stale: neither is enough to call a free bad. */
extern mt_atomic(uint64_t) mt_untraced_seq MT_HIDDEN;

/* The allocation number the next recorded block gets (from 1). */
extern mt_atomic(uint64_t) mt_next_seq MT_HIDDEN;

#endif
