/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Live table: MT_LIVE_SHARDS open-addressed hash tables with linear probing
 * and backward-shift deletion (no tombstones, so probe lengths stay short
 * under heavy churn).
 *
 * Invariants, per shard, whenever its lock is free:
 * - every live block the program owns and memtrace recorded is in exactly
 *   one slot, of the shard shard_of names (live_table.h);
 * - count <= cap * MAX_LOAD_NUM / MAX_LOAD_DEN, INITIAL_CAP <= cap <=
 *   MAX_CAP (any count: a shard grows by a quarter, see grow);
 * - no empty slot lies between a record's home slot and its slot (what
 *   backward-shift deletion preserves and lookups rely on).
 * A shard's slots and capacity live in one mapping published through one
 * pointer, so a reader without the lock sees a consistent capacity. Growth
 * retires the old mapping without unmapping it (its pages go back to the
 * kernel and read as zeros): a report reading without the lock, because the
 * holder did not move for a millisecond, may load the pointer just before
 * the holder grows the shard and then probe zeros. It reads cap once
 * and treats a value no live mapping has (0, from a retired one) as an
 * empty table, so it may miss records but never faults. Retired ranges cost
 * address space only, less in all than the live mapping.
 *
 * Words read without the lock (mt_atomic): a shard's slots pointer, cap,
 * count and bytes, and mapped_bytes; the lock holder alone writes the
 * first four and reads them relaxed. The entries themselves are plain: a reader
 * without the lock reads them only while the holder looks stopped, so a
 * torn entry (the holder was merely slow) is possible and the report says
 * its answer may be stale. */
#include "store/live_table.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/lock.h"
#include "base/os.h"

#include <sys/mman.h>

/* The first mapping of a shard: one page (the header and 127 entries of
 * 32 bytes). A shard is made at its first insert, and a sampled run that
 * holds a few hundred blocks spread over the shards of its heap's regions
 * touches only these first pages: every page more here costs one page per
 * shard in use (a second page cost churn 180 KiB, sampled). */
#define INITIAL_BYTES 4096
#define INITIAL_CAP ((INITIAL_BYTES - sizeof(struct slots)) / sizeof(mt_live_entry))
/* The most records a shard holds per slot before it grows: 4/5. A shard
 * grows by a quarter (GROW_NUM / GROW_DEN of its mapping, in whole pages),
 * not by doubling, so its load runs from 64% to 80%: the mapping is 40 to
 * 50 bytes per record (doubling: 40 to 80, which the peak of a program
 * whose count just crossed a threshold pays in full). Each record is then
 * copied about 4 times over a shard's growth instead of once: a sequential
 * read and a scattered write per copy, rare next to the inserts. An insert
 * probes 4.2 slots on average (linear probing's 1/2 + 1/(2 * (1 -
 * load)^2)), 13 at the top: more entries of the lines it mostly reads
 * already (two entries a line). */
#define MAX_LOAD_NUM 4
#define MAX_LOAD_DEN 5
#define GROW_NUM 5
#define GROW_DEN 4
/* The readers' bound (tools/tables.c); far past any mapping that succeeds. */
#define MAX_CAP ((size_t)1 << 40)

/* A mapping of slots: cap is written before the mapping is published and
 * never again (a retired mapping reads 0); every access goes through the
 * atomic macros, relaxed, since the publication orders it. The header is
 * padded to one entry so that entries start 32-byte aligned in the
 * page-aligned mapping: none straddles two cache lines. cap is not the
 * first word, so that the state descriptor's live_cap_offset, nonzero,
 * also says that capacities are counts (descriptor.h). */
struct slots {
    size_t unused;
    size_t cap;
    size_t pad[sizeof(mt_live_entry) / sizeof(size_t) - 2];
    mt_live_entry e[];
};
_Static_assert(offsetof(struct slots, cap) != 0, "live_cap_offset: nonzero");
_Static_assert(offsetof(struct slots, e) % sizeof(mt_live_entry) == 0 &&
                   (sizeof(mt_live_entry) & (sizeof(mt_live_entry) - 1)) == 0 &&
                   MT_CACHELINE % sizeof(mt_live_entry) == 0,
               "no entry crosses a cache line");

struct shard {
    mt_lock lock;
    /* Written by the lock holder. mt_live_count and mt_live_block_bytes
     * read them relaxed without the lock: a stale value only makes the
     * totals inexact while some thread is inside the table. */
    mt_atomic(size_t) count;
    mt_atomic(uint64_t) bytes; /* sum of the sizes of the shard's records */
    /* Published with release by grow; readers without the lock load it with
     * acquire (pairs with that release: they see the mapping's cap and
     * the entries copied into it). A stale pointer is a retired mapping:
     * readable_cap makes it an empty table. */
    mt_atomic(struct slots *) slots;
    /* The lock holder's copy of slots->cap (0 while slots is NULL),
     * written with slots under the lock: the common path then reads no
     * line of the mapping but the entries it probes. Readers without the
     * lock use it only to aim a prefetch (mt_live_prefetch); they read the
     * mapping's own (see above). */
    mt_atomic(size_t) cap;
} __attribute__((aligned(MT_CACHELINE)));

static struct shard shards[MT_LIVE_SHARDS];
/* A statistic: relaxed; grow's add and subtract may be seen in any order. */
static mt_atomic(size_t) mapped_bytes;

/* The debugger reads these words as plain integers and pointers. */
_Static_assert(sizeof(mt_atomic(size_t)) == sizeof(size_t) &&
                   _Alignof(mt_atomic(size_t)) == _Alignof(size_t),
               "the state descriptor's shard layout");
_Static_assert(sizeof(mt_atomic(struct slots *)) == sizeof(void *) &&
                   _Alignof(mt_atomic(struct slots *)) == _Alignof(void *),
               "the state descriptor's shard layout");

static inline uint64_t hash_ptr(uintptr_t p)
{
    return (uint64_t)(p >> MT_LIVE_HASH_SHIFT) * MT_LIVE_HASH_MULTIPLIER;
}

static inline struct shard *shard_of(uintptr_t p, uint64_t h)
{
    return &shards[((p >> MT_LIVE_REGION_SHIFT) << MT_LIVE_GROUP_BITS |
                    h >> (64 - MT_LIVE_GROUP_BITS)) &
                   (MT_LIVE_SHARDS - 1)];
}

/* The hash bits below the group bits, scaled to CAP: the high half of a
 * 64 x 64-bit product, so that any capacity spreads the homes evenly.
 * Callers pass a capacity a live mapping has: under the lock, or from
 * readable_cap. */
static inline size_t home_of(uint64_t h, size_t cap)
{
    return (size_t)(((unsigned __int128)(h << MT_LIVE_GROUP_BITS) * cap) >> 64);
}

/* The slot after I in a table of CAP slots (the probe wraps). */
static inline size_t next_slot(size_t i, size_t cap)
{
    return i + 1 == cap ? 0 : i + 1;
}

static size_t slots_bytes(size_t cap)
{
    return sizeof(struct slots) + cap * sizeof(mt_live_entry);
}

/* For the lock holder: the capacity of SH's live mapping, from the shard's
 * own line. */
static inline size_t cap_of(const struct shard *sh)
{
    MT_ASSERT(mt_lock_is_mine(&sh->lock));
    size_t cap = mt_atomic_load_relaxed(&sh->cap);
    MT_ASSERT(cap >= INITIAL_CAP && cap <= MAX_CAP &&
              cap == mt_atomic_load_relaxed(&mt_atomic_load_relaxed(&sh->slots)->cap));
    return cap;
}

/* For a reader that may not hold the lock: S's capacity, read once, or 0 if
 * S is NULL or retired (zeros) or the value is one no live mapping has; 0
 * means an empty table. */
static size_t readable_cap(const struct slots *s)
{
    size_t cap = s ? mt_atomic_load_relaxed(&s->cap) : 0;
    return cap >= INITIAL_CAP && cap <= MAX_CAP ? cap : 0;
}

/* Index of PTR in S, whose capacity is CAP, or SIZE_MAX. */
static size_t find_slot(const struct slots *s, size_t cap, uintptr_t ptr, uint64_t h)
{
    for (size_t i = home_of(h, cap), n = 0; n < cap; i = next_slot(i, cap), n++) {
        uintptr_t p = s->e[i].ptr;
        if (p == ptr)
            return i;
        if (p == 0)
            return SIZE_MAX;
    }
    return SIZE_MAX;
}

/* Stores E; returns the record it replaced (ptr 0 if it took an empty
 * slot). */
static inline __attribute__((always_inline)) mt_live_entry put(struct slots *s, size_t cap,
                                                               const mt_live_entry *e, uint64_t h)
{
    size_t i = home_of(h, cap);
    while (s->e[i].ptr != 0 && s->e[i].ptr != e->ptr)
        i = next_slot(i, cap);
    mt_live_entry old = s->e[i];
    s->e[i] = *e;
    return old;
}

/* ---- the arena: the mappings of grown shards, on huge pages
 *
 * A grown shard's lines are touched at random, one or two per insert and
 * per remove, and on small pages most of them cost a page walk as well as
 * the line (a prefetch of the line waits on its translation). Mappings of
 * ARENA_MIN bytes or more are carved one after another from one reserved
 * range that asks for transparent huge pages (a hint: where they are off
 * it changes nothing): the tables of a program with millions of blocks
 * then sit on a few dozen pages. A carved range is committed as any other
 * metadata mapping (mt_os_commit: counted by MEMTRACE_FAULT_MAP, in core
 * files) and retired as one (mt_os_retire: its pages go back and read as
 * zeros); the arena is never reused, so its address space is the sum of
 * every grown mapping, about five times the final tables' (growth by a
 * quarter). When the reservation fails (a limit on address space) or is
 * used up, mappings come from mt_os_map as the small ones do. */
#define ARENA_BYTES ((size_t)64 << 30)
#define ARENA_MIN ((size_t)128 << 10)
#define HUGE_PAGE ((size_t)2 << 20)

/* The reservation, aligned to a huge page: 0 before the first carve, 1
 * when it failed. */
static mt_atomic(uintptr_t) arena_base;
/* Bytes carved from arena_base, a multiple of the page size. */
static mt_atomic(size_t) arena_used;

static uintptr_t arena(void)
{
    uintptr_t base = mt_atomic_load_acquire(&arena_base);
    if (base)
        return base;
    void *p = mmap(NULL, ARENA_BYTES + HUGE_PAGE, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    uintptr_t got = 1;
    if (p != MAP_FAILED) {
        got = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
        /* As mt_os_reserve: out of core files until committed. */
        madvise(p, ARENA_BYTES + HUGE_PAGE, MADV_DONTDUMP);
#ifdef MADV_HUGEPAGE
        madvise((void *)got, ARENA_BYTES, MADV_HUGEPAGE);
#endif
    }
    uintptr_t expected = 0;
    if (!mt_atomic_cas_acq_rel(&arena_base, &expected, got)) {
        if (got != 1) /* another shard's grow reserved it first */
            munmap(p, ARENA_BYTES + HUGE_PAGE);
        got = expected;
    }
    return got;
}

/* A mapping of BYTES (a multiple of the page size) for a shard's slots. */
static void *map_slots(size_t bytes)
{
    uintptr_t base = bytes >= ARENA_MIN ? arena() : 1;
    if (base != 1) {
        size_t at = mt_atomic_add_relaxed(&arena_used, bytes);
        if (at <= ARENA_BYTES && bytes <= ARENA_BYTES - at) {
            /* Committed in whole huge pages: the kernel backs a fault
             * with a huge page only where the aligned 2 MiB around it is
             * all in one mapping of the same protection. Ranges of
             * neighbouring carves are committed again, which changes
             * nothing (they are writable already, and a retired one is
             * zeros either way). */
            uintptr_t lo = (base + at) & ~(uintptr_t)(HUGE_PAGE - 1);
            uintptr_t hi = (base + at + bytes + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
            return mt_os_commit((void *)lo, hi - lo, "live table") == 0 ? (void *)(base + at)
                                                                        : NULL;
        }
        /* Used up. arena_used stays past the end (it is never taken back:
         * another grow may have carved past this one's start meanwhile). */
    }
    return mt_os_map(bytes, "live table");
}

/* Under the shard lock: a table with room for one more record, or NULL.
 * The new mapping is a quarter larger than the old one, in whole pages
 * (the entries fill its last page). */
static MT_COLD struct slots *grow(struct shard *sh)
{
    MT_ASSERT(mt_lock_is_mine(&sh->lock));
    struct slots *old = mt_atomic_load_relaxed(&sh->slots);
    size_t old_cap = old ? cap_of(sh) : 0;
    size_t bytes = INITIAL_BYTES;
    if (old) {
        size_t page = mt_os_page_size();
        bytes = (slots_bytes(old_cap) / GROW_DEN * GROW_NUM + page - 1) / page * page;
    }
    size_t cap = (bytes - sizeof(struct slots)) / sizeof(mt_live_entry);
    if (cap > MAX_CAP)
        return NULL;
    struct slots *s = map_slots(slots_bytes(cap));
    if (!s)
        return NULL;
    mt_atomic_store_relaxed(&s->cap, cap);
    for (size_t i = 0; i < old_cap; i++)
        if (old->e[i].ptr)
            put(s, cap, &old->e[i], hash_ptr(old->e[i].ptr));
    /* Pairs with the acquire loads in mt_live_find and
     * mt_live_find_around. */
    mt_atomic_store_release(&sh->slots, s);
    mt_atomic_store_relaxed(&sh->cap, cap);
    mt_atomic_add_relaxed(&mapped_bytes, slots_bytes(cap));
    if (old) {
        size_t old_bytes = slots_bytes(old_cap);
        mt_os_retire(old, old_bytes);
        mt_atomic_sub_relaxed(&mapped_bytes, old_bytes);
    }
    return s;
}

/* The lines an insert or a remove starting at E reads: E's and the next.
 * An insert probes 4.2 slots on average (see MAX_LOAD_NUM), two entries
 * a line, and a remove's backward shift reads on to the end of the run
 * (as many): one line alone left the next a miss the remove waited on.
 * Past the mapping's end the fetch is of nothing, which a prefetch may
 * do. */
static inline void prefetch_run(const mt_live_entry *e)
{
    __builtin_prefetch(e, 1);
    __builtin_prefetch((const char *)e + MT_CACHELINE, 1);
}

void mt_live_prefetch(uintptr_t ptr)
{
    uint64_t h = hash_ptr(ptr);
    struct shard *sh = shard_of(ptr, h);
    __builtin_prefetch(sh, 1);
    /* Without the lock: a pointer and capacity from two mappings (a grow
     * in between) aim at a wrong address, which a prefetch may do. */
    struct slots *s = mt_atomic_load_relaxed(&sh->slots);
    size_t cap = mt_atomic_load_relaxed(&sh->cap);
    if (s)
        prefetch_run(&s->e[home_of(h, cap)]);
}

bool mt_live_insert(const mt_live_entry *e)
{
    uint64_t h = hash_ptr(e->ptr);
    struct shard *sh = shard_of(e->ptr, h);
    mt_lock_acquire(&sh->lock);
    struct slots *s = mt_atomic_load_relaxed(&sh->slots);
    size_t count = mt_atomic_load_relaxed(&sh->count);
    if (MT_UNLIKELY(!s || (count + 1) * MAX_LOAD_DEN > MAX_LOAD_NUM * cap_of(sh)))
        s = grow(sh);
    if (MT_LIKELY(s != NULL)) {
        mt_live_entry old = put(s, cap_of(sh), e, h);
        count += old.ptr == 0;
        MT_ASSERT(count * MAX_LOAD_DEN <= MAX_LOAD_NUM * cap_of(sh));
        mt_atomic_store_relaxed(&sh->count, count);
        mt_atomic_store_relaxed(&sh->bytes, mt_atomic_load_relaxed(&sh->bytes) + e->size -
                                                (old.ptr ? old.size : 0));
    }
    mt_lock_release(&sh->lock);
    return s != NULL;
}

/* Backward-shift deletion of slot I. */
/* The cyclic distance from slot A forward to slot B in a table of CAP. */
static inline size_t ahead(size_t a, size_t b, size_t cap)
{
    return b >= a ? b - a : b + cap - a;
}

static void erase(struct slots *s, size_t cap, size_t i)
{
    for (size_t j = next_slot(i, cap);; j = next_slot(j, cap)) {
        uintptr_t p = s->e[j].ptr;
        if (p == 0)
            break;
        size_t k = home_of(hash_ptr(p), cap);
        /* Slot j may move to i iff its home k is not cyclically in (i, j]. */
        if (ahead(k, j, cap) >= ahead(i, j, cap)) {
            s->e[i] = s->e[j];
            i = j;
        }
    }
    s->e[i].ptr = 0;
}

bool mt_live_remove(uintptr_t ptr, mt_live_entry *out)
{
    uint64_t h = hash_ptr(ptr);
    struct shard *sh = shard_of(ptr, h);
    mt_lock_acquire(&sh->lock);
    struct slots *s = mt_atomic_load_relaxed(&sh->slots);
    size_t cap = s ? cap_of(sh) : 0;
    size_t i = s ? find_slot(s, cap, ptr, h) : SIZE_MAX;
    bool found = i != SIZE_MAX;
    if (found) {
        if (out)
            *out = s->e[i];
        uint64_t bytes = mt_atomic_load_relaxed(&sh->bytes);
        size_t count = mt_atomic_load_relaxed(&sh->count);
        MT_ASSERT(count > 0 && bytes >= s->e[i].size);
        mt_atomic_store_relaxed(&sh->bytes, bytes - s->e[i].size);
        erase(s, cap, i);
        mt_atomic_store_relaxed(&sh->count, count - 1);
    }
    mt_lock_release(&sh->lock);
    return found;
}

/* About a millisecond of spinning: long enough for a running holder to
 * finish any operation, short enough to give up on a stopped one. */
#define READER_SPINS 200000

static bool lock_for_reader(struct shard *sh, bool *unlocked)
{
    if (mt_lock_try_for(&sh->lock, READER_SPINS))
        return true;
    *unlocked = true;
    return false;
}

bool mt_live_find(uintptr_t ptr, mt_live_entry *out, bool *unlocked)
{
    uint64_t h = hash_ptr(ptr);
    struct shard *sh = shard_of(ptr, h);
    bool locked = lock_for_reader(sh, unlocked);
    /* Pairs with the release in grow. */
    const struct slots *s = mt_atomic_load_acquire(&sh->slots);
    size_t cap = readable_cap(s);
    size_t i = cap ? find_slot(s, cap, ptr, h) : SIZE_MAX;
    if (i != SIZE_MAX)
        *out = s->e[i];
    if (locked)
        mt_lock_release(&sh->lock);
    return i != SIZE_MAX;
}

/* FN for every record of SH, whose lock the caller holds (or gave up
 * waiting for: mt_live_foreach's UNLOCKED). */
static void each_in_shard(const struct shard *sh, void (*fn)(const mt_live_entry *e, void *ctx),
                          void *ctx)
{
    /* Pairs with the release in grow. */
    const struct slots *s = mt_atomic_load_acquire(&sh->slots);
    size_t cap = readable_cap(s);
    for (size_t i = 0; i < cap; i++)
        if (s->e[i].ptr != 0)
            fn(&s->e[i], ctx);
}

void mt_live_foreach(void (*fn)(const mt_live_entry *e, void *ctx), void *ctx, bool *unlocked)
{
    for (unsigned n = 0; n < MT_LIVE_SHARDS; n++) {
        struct shard *sh = &shards[n];
        bool locked = lock_for_reader(sh, unlocked);
        each_in_shard(sh, fn, ctx);
        if (locked)
            mt_lock_release(&sh->lock);
    }
}

unsigned mt_live_foreach_locked(void (*fn)(const mt_live_entry *e, void *ctx), void *ctx)
{
    unsigned skipped = 0;
    for (unsigned n = 0; n < MT_LIVE_SHARDS; n++) {
        struct shard *sh = &shards[n];
        if (!mt_lock_try_for(&sh->lock, READER_SPINS)) {
            skipped++;
            continue;
        }
        each_in_shard(sh, fn, ctx);
        mt_lock_release(&sh->lock);
    }
    return skipped;
}

struct around {
    uintptr_t addr;
    mt_live_around *out;
};

static void note_around(const mt_live_entry *e, void *arg)
{
    struct around *a = arg;
    if (e->ptr <= a->addr) {
        if (e->ptr > a->out->below.ptr)
            a->out->below = *e;
    } else if (a->out->above.ptr == 0 || e->ptr < a->out->above.ptr) {
        a->out->above = *e;
    }
}

bool mt_live_find_around(uintptr_t addr, mt_live_around *out, bool *unlocked)
{
    *out = (mt_live_around){ 0 };
    struct around a = { addr, out };
    mt_live_foreach(note_around, &a, unlocked);
    return mt_live_contains(&out->below, addr);
}

size_t mt_live_count(void)
{
    size_t n = 0;
    for (unsigned i = 0; i < MT_LIVE_SHARDS; i++)
        n += mt_atomic_load_relaxed(&shards[i].count);
    return n;
}

uint64_t mt_live_block_bytes(void)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < MT_LIVE_SHARDS; i++)
        n += mt_atomic_load_relaxed(&shards[i].bytes);
    return n;
}

size_t mt_live_mapped_bytes(void)
{
    return mt_atomic_load_relaxed(&mapped_bytes);
}

void mt_live_describe(mt_live_layout *out)
{
    *out = (mt_live_layout){
        .shards = shards,
        .shard_size = sizeof(struct shard),
        .lock_offset = offsetof(struct shard, lock),
        .count_offset = offsetof(struct shard, count),
        .slots_offset = offsetof(struct shard, slots),
        .cap_offset = offsetof(struct slots, cap),
        .entries_offset = offsetof(struct slots, e),
    };
}

_Static_assert(MT_LIVE_SHARDS % 64 == 0, "mt_live_taken: whole words");

mt_live_taken mt_live_lock_all(void)
{
    mt_live_taken taken = { { 0 } };
    for (unsigned i = 0; i < MT_LIVE_SHARDS; i++)
        if (mt_lock_acquire_unless_mine(&shards[i].lock))
            taken.bits[i / 64] |= (uint64_t)1 << (i % 64);
    return taken;
}

void mt_live_unlock_all(const mt_live_taken *taken)
{
    for (unsigned i = 0; i < MT_LIVE_SHARDS; i++)
        if (taken->bits[i / 64] & ((uint64_t)1 << (i % 64)))
            mt_lock_release(&shards[i].lock);
}
