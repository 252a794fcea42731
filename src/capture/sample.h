/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sampled tracing (MEMTRACE_SAMPLE=RATE): the hot path's side.
 *
 * Which blocks: each thread counts down the bytes it allocates from an
 * interval drawn from an exponential distribution of mean RATE (its own
 * generator, no shared state); the allocation that reaches zero is sampled
 * and a new interval drawn: tcmalloc's and Go's Poisson process, so that a
 * block of SIZE bytes is sampled with probability 1 - exp(-SIZE/RATE)
 * (store/sample_weight.h scales the samples back up).
 *
 * A sampled block is traced as in full mode (unwound, recorded, redzone,
 * quarantine). An unsampled one is not recorded anywhere shared, but its
 * free must still tell it apart from a sampled or foreign block and know
 * its size (the exact live total) and, with tags in use, its tag id. It
 * says so in one of two ways:
 *
 * The shadow (glibc's allocator next, tags not in use when the block was
 * allocated, SIZE below MT_SHADOW_SIZE_MAX): the block is not padded at
 * all. One byte per 32 bytes of address space, outside the heap, holds
 * the block's mark: glibc's blocks start 16-aligned and at least 32 bytes
 * apart (a chunk is at least 32 bytes), so no two live blocks share a
 * byte. The mark is
 *   0x80 | bit 4 of P << 6 | bit 4 of the chunk size << 5 | slack
 * (slack: glibc's usable size less SIZE, 0 .. 31; the usable size is read
 * from the chunk header at free). The shadow is mapped lazily per 4 GiB of
 * address space (mt_shadow_dir; MAP_NORESERVE, left out of cores): the
 * pages touched are 1/32 of the heap's at most. A byte that is not a
 * mark (0: a sampled, foreign or freed block), a pointer not at the block's
 * start (bit 4, 16-alignment), a chunk header that is no live small chunk
 * of glibc's or whose size moved by an odd multiple of 16 since (bit 4
 * of the chunk size) says "not shadowed", and the free goes on as below. A block's
 * mark is cleared before glibc gets the block back (free, realloc) and when
 * a block is recorded, so that a stale mark never meets a later block.
 * Nothing a program writes into its blocks (an overflow into the slack)
 * changes what the shadow says. Only glibc's chunks are ever marked, and
 * only after start-up: the internal heap's and the guard pool's ranges,
 * reserved at start-up for good, never hold a mark, nor does NULL's byte
 * (no chunk starts below 32), so a free reads the byte before it tests
 * for those (sample_fast.h).
 *
 * The trailer (otherwise: tags in use, another allocator, a large block):
 * the last MT_TRAILER bytes of its usable size (the next allocator's
 * malloc_usable_size), that the next allocator was asked for on top of
 * SIZE (and of the redzone, for a sampled block):
 *   info  = tag id | kind << 32 | slack << 34 (slack: usable - MT_TRAILER - SIZE)
 *   check = ((P ^ key) * K) ^ info, key a random word of the process.
 * A free reads the usable size and the trailer; a check that matches says
 * "unsampled" (a block memtrace did not hand out, or a sampled one, matches
 * by chance with probability 2^-64): the tag count is taken off, the check
 * cleared (a stale trailer must not match a later block at the address)
 * and the block freed, all in the freeing thread's own lines. A sampled
 * block's check word is cleared when it is recorded, for the same reason.
 *
 * The decision is taken in mt_padded (before the next allocator's call,
 * which must get the padding) and kept for mt_record_block, after the call,
 * in a thread-local word: nothing between the two allocates traced. */
#ifndef MT_SAMPLE_H
#define MT_SAMPLE_H

#include "base/common.h"
#include "base/hot.h"
#include "base/config.h"
#include "capture/guard.h"
#include "capture/state.h"
#include "store/sample_weight.h"
#include "tags/tags.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define MT_TRAILER 16
#define MT_TRAILER_K 0x9E3779B97F4A7C15ull
#define MT_TRAILER_SLACK_MAX ((UINT64_C(1) << 30) - 1)

/* What mt_sample_padded decided for the allocation under way: sampled,
 * unsampled with a trailer (NO), unsampled in the shadow (NO_SHADOW). */
enum { MT_SAMPLE_NONE, MT_SAMPLE_NO, MT_SAMPLE_YES, MT_SAMPLE_NO_SHADOW };

/* The process's random key: the trailers' checks. */
extern uint64_t mt_sample_key MT_HIDDEN;

/* ---- the shadow (see above) */

#define MT_SHADOW_SIZE_MAX ((size_t)65536) /* below glibc's smallest mmap threshold */
#define MT_SHADOW_ADDR_BITS 47
#define MT_SHADOW_REGION_BITS 32
#define MT_SHADOW_REGIONS ((size_t)1 << (MT_SHADOW_ADDR_BITS - MT_SHADOW_REGION_BITS))
#define MT_SHADOW_SHIFT 5 /* one byte per 32 bytes */
#define MT_SHADOW_ON 0x80u
#define MT_SHADOW_SLACK_MAX 31u

/* Region R's shadow (2^27 bytes for the 4 GiB at R << 32), or NULL while
 * no block there was shadowed. Published with release once mapped, never
 * unmapped or moved. */
extern uint8_t *mt_shadow_dir[MT_SHADOW_REGIONS] MT_HIDDEN;
/* MT_SHADOW_SIZE_MAX in sample mode with glibc's allocator next while
 * tags are not in use, else 0: the blocks below it are shadowed
 * (mt_sample_start; 0 from mt_shadow_tags on, never raised again). */
extern mt_atomic(size_t) mt_shadow_limit MT_HIDDEN;

/* Whether a block of SIZE bytes about to be allocated goes in the shadow:
 * small, and no tag to keep (tags never used yet, which the limit says
 * too: one load; a thread that starts using them between this test and
 * the count counts the block in no tag, as if it were allocated just
 * before). */
static inline bool mt_shadow_wanted(size_t size)
{
    return size < mt_atomic_load_relaxed(&mt_shadow_limit);
}

/* Tags may have come into use (tags/tags.h's mt_tags_used): if they
 * did, no block goes in the shadow from now (mt_shadow_limit 0). Called
 * by whatever may put tags in use, after (cold; the runtime layer's tag
 * push and the MEMTRACE_TAGS start-up), and by mt_sample_start. */
void mt_shadow_tags(void);

/* The shadow byte of address A, or NULL when its region has none. */
static inline uint8_t *mt_shadow_at(uintptr_t a)
{
    uintptr_t r = a >> MT_SHADOW_REGION_BITS;
    if (MT_UNLIKELY(r >= MT_SHADOW_REGIONS))
        return NULL;
    uint8_t *s = __atomic_load_n(&mt_shadow_dir[r], __ATOMIC_ACQUIRE);
    return s ? s + ((uint32_t)a >> MT_SHADOW_SHIFT) : NULL;
}

/* mt_shadow_at, mapping the region's shadow first if need be (cold, once
 * per 4 GiB: one mmap); NULL when that fails. */
uint8_t *mt_shadow_make(uintptr_t a);

/* The mark of the block at A whose glibc chunk size is SZ, SLACK bytes
 * usable past its size (<= MT_SHADOW_SLACK_MAX). Bit 4 of A tells the
 * block's start from a pointer 16 bytes away; bit 4 of SZ tells its chunk
 * size from any other by an odd multiple of 16 (a header rewritten to a
 * neighbouring size class: glibc itself frees such a chunk into the
 * wrong bin without a word). */
static inline uint8_t mt_shadow_mark(uintptr_t a, size_t sz, size_t slack)
{
    return (uint8_t)(MT_SHADOW_ON | (a & 16) << 2 | (sz & 16) << 1 | slack);
}

/* True when P, whose shadow byte is S, is a shadowed block: *AT its shadow
 * byte, *SIZE its size, *MARK its mark. Reads the shadow byte and, only when it is a mark, the
 * chunk header (P is then a block's start, or was one: a glibc chunk
 * still or again, the header readable). */
static inline __attribute__((always_inline)) bool mt_shadow_match(void *p, uint8_t *s, uint8_t **at,
                                                                  size_t *size, uint8_t *mark)
{
    uintptr_t a = (uintptr_t)p;
    unsigned v = __atomic_load_n(s, __ATOMIC_RELAXED);
    if (!(v & MT_SHADOW_ON) || (a & 15))
        return false;
    /* not mmapped, a multiple of 16 (bit 3 clear), 32 .. 2^44 + 16: a
     * live small chunk's header (one test: H - 32 keeps H's flag bits, and
     * wraps to above 2^44 when the size is below 32); its bit 4 and P's as
     * the mark says (bits 6 and 5 of V against bit 4 of A, 16-aligned, and
     * of H: mt_shadow_mark's, without rebuilding the mark) */
    size_t h = ((const size_t *)p)[-1];
    if (MT_UNLIKELY((h - 32) & (~(((size_t)1 << 44) - 1) | MT_GLIBC_MMAPPED | 8)) ||
        MT_UNLIKELY((v ^ (a << 2) ^ (h & 16) << 1) & 0x60))
        return false;
    *at = s;
    *size = (h & ~(size_t)7) - 8 - (v & MT_SHADOW_SLACK_MAX); /* sz >= 32, slack <= 31 */
    *mark = (uint8_t)v;
    return true;
}

/* mt_shadow_match of P's own byte, if it has one. */
static inline __attribute__((always_inline)) bool mt_shadow_read(void *p, uint8_t **at,
                                                                 size_t *size, uint8_t *mark)
{
    uint8_t *s = mt_shadow_at((uintptr_t)p);
    return s != NULL && mt_shadow_match(p, s, at, size, mark);
}

/* Marks P, a block glibc has just handed out for SIZE bytes, shadowed
 * without a call, counting it live: false, with nothing changed, when
 * that needs a call (its region's shadow to map, a live-bytes flush) or
 * cannot be (a mmapped chunk, a slack the mark cannot hold). */
static inline __attribute__((always_inline)) bool mt_shadow_try(void *p, size_t size)
{
    uintptr_t a = (uintptr_t)p;
    size_t h = ((const size_t *)p)[-1], sz = h & ~(size_t)7;
    size_t slack = sz - 8 - size; /* wraps when SIZE does not fit: refused below */
    if (MT_UNLIKELY(h & MT_GLIBC_MMAPPED) || MT_UNLIKELY(slack > MT_SHADOW_SLACK_MAX))
        return false;
    uint8_t *s = mt_shadow_at(a);
    if (MT_UNLIKELY(s == NULL) || MT_UNLIKELY(!mt_live_alloc_try(size)))
        return false;
    __atomic_store_n(s, mt_shadow_mark(a, sz, slack), __ATOMIC_RELAXED);
    return true;
}

/* mt_shadow_try's general form, for P of family KIND: true when P is now
 * shadowed and counted, or, when its slack is too large for the mark (a
 * chunk glibc grew in place by a realloc, an aligned one, a mmapped one),
 * carries a trailer in that slack; false when neither can be (the caller
 * records it as a sample). */
bool mt_shadow_put(void *p, size_t size, unsigned kind);

/* Clears P's shadow byte, if it has one (a block about to be recorded, or
 * freed untraced: no stale mark may stay behind). */
static inline void mt_shadow_forget(void *p)
{
    uint8_t *s = mt_shadow_at((uintptr_t)p);
    if (s != NULL && __atomic_load_n(s, __ATOMIC_RELAXED) != 0)
        __atomic_store_n(s, 0, __ATOMIC_RELAXED);
}

/* mt_sample_me, the thread's mt_sample_thread: a member of base/hot.h's
 * mt_hot. */

/* Reads the settings' rate and seed (start-up, before any traced call). */
void mt_sample_start(void);

/* The slow path of mt_sample_take: the thread's first draw, or a sample. */
bool mt_sample_draw(size_t size);

/* Whether the next SIZE bytes this thread allocates hold a sample. */
static inline bool mt_sample_take(size_t size)
{
    int64_t left = mt_sample_me.left - (int64_t)size;
    if (MT_LIKELY(left > 0)) {
        mt_sample_me.left = left;
        return false;
    }
    return mt_sample_draw(size);
}

/* mt_padded in sample mode: SIZE (<= PTRDIFF_MAX) with the trailer, and
 * the redzone too when the block is sampled. */
static inline size_t mt_sample_padded(size_t size, size_t redzone)
{
    if (mt_sample_take(size)) {
        mt_sample_me.pending = MT_SAMPLE_YES;
        return size + MT_TRAILER + redzone;
    }
    if (MT_LIKELY(mt_shadow_wanted(size))) {
        mt_sample_me.pending = MT_SAMPLE_NO_SHADOW;
        return size;
    }
    mt_sample_me.pending = MT_SAMPLE_NO;
    return size + MT_TRAILER;
}

static inline uint64_t mt_trailer_check(const void *p, uint64_t info)
{
    return (((uintptr_t)p ^ mt_sample_key) * MT_TRAILER_K) ^ info;
}

/* An unsampled block as its trailer or its shadow byte describes it. */
typedef struct {
    size_t size, usable; /* usable: the trailer's block's */
    uint32_t id;         /* 0 for a shadowed block */
    unsigned kind;
    uint8_t *shadow; /* a shadowed block's byte, else NULL */
    uint8_t mark;    /* the byte's mark */
} mt_sample_block;

/* What the next allocator was asked for on top of B's size: what a sized
 * free of B passes on top. */
static inline size_t mt_sample_pad(const mt_sample_block *b)
{
    return b->shadow ? 0 : MT_TRAILER;
}

/* True in sample mode when the next allocator is glibc's (mt_sample_start;
 * false outside sample mode, so that one test says both): its usable
 * sizes are then read inline from the chunk header. */
extern bool mt_sample_glibc MT_HIDDEN;

/* The next allocator's usable size of P, a block it handed out; 0 for a
 * pointer that cannot be a block's start. glibc's: the size word before P
 * (flags in its 3 low bits) less the header word(s), as its
 * malloc_usable_size computes it for a live chunk, without the call and
 * without the read of the next chunk's header. A pointer that is no block
 * (a bad free) gives 0 or a size whose trailer read stays within what
 * glibc's own free of P reads (the next chunk's header). */
static inline size_t mt_glibc_usable(void *p)
{
    if ((uintptr_t)p & 15)
        return 0;
    size_t h = ((const size_t *)p)[-1], sz = h & ~(size_t)7;
    if (MT_UNLIKELY(sz < 32 || (sz & 15) || sz > ((size_t)1 << 44)))
        return 0;
    return h & MT_GLIBC_MMAPPED ? sz - 16 : sz - 8;
}

static inline size_t mt_sample_usable(void *p)
{
    if (MT_LIKELY(mt_sample_glibc))
        return mt_glibc_usable(p);
    return mt_real.next_malloc_usable_size(p);
}

/* True when P, of usable size U (mt_sample_usable's), is an unsampled
 * block: *B says what its trailer says. */
static inline __attribute__((always_inline)) bool mt_trailer_read(void *p, size_t u,
                                                                  mt_sample_block *b)
{
    if (MT_UNLIKELY(u < MT_TRAILER))
        return false;
    uint64_t w[2];
    memcpy(w, (char *)p + u - MT_TRAILER, sizeof w);
    if (w[0] != mt_trailer_check(p, w[1]))
        return false;
    b->usable = u;
    b->shadow = NULL;
    b->id = (uint32_t)w[1];
    b->kind = (unsigned)(w[1] >> 32) & 3;
    b->size = u - MT_TRAILER - (size_t)(w[1] >> 34);
    return true;
}

/* True when P (not NULL, the next allocator's) is an unsampled block: *B
 * says what its trailer says. */
static inline __attribute__((always_inline)) bool mt_sample_unsampled(void *p, mt_sample_block *b)
{
    if (mt_shadow_read(p, &b->shadow, &b->size, &b->mark)) {
        b->usable = 0;
        b->id = 0;
        b->kind = 0;
        return true;
    }
    return mt_trailer_read(p, mt_sample_usable(p), b);
}

/* Clears the check of the trailer slot of P, usable size U. */
static inline void mt_trailer_clear(void *p, size_t u)
{
    uint64_t zero = 0;
    memcpy((char *)p + u - MT_TRAILER, &zero, sizeof zero);
}

/* Takes B's mark off P (its trailer's check or its shadow byte): before
 * the next allocator frees or moves P. */
static inline void mt_sample_unmark(void *p, const mt_sample_block *b)
{
    if (b->shadow)
        __atomic_store_n(b->shadow, 0, __ATOMIC_RELAXED);
    else
        mt_trailer_clear(p, b->usable);
}

/* The free of P in sample mode: true when P was an unsampled block, now
 * counted freed (its tag), its mark taken off, *PAD what a sized free
 * adds (mt_sample_pad); the caller frees it. */
static inline bool mt_sample_free(void *p, size_t *pad)
{
    mt_sample_block b;
    if (MT_LIKELY(mt_sample_unsampled(p, &b))) {
        mt_tag_free(b.id, b.size);
        mt_sample_unmark(p, &b);
        *pad = mt_sample_pad(&b);
        return true;
    }
    return false;
}

/* mt_sample_free_try by P's shadow mark alone: 1 when P was shadowed and
 * is now counted freed, its mark taken off; 0, with nothing changed, when
 * that needs a call (the live bytes flush); -1 when P has no mark. */
static inline __attribute__((always_inline)) int mt_shadow_free_try(void *p)
{
    uint8_t *at, mark;
    size_t size;
    if (!mt_shadow_read(p, &at, &size, &mark))
        return -1;
    if (MT_UNLIKELY(!mt_live_free_try(size)))
        return 0;
    __atomic_store_n(at, 0, __ATOMIC_RELAXED);
    return 1;
}

/* mt_shadow_free_try's twin, by P's trailer (P not NULL); TAGS as
 * mt_tag_free_try's USED. */
static inline __attribute__((always_inline)) int mt_trailer_free_try(void *p, bool tags)
{
    mt_sample_block b;
    if (!mt_trailer_read(p, mt_glibc_usable(p), &b))
        return -1;
    if (MT_UNLIKELY(!mt_tag_free_try(b.id, b.size, tags)))
        return 0;
    mt_trailer_clear(p, b.usable);
    return 1;
}

/* mt_sample_free without a call, when mt_sample_glibc is true, inlined
 * whole: it is the fast path's free (sample_fast.h), a leaf. False, with
 * nothing changed, when P is no unsampled block or when its free needs a
 * call (the live bytes flush): the caller then calls mt_sample_free, or
 * the general path, which does.
 *
 * An unsampled block has a shadow mark or a trailer, not both (a
 * shadowed block's trailer slot is the program's, and matches a check but
 * with probability 2^-64, as any foreign block's), so the order of the
 * two reads changes no answer: the shadow first, unless tags are in use,
 * when the blocks allocated since all carry trailers (mt_shadow_wanted)
 * and reading the shadow first would cost each of their frees a miss. */
static inline __attribute__((always_inline)) bool mt_sample_free_try(void *p)
{
    int r;
    /* Acquire: tags seen in use, the node array is seen mapped. */
    if (MT_UNLIKELY(mt_atomic_load_acquire(&mt_tags_used))) {
        r = mt_trailer_free_try(p, true);
        return r >= 0 ? r : mt_shadow_free_try(p) > 0;
    }
    r = mt_shadow_free_try(p);
    return r >= 0 ? r : mt_trailer_free_try(p, false) > 0;
}

/* Writes the trailer of P (usable size USABLE >= SIZE + MT_TRAILER, slack
 * at most MT_TRAILER_SLACK_MAX): a SIZE-byte block of family KIND counted
 * in tag node ID. */
static inline void mt_trailer_write(void *p, size_t usable, size_t size, uint32_t id, unsigned kind)
{
    uint64_t w[2];
    w[1] = id | (uint64_t)kind << 32 | (uint64_t)(usable - MT_TRAILER - size) << 34;
    w[0] = mt_trailer_check(p, w[1]);
    memcpy((char *)p + usable - MT_TRAILER, w, sizeof w);
}

/* True when usable size U holds SIZE bytes and the trailer with a slack
 * the trailer can hold (SIZE + MT_TRAILER does not overflow). */
static inline bool mt_trailer_fits(size_t u, size_t size)
{
    /* one test for both: a U below SIZE + MT_TRAILER makes the slack wrap
     * to above MT_TRAILER_SLACK_MAX */
    return MT_LIKELY(u - MT_TRAILER - size <= MT_TRAILER_SLACK_MAX);
}

/* Writes the trailer of P, a block of the next allocator's with usable
 * size U, for a SIZE-byte block of family KIND (SIZE + MT_TRAILER does not
 * overflow), and counts it in the current tag: true, or false when U
 * leaves no room for the trailer or a slack it cannot hold (the caller
 * then records the block as a sample). */
static inline __attribute__((always_inline)) bool mt_trailer_try(void *p, size_t u, size_t size,
                                                                 unsigned kind)
{
    if (MT_UNLIKELY(!mt_trailer_fits(u, size)))
        return false;
    mt_trailer_write(p, u, size, mt_tag_alloc(size), kind);
    return true;
}

/* Puts B's mark back on P (a resize that failed after mt_sample_unmark). */
void mt_sample_remark(void *p, const mt_sample_block *b);

/* A block the caller records (sampled, on a guard page, or not padded
 * for a trailer): its trailer slot, if it has room for one, is cleared. */
void mt_sample_sampled(void *p, size_t size);

/* A block P of SIZE bytes and family KIND just allocated traced in sample
 * mode: true when it is unsampled and now carries its trailer or its
 * shadow mark (counted in its tag); false when the caller must record it
 * (sampled, or its slack too large for the trailer or the mark: then
 * recorded as a sample, which only adds to the estimates' noise). */
static inline bool mt_sample_trail(void *p, size_t size, unsigned kind)
{
    int pending = mt_sample_me.pending;
    mt_sample_me.pending = MT_SAMPLE_NONE;
    if (MT_LIKELY(pending == MT_SAMPLE_NO_SHADOW) && !mt_guard_owns(p) &&
        (mt_shadow_try(p, size) || mt_shadow_put(p, size, kind)))
        return true;
    if (pending == MT_SAMPLE_NO && !mt_guard_owns(p) &&
        mt_trailer_try(p, mt_sample_usable(p), size, kind))
        return true;
    mt_sample_sampled(p, size);
    return false;
}

#endif
