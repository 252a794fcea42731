/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Stack store: an append-only arena of records in 4 MiB chunks, plus an
 * open-addressed index of {hash, id} words.
 *
 * Invariants:
 * - a record is [header word][MT_STACK_SITE_WORDS site words: the stack's
 *   ordinal, written before the header][depth frame
 *   words] and never crosses a chunk; the header is hash32 << 32 |
 *   PRESENT | depth, and a zero header ends a chunk's records; id = chunk << CHUNK_BITS | word
 * offset, and chunk 0 word 0 is never used, so id 0 is free to mean "none";
 * - a record is fully written before its header and then its index slot
 *   are published (release), and only its counters change afterwards, so
 *   readers need no lock;
 * - index slots go from 0 to their final value once; an index that was
 *   replaced by a larger one stays mapped (readers may still be probing it,
 *   and a miss there only sends them to the locked path), so the total index
 *   memory is under twice the live one;
 * - count * 2 <= cap in the live index.
 *
 * store_lock guards adding a stack: the arena cursor, index counts and
 * everything below that changes. Words read without it are mt_atomic (the
 * chunk table, live_index, num_stacks, mapped_bytes) or go through the
 * atomic macros (record headers, index slots); the holder updates them with
 * relaxed load + store or a release store, never a locked instruction. */
#include "store/stack_store.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/lock.h"
#include "base/os.h"

#include <string.h>

#define CHUNK_BITS MT_STACK_CHUNK_BITS
#define CHUNK_WORDS ((uint32_t)1 << CHUNK_BITS)
#define MAX_CHUNKS ((uint32_t)1 << (32 - CHUNK_BITS))
#define INITIAL_INDEX 4096
#define PRESENT ((uint64_t)1 << 31)
#define FRAMES_AT (1 + MT_STACK_SITE_WORDS)

/* cap is written before the index is published and never after; count
 * only under store_lock; slots go through the atomic macros. */
struct index {
    size_t cap;
    size_t count;
    uint64_t slots[];
};

static mt_lock store_lock = MT_LOCK_INIT;
/* Each entry goes once from NULL to a chunk, by a release store in
 * arena_alloc; readers load it with acquire (pairs with that release). A
 * reader got its id through an index slot or a header published after the
 * chunk, so it never sees NULL for a chunk that holds its record; for an id
 * from elsewhere NULL means "no stack". */
mt_atomic(uint64_t *) mt_stack_chunks[MAX_CHUNKS];
static uint32_t cur_chunk;    /* store_lock */
static uint32_t cur_word = 1; /* store_lock; id 0 stays unused */
/* Published with release by index_make_room; mt_stack_intern's lock-free
 * probe loads it with acquire (pairs with that release: it sees the cap and
 * the slots copied in). A stale index misses only stacks added since, and a
 * miss goes to the locked path. */
static mt_atomic(struct index *) live_index;
/* Statistics, read relaxed without the lock: a stale value is a count a
 * moment old. The debugger reads num_stacks as a plain uint32_t. */
static mt_atomic(uint32_t) num_stacks;
static mt_atomic(size_t) mapped_bytes;

_Static_assert(sizeof(mt_atomic(uint32_t)) == sizeof(uint32_t) &&
                   _Alignof(mt_atomic(uint32_t)) == _Alignof(uint32_t),
               "mt_stack_describe: the debugger reads a plain uint32_t");
_Static_assert(sizeof(mt_atomic(uint64_t *)) == sizeof(uint64_t *) &&
                   _Alignof(mt_atomic(uint64_t *)) == _Alignof(uint64_t *),
               "mt_stack_describe: the debugger reads an array of plain pointers");

static void add_mapped(size_t bytes)
{
    MT_ASSERT(mt_lock_is_mine(&store_lock));
    mt_atomic_store_relaxed(&mapped_bytes, mt_atomic_load_relaxed(&mapped_bytes) + bytes);
}

/* The stack's hash. Two lanes (even and odd frames) so that consecutive
 * multiplies do not wait on each other; a step (h ^ f) * K, K odd, is a
 * bijection of h for a given frame f, so two stacks of one depth that differ
 * in a single frame never share the 64-bit value. The multiplies only carry
 * bits upwards: the final mix brings the high bits of the frames (module
 * bases) down into the 32 bits kept. Only this process ever computes it
 * (readers outside see the stored header, never recompute it). */
static inline uint64_t hash_frames(const uintptr_t *frames, unsigned depth)
{
    uint64_t a = 0x9E3779B97F4A7C15ull ^ depth, b = 0xC2B2AE3D27D4EB4Full;
    unsigned i = 0;
    for (; i + 2 <= depth; i += 2) {
        a = (a ^ frames[i]) * 0xff51afd7ed558ccdull;
        b = (b ^ frames[i + 1]) * 0xc4ceb9fe1a85ec53ull;
    }
    if (i < depth)
        a = (a ^ frames[i]) * 0xff51afd7ed558ccdull;
    uint64_t h = a ^ (b << 29 | b >> 35);
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ull;
    h ^= h >> 29;
    return h;
}

static const uint64_t *record_of(mt_stack_id id)
{
    uint32_t c = id >> CHUNK_BITS, w = id & (CHUNK_WORDS - 1);
    const uint64_t *chunk = mt_atomic_load_acquire(&mt_stack_chunks[c]);
    return chunk ? chunk + w : NULL;
}

static inline bool record_matches(mt_stack_id id, uint32_t h32, const uintptr_t *frames,
                                  unsigned depth)
{
    const uint64_t *r = record_of(id);
    /* Pairs with the release store of the header in mt_stack_intern. */
    if (!r || mt_atomic_load_acquire(&r[0]) != ((uint64_t)h32 << 32 | PRESENT | depth))
        return false;
    return memcmp(r + FRAMES_AT, frames, depth * sizeof *frames) == 0;
}

/* Probes IX for the stack; returns its id or 0. Inline: it is the whole
 * of the common case, a stack already stored. */
static inline __attribute__((always_inline)) mt_stack_id probe(const struct index *ix, uint32_t h32,
                                                               const uintptr_t *frames,
                                                               unsigned depth)
{
    size_t mask = ix->cap - 1;
    for (size_t i = h32 & mask;; i = (i + 1) & mask) {
        /* Pairs with the release store in index_put. */
        uint64_t s = mt_atomic_load_acquire(&ix->slots[i]);
        if (s == 0)
            return 0;
        if ((uint32_t)(s >> 32) == h32 && record_matches((mt_stack_id)s, h32, frames, depth))
            return (mt_stack_id)s;
    }
}

static struct index *index_new(size_t cap)
{
    size_t bytes = sizeof(struct index) + cap * sizeof(uint64_t);
    struct index *ix = mt_os_map(bytes, "stack index");
    if (!ix)
        return NULL;
    ix->cap = cap;
    add_mapped(bytes);
    return ix;
}

/* Under store_lock. */
static void index_put(struct index *ix, uint64_t slot)
{
    MT_ASSERT(mt_lock_is_mine(&store_lock));
    size_t mask = ix->cap - 1;
    size_t i = (uint32_t)(slot >> 32) & mask;
    while (mt_atomic_load_relaxed(&ix->slots[i]) != 0)
        i = (i + 1) & mask;
    /* Pairs with the acquire load in probe. */
    mt_atomic_store_release(&ix->slots[i], slot);
    ix->count++;
    MT_ASSERT(ix->count * 2 <= ix->cap);
}

/* Under store_lock. Keeps the load at most one half. */
static bool index_make_room(void)
{
    MT_ASSERT(mt_lock_is_mine(&store_lock));
    struct index *ix = mt_atomic_load_relaxed(&live_index);
    if (ix && (ix->count + 1) * 2 <= ix->cap)
        return true;
    struct index *bigger = index_new(ix ? ix->cap * 2 : INITIAL_INDEX);
    if (!bigger)
        return false;
    if (ix)
        for (size_t i = 0; i < ix->cap; i++) {
            uint64_t slot = mt_atomic_load_relaxed(&ix->slots[i]);
            if (slot)
                index_put(bigger, slot);
        }
    /* Pairs with the acquire load in mt_stack_intern. */
    mt_atomic_store_release(&live_index, bigger);
    return true;
}

/* Under store_lock: room for WORDS consecutive words; returns the new id. */
static mt_stack_id arena_alloc(uint32_t words)
{
    MT_ASSERT(mt_lock_is_mine(&store_lock));
    bool have = mt_atomic_load_relaxed(&mt_stack_chunks[cur_chunk]) != NULL;
    if (!have || cur_word + words > CHUNK_WORDS) {
        uint32_t c = have ? cur_chunk + 1 : cur_chunk;
        if (c >= MAX_CHUNKS)
            return 0;
        uint64_t *chunk = mt_os_map(CHUNK_WORDS * sizeof(uint64_t), "stack store");
        if (!chunk)
            return 0;
        add_mapped(CHUNK_WORDS * sizeof(uint64_t));
        /* Pairs with the acquire loads in record_of and mt_stack_foreach. */
        mt_atomic_store_release(&mt_stack_chunks[c], chunk);
        cur_chunk = c;
        cur_word = c == 0 ? 1 : 0;
    }
    mt_stack_id id = cur_chunk << CHUNK_BITS | cur_word;
    cur_word += words;
    return id;
}

/* mt_stack_intern's locked path: the stack (hash H32) was not in the index
 * it probed; looks again under the lock and stores it if still missing. */
static MT_NOINLINE mt_stack_id intern_locked(const uintptr_t *frames, unsigned depth, uint32_t h32)
{
    mt_lock_acquire(&store_lock);
    const struct index *ix = mt_atomic_load_relaxed(&live_index);
    mt_stack_id id = ix ? probe(ix, h32, frames, depth) : 0;
    if (!id && index_make_room() && (id = arena_alloc(FRAMES_AT + depth)) != 0) {
        uint64_t *r = (uint64_t *)record_of(id);
        uint64_t header = (uint64_t)h32 << 32 | PRESENT | depth;
        /* A fresh record in one chunk, whose header a reader can decode. */
        MT_ASSERT(mt_atomic_load_relaxed(&r[0]) == 0);
        MT_ASSERT((id & (CHUNK_WORDS - 1)) + FRAMES_AT + depth <= CHUNK_WORDS);
        MT_ASSERT((header & 0xffff) == depth && depth <= MT_MAX_DEPTH && (header & PRESENT));
        memcpy(r + FRAMES_AT, frames, depth * sizeof *frames);
        if (MT_STACK_SITE_WORDS)
            r[1] = mt_atomic_load_relaxed(&num_stacks);
        /* Pairs with the acquire loads of headers in record_matches,
         * mt_stack_get and mt_stack_foreach: they see the frames. */
        mt_atomic_store_release(&r[0], header);
        index_put(mt_atomic_load_relaxed(&live_index), (uint64_t)h32 << 32 | id);
        mt_atomic_store_relaxed(&num_stacks, mt_atomic_load_relaxed(&num_stacks) + 1);
    }
    mt_lock_release(&store_lock);
    return id;
}

mt_stack_id mt_stack_intern(const uintptr_t *frames, unsigned depth)
{
    if (MT_UNLIKELY(depth > MT_MAX_DEPTH))
        depth = MT_MAX_DEPTH;
    uint32_t h32 = (uint32_t)(hash_frames(frames, depth) >> 32);
    /* Pairs with the release in index_make_room. */
    const struct index *ix = mt_atomic_load_acquire(&live_index);
    mt_stack_id id = MT_LIKELY(ix != NULL) ? probe(ix, h32, frames, depth) : 0;
    if (MT_LIKELY(id))
        return id;
    return intern_locked(frames, depth, h32);
}

unsigned mt_stack_get(mt_stack_id id, const uintptr_t **frames)
{
    if (id == 0 || (id >> CHUNK_BITS) >= MAX_CHUNKS)
        return 0;
    const uint64_t *r = record_of(id);
    if (!r)
        return 0;
    uint64_t header = mt_atomic_load_acquire(&r[0]);
    unsigned depth = (unsigned)(header & 0xffff);
    /* An id from a torn live-table entry (a report reads a shard without
     * its lock when the holder looks stopped) may point anywhere in a
     * chunk: never read past it. */
    if (!(header & PRESENT) || depth > MT_MAX_DEPTH ||
        (id & (CHUNK_WORDS - 1)) + FRAMES_AT + depth > CHUNK_WORDS)
        return 0;
    *frames = (const uintptr_t *)(r + FRAMES_AT);
    return depth;
}

void *mt_stack_site_words(mt_stack_id id)
{
    if (MT_STACK_SITE_WORDS == 0 || id == 0)
        return NULL;
    uint64_t *r = (uint64_t *)record_of(id);
    return r ? r + 1 : NULL; /* an id handed out always has its chunk */
}

struct foreach_all {
    void (*fn)(mt_stack_id, const uintptr_t *, unsigned, void *);
    void *ctx;
};

static bool visit_all(mt_stack_id id, const uintptr_t *frames, unsigned depth, void *ctx)
{
    const struct foreach_all *a = ctx;
    a->fn(id, frames, depth, a->ctx);
    return true;
}

/* The walk of mt_stack_foreach_new from the store's start, every stack
 * accepted. */
void mt_stack_foreach(void (*fn)(mt_stack_id, const uintptr_t *, unsigned, void *), void *ctx)
{
    mt_stack_cursor at = { 0, 0 };
    struct foreach_all a = { fn, ctx };
    mt_stack_foreach_new(&at, visit_all, &a);
}

/* A zero header at the cursor is either the end of its chunk's records or
 * a record not yet published. Once the next chunk exists it is the end:
 * records are appended in order under store_lock, and every record of
 * chunk C was published before chunk C + 1 was (the acquire load of that
 * chunk pairs with its release store in arena_alloc). */
void mt_stack_foreach_new(mt_stack_cursor *at,
                          bool (*fn)(mt_stack_id, const uintptr_t *, unsigned, void *), void *ctx)
{
    for (uint32_t c = at->chunk; c < MAX_CHUNKS; c++) {
        const uint64_t *chunk = mt_atomic_load_acquire(&mt_stack_chunks[c]);
        if (!chunk)
            return;
        uint32_t w = c == at->chunk ? at->word : 0;
        if (c == 0 && w == 0)
            w = 1;
        while (w < CHUNK_WORDS) {
            uint64_t header = mt_atomic_load_acquire(&chunk[w]);
            if (!(header & PRESENT)) {
                if (c + 1 >= MAX_CHUNKS || !mt_atomic_load_acquire(&mt_stack_chunks[c + 1]))
                    return; /* not published yet: offered next time */
                header = mt_atomic_load_acquire(&chunk[w]);
                if (!(header & PRESENT))
                    break; /* the end of this chunk's records */
            }
            unsigned depth = (unsigned)(header & 0xffff);
            if (!fn(c << CHUNK_BITS | w, (const uintptr_t *)(chunk + w + FRAMES_AT), depth, ctx))
                return;
            w += FRAMES_AT + depth;
            *at = (mt_stack_cursor){ c, w };
        }
        *at = (mt_stack_cursor){ c + 1, 0 };
    }
}

uint32_t mt_stack_count(void)
{
    return mt_atomic_load_relaxed(&num_stacks);
}

size_t mt_stack_mapped_bytes(void)
{
    return mt_atomic_load_relaxed(&mapped_bytes);
}

void mt_stack_describe(mt_stack_layout *out)
{
    *out = (mt_stack_layout){
        .chunks = (const void *)mt_stack_chunks,
        .count = (const uint32_t *)&num_stacks,
        .max_chunks = MAX_CHUNKS,
        .chunk_bits = CHUNK_BITS,
        .frames_offset = FRAMES_AT,
        .depth_mask = 0xffff,
        .present_bit = PRESENT,
    };
}

bool mt_stack_lock(void)
{
    return mt_lock_acquire_unless_mine(&store_lock);
}

void mt_stack_unlock(void)
{
    mt_lock_release(&store_lock);
}
