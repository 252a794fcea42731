/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The live table: every live heap block memtrace recorded, keyed by its
 * address, with the size, the allocating stack, thread and sequence number.
 * Split into independent shards by the address's region and hash, each with
 * its own lock and its own growth, so threads rarely meet. */
#ifndef MT_LIVE_TABLE_H
#define MT_LIVE_TABLE_H

#include "store/threads.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How a block was allocated: its free must be of the same family
 * (free/realloc for the C functions, delete for new, delete[] for new[],
 * memtrace_freelike for a block of the program's own pool that
 * memtrace_malloclike declared: never the real allocator's). */
enum { MT_KIND_MALLOC = 0, MT_KIND_NEW = 1, MT_KIND_NEW_ARRAY = 2, MT_KIND_POOL = 3 };

/* The thread word: the thread number in its low MT_ENTRY_THREAD_BITS bits
 * (every number mt_thread_wrap gives fits), the kind above them. Published
 * to readers outside the process (the state descriptor's
 * entry_thread_bits). */
#define MT_ENTRY_THREAD_BITS MT_THREAD_NUMBER_BITS
#define MT_ENTRY_THREAD_MASK ((1u << MT_ENTRY_THREAD_BITS) - 1)
#define MT_ENTRY_SEQ_BITS 48

typedef struct mt_live_entry {
    uintptr_t ptr; /* 0 marks an empty slot */
    uint64_t size;
    /* The seq word: the global allocation number (from 1) in its low
     * MT_ENTRY_SEQ_BITS bits, the block's tag-scope node id (tags/tags.h,
     * 0: none) above them; published to readers outside the process (the
     * state descriptor's entry_seq_bits). Bit-fields, so that every reader
     * in the process reads e->seq as before; seq_word names the whole
     * word (offsetof). 2^48 allocations are 9 years at a million a second. */
    union {
        uint64_t seq_word;
        struct {
            uint64_t seq : 48;
            uint64_t tag : 16;
        };
    };
    uint32_t stack;  /* mt_stack_id */
    uint32_t thread; /* memtrace's thread number (main thread = 1) | kind */
} mt_live_entry;

static inline uint32_t mt_entry_thread(const mt_live_entry *e)
{
    return e->thread & MT_ENTRY_THREAD_MASK;
}

static inline unsigned mt_entry_kind(const mt_live_entry *e)
{
    return e->thread >> MT_ENTRY_THREAD_BITS;
}

/* THREAD as mt_thread_wrap bounds it: a number past the bits never
 * spills into the kind. */
static inline uint32_t mt_entry_thread_word(uint64_t thread, unsigned kind)
{
    return mt_thread_wrap(thread) | (uint32_t)kind << MT_ENTRY_THREAD_BITS;
}

/* The table keeps a record in a 24-byte slot (live_table.c): the address
 * in MT_LIVE_SLOT_PTR_BITS bits, the size in the 17 bits above them and
 * MT_LIVE_SLOT_SIZE_LOW bits of the third word, so a size below 2^23. A
 * record that does not fit (a block of 8 MiB or more, an address of
 * 2^47 or more) is kept whole, an mt_live_entry, among its shard's side
 * records. Published to readers outside the process (the state
 * descriptor's live_slot_* and live_side_* words). */
#define MT_LIVE_SLOT_SIZE 24
#define MT_LIVE_SLOT_PTR_BITS 47
#define MT_LIVE_SLOT_SIZE_LOW 6

/* Shards: MT_LIVE_SHARDS, each with its own lock. The shard of address P
 * is chosen by P's region (P >> MT_LIVE_REGION_SHIFT) and, within the
 * region's group of 1 << MT_LIVE_GROUP_BITS consecutive shards, by the
 * address hash:
 *   h = (P >> MT_LIVE_HASH_SHIFT) * MT_LIVE_HASH_MULTIPLIER (mod 2^64);
 *   shard = ((P >> MT_LIVE_REGION_SHIFT) << MT_LIVE_GROUP_BITS |
 *            h >> (64 - MT_LIVE_GROUP_BITS)) mod MT_LIVE_SHARDS;
 *   home slot = ((h << MT_LIVE_GROUP_BITS) * cap) >> 64 (the high half of
 *   the 128-bit product: the bits below the group's scaled to the shard's
 *   capacity cap, any count), probing on from cap - 1 to 0.
 * A region is 64 MiB, glibc's per-thread heap (HEAP_MAX_SIZE, aligned to
 * its size): a thread on its own arena allocates from its own regions,
 * and the arenas' heaps, mapped one after another, take consecutive
 * regions, hence distinct groups, so two threads share no shard lock unless
 * their regions are MT_LIVE_SHARDS >> MT_LIVE_GROUP_BITS apart (the brk
 * heap of the main arena meets a given thread heap's group by chance, 1
 * in 64). The group spreads a big region over 16 shards: one shard's
 * growth copies a sixteenth of it, and threads that share a region (more
 * threads than arenas, another allocator) still meet on one lock in 16
 * (in 64 when the shard was the hash's alone). Readers outside the process
 * (the state descriptor) compute the same. */
#define MT_LIVE_SHARD_BITS 10
#define MT_LIVE_SHARDS (1u << MT_LIVE_SHARD_BITS)
#define MT_LIVE_GROUP_BITS 4
#define MT_LIVE_REGION_SHIFT 26
#define MT_LIVE_HASH_SHIFT 4
#define MT_LIVE_HASH_MULTIPLIER 0x9E3779B97F4A7C15ull

/* Records E (E->ptr != 0), replacing any record of the same address (one
 * whose free memtrace did not see). False if the shard could not grow: the
 * block is then simply not recorded. */
bool mt_live_insert(const mt_live_entry *e);

/* Fetches the lines an insert or remove of PTR starts with (its shard's,
 * its home slot's and the next), without the lock: for a caller with
 * other work to do before it, so that the misses overlap that work
 * (mt_record, and mt_free_stack_first through mt_live_prefetch_size: the
 * stack's capture). The entry of an address reused long after its free
 * (the quarantine) is otherwise a miss nothing else hides. */
void mt_live_prefetch(uintptr_t ptr);

/* mt_live_prefetch's fetches, and the size of PTR's record if it lies
 * in one of the first slots of its probe (in the lines fetched), else 0:
 * read without the lock and without branching on what is read, so
 * possibly stale or torn (another thread's insert or remove in the
 * shard, a grow), only to aim a prefetch at the block's end before the
 * record is removed (mt_free_stack_first). Never faults. */
size_t mt_live_prefetch_size(uintptr_t ptr);

/* Removes the record of PTR into *OUT; false if PTR is not recorded. */
bool mt_live_remove(uintptr_t ptr, mt_live_entry *out);

/* Slow-path lookup for reports: tries the shard lock briefly and, if a
 * thread that may be stopped holds it, reads the shard without it and sets
 * *UNLOCKED (the answer may then be stale or missing). Never blocks. */
bool mt_live_find(uintptr_t ptr, mt_live_entry *out, bool *unlocked);

/* The records around an address: BELOW has the greatest start <= ADDR,
 * ABOVE the least start > ADDR; ptr 0 for none. */
typedef struct {
    mt_live_entry below, above;
} mt_live_around;

/* Whether E's block holds ADDR: start <= ADDR < start + size, or ADDR ==
 * start for an empty block. */
static inline bool mt_live_contains(const mt_live_entry *e, uintptr_t addr)
{
    return e->ptr && addr >= e->ptr && (addr - e->ptr < e->size || addr == e->ptr);
}

/* One scan of every shard for the records around ADDR, with the same
 * locking as mt_live_find; true when OUT->below holds ADDR (mt_live_contains:
 * ADDR is inside that block). The reader out of process (tools/tables.c,
 * mt_tables_around) applies the same rule, so both name the same blocks. */
bool mt_live_find_around(uintptr_t addr, mt_live_around *out, bool *unlocked);

/* Calls FN with every record, shard by shard, with the same locking as
 * mt_live_find (FN may run with a shard lock held: it must not enter the
 * table; a record may be stale where *UNLOCKED is set). */
void mt_live_foreach(void (*fn)(const mt_live_entry *e, void *ctx), void *ctx, bool *unlocked);

/* The same over the shards it can lock (the same bounded wait), with the
 * lock held: a record FN sees is live, its block not yet freed. Returns
 * the shards skipped. */
unsigned mt_live_foreach_locked(void (*fn)(const mt_live_entry *e, void *ctx), void *ctx);

/* Number of live records; exact when no thread is inside the table. */
size_t mt_live_count(void);
/* Sum of the sizes of the live records; exact when no thread is inside. */
uint64_t mt_live_block_bytes(void);
/* Bytes mapped for all shards. */
size_t mt_live_mapped_bytes(void);

/* For the state descriptor (descriptor.c): where the shards are and the layout a
 * reader outside the process (a debugger, a core file) needs, in bytes. */
typedef struct {
    const void *shards;
    uint32_t shard_size, lock_offset, count_offset, slots_offset;
    uint32_t cap_offset, entries_offset;     /* within a slots mapping */
    uint32_t side_offset, side_count_offset; /* within a shard */
    uint32_t side_entries_offset;            /* within a side mapping */
} mt_live_layout;
void mt_live_describe(mt_live_layout *out);

/* Held across fork: takes every shard lock this thread does not hold
 * already (see mt_lock_acquire_unless_mine) and returns the set taken, bit
 * N % 64 of word N / 64 for shard N; unlock releases that set. */
typedef struct {
    uint64_t bits[MT_LIVE_SHARDS / 64];
} mt_live_taken;
mt_live_taken mt_live_lock_all(void);
void mt_live_unlock_all(const mt_live_taken *taken);

/* Whether TAKEN holds every shard. */
static inline bool mt_live_took_all(const mt_live_taken *taken)
{
    for (unsigned i = 0; i < MT_LIVE_SHARDS / 64; i++)
        if (taken->bits[i] != UINT64_MAX)
            return false;
    return true;
}

#endif
