/* Stack store: an append-only arena of records in 4 MiB chunks, plus an
 * open-addressed index of {hash, id} words.
 *
 * Invariants:
 * - a record is [header word][MT_STACK_SITE_WORDS counter words][depth frame
 *   words] and never crosses a chunk; the header is hash32 << 32 |
 *   PRESENT | depth, and a zero header ends a chunk's records; id = chunk << CHUNK_BITS | word offset, and
 *   chunk 0 word 0 is never used, so id 0 is free to mean "none";
 * - a record is fully written before its header and then its index slot
 *   are published (release), and only its counters change afterwards, so
 *   readers need no lock;
 * - index slots go from 0 to their final value once; an index that was
 *   replaced by a larger one stays mapped (readers may still be probing it,
 *   and a miss there only sends them to the locked path), so the total index
 *   memory is under twice the live one;
 * - count * 2 <= cap in the live index. */
#include "stack_store.h"

#include "common.h"
#include "lock.h"
#include "os.h"

#include <string.h>

#define CHUNK_BITS 19
#define CHUNK_WORDS ((uint32_t)1 << CHUNK_BITS)
#define MAX_CHUNKS ((uint32_t)1 << (32 - CHUNK_BITS))
#define INITIAL_INDEX 4096
#define PRESENT ((uint64_t)1 << 31)
#define FRAMES_AT (1 + MT_STACK_SITE_WORDS)

struct index {
    size_t cap;
    size_t count;
    uint64_t slots[];
};

static mt_lock store_lock = MT_LOCK_INIT;
static uint64_t *chunks[MAX_CHUNKS];
static uint32_t cur_chunk;
static uint32_t cur_word = 1; /* id 0 stays unused */
static struct index *live_index;
static uint32_t num_stacks;
static size_t mapped_bytes;

static uint64_t hash_frames(const uintptr_t *frames, unsigned depth)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ depth;
    for (unsigned i = 0; i < depth; i++) {
        h ^= frames[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h;
}

static const uint64_t *record_of(mt_stack_id id)
{
    uint32_t c = id >> CHUNK_BITS, w = id & (CHUNK_WORDS - 1);
    const uint64_t *chunk = __atomic_load_n(&chunks[c], __ATOMIC_ACQUIRE);
    return chunk ? chunk + w : NULL;
}

static bool record_matches(mt_stack_id id, uint32_t h32,
                           const uintptr_t *frames, unsigned depth)
{
    const uint64_t *r = record_of(id);
    if (!r || __atomic_load_n(&r[0], __ATOMIC_ACQUIRE) != ((uint64_t)h32 << 32 | PRESENT | depth))
        return false;
    return memcmp(r + FRAMES_AT, frames, depth * sizeof *frames) == 0;
}

/* Probes IX for the stack; returns its id or 0. */
static mt_stack_id probe(const struct index *ix, uint32_t h32,
                         const uintptr_t *frames, unsigned depth)
{
    size_t mask = ix->cap - 1;
    for (size_t i = h32 & mask;; i = (i + 1) & mask) {
        uint64_t s = __atomic_load_n(&ix->slots[i], __ATOMIC_ACQUIRE);
        if (s == 0)
            return 0;
        if ((uint32_t)(s >> 32) == h32 &&
            record_matches((mt_stack_id)s, h32, frames, depth))
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
    mapped_bytes += bytes;
    return ix;
}

static void index_put(struct index *ix, uint64_t slot)
{
    size_t mask = ix->cap - 1;
    size_t i = (uint32_t)(slot >> 32) & mask;
    while (ix->slots[i] != 0)
        i = (i + 1) & mask;
    __atomic_store_n(&ix->slots[i], slot, __ATOMIC_RELEASE);
    ix->count++;
}

/* Under store_lock. Keeps the load at most one half. */
static bool index_make_room(void)
{
    struct index *ix = live_index;
    if (ix && (ix->count + 1) * 2 <= ix->cap)
        return true;
    struct index *bigger = index_new(ix ? ix->cap * 2 : INITIAL_INDEX);
    if (!bigger)
        return false;
    if (ix)
        for (size_t i = 0; i < ix->cap; i++)
            if (ix->slots[i])
                index_put(bigger, ix->slots[i]);
    __atomic_store_n(&live_index, bigger, __ATOMIC_RELEASE);
    return true;
}

/* Under store_lock: room for WORDS consecutive words; returns the new id. */
static mt_stack_id arena_alloc(uint32_t words)
{
    if (!chunks[cur_chunk] || cur_word + words > CHUNK_WORDS) {
        uint32_t c = chunks[cur_chunk] ? cur_chunk + 1 : cur_chunk;
        if (c >= MAX_CHUNKS)
            return 0;
        uint64_t *chunk = mt_os_map(CHUNK_WORDS * sizeof(uint64_t), "stack store");
        if (!chunk)
            return 0;
        mapped_bytes += CHUNK_WORDS * sizeof(uint64_t);
        __atomic_store_n(&chunks[c], chunk, __ATOMIC_RELEASE);
        cur_chunk = c;
        cur_word = c == 0 ? 1 : 0;
    }
    mt_stack_id id = cur_chunk << CHUNK_BITS | cur_word;
    cur_word += words;
    return id;
}

mt_stack_id mt_stack_intern(const uintptr_t *frames, unsigned depth)
{
    if (depth > MT_MAX_DEPTH)
        depth = MT_MAX_DEPTH;
    uint32_t h32 = (uint32_t)(hash_frames(frames, depth) >> 32);
    const struct index *ix = __atomic_load_n(&live_index, __ATOMIC_ACQUIRE);
    mt_stack_id id = ix ? probe(ix, h32, frames, depth) : 0;
    if (MT_LIKELY(id))
        return id;

    mt_lock_acquire(&store_lock);
    id = live_index ? probe(live_index, h32, frames, depth) : 0;
    if (!id && index_make_room() && (id = arena_alloc(FRAMES_AT + depth)) != 0) {
        uint64_t *r = (uint64_t *)record_of(id);
        memcpy(r + FRAMES_AT, frames, depth * sizeof *frames);
        __atomic_store_n(&r[0], (uint64_t)h32 << 32 | PRESENT | depth, __ATOMIC_RELEASE);
        index_put(live_index, (uint64_t)h32 << 32 | id);
        __atomic_store_n(&num_stacks, num_stacks + 1, __ATOMIC_RELAXED);
    }
    mt_lock_release(&store_lock);
    return id;
}

unsigned mt_stack_get(mt_stack_id id, const uintptr_t **frames)
{
    if (id == 0 || (id >> CHUNK_BITS) >= MAX_CHUNKS)
        return 0;
    const uint64_t *r = record_of(id);
    if (!r)
        return 0;
    uint64_t header = __atomic_load_n(&r[0], __ATOMIC_ACQUIRE);
    unsigned depth = (unsigned)(header & 0xffff);
    /* An id from a torn freed-history record may point anywhere in a chunk:
     * never read past it. */
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
    return (uint64_t *)record_of(id) + 1;
}

void mt_stack_foreach(void (*fn)(mt_stack_id, const uintptr_t *, unsigned, void *), void *ctx)
{
    for (uint32_t c = 0; c < MAX_CHUNKS; c++) {
        const uint64_t *chunk = __atomic_load_n(&chunks[c], __ATOMIC_ACQUIRE);
        if (!chunk)
            return;
        for (uint32_t w = c == 0 ? 1 : 0; w < CHUNK_WORDS;) {
            uint64_t header = __atomic_load_n(&chunk[w], __ATOMIC_ACQUIRE);
            if (!(header & PRESENT))
                break;
            unsigned depth = (unsigned)(header & 0xffff);
            fn(c << CHUNK_BITS | w, (const uintptr_t *)(chunk + w + FRAMES_AT), depth, ctx);
            w += FRAMES_AT + depth;
        }
    }
}

uint32_t mt_stack_count(void)
{
    return __atomic_load_n(&num_stacks, __ATOMIC_RELAXED);
}

size_t mt_stack_mapped_bytes(void)
{
    return mapped_bytes;
}

void mt_stack_describe(mt_stack_layout *out)
{
    *out = (mt_stack_layout){
        .chunks = chunks,
        .count = &num_stacks,
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
