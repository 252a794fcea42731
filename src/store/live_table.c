/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Live table: MT_LIVE_SHARDS open-addressed hash tables with linear probing
 * and backward-shift deletion (no tombstones, so probe lengths stay short
 * under heavy churn).
 *
 * Invariants, per shard, whenever its lock is free:
 * - every live block the program owns and memtrace recorded is in exactly
 *   one slot (24 bytes, packed: see slot) or, if its record does not pack,
 *   one side record, of the shard shard_of names (live_table.h); count
 *   counts the slots in use, side_count the side records;
 * - count <= cap * MAX_LOAD_NUM / MAX_LOAD_DEN, FIRST_CAP <= cap <=
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
 * count and bytes, its side pointer and side_count, and mapped_bytes; the
 * lock holder alone writes all but the last and reads them relaxed. The entries themselves are
 * plain: a reader without the lock reads them only while the holder looks stopped, so a torn entry
 * (the holder was merely slow) is possible and the report says its answer may be stale. */
#include "store/live_table.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/lock.h"
#include "base/os.h"

#include <string.h>
#include <sys/mman.h>

/* A shard's first table: FIRST_BYTES (the header and 9 slots of 24
 * bytes, 7 records), the shard's own piece of one array of them mapped
 * once for all shards (first_tables), 16 to a page. A shard is made at its
 * first insert, and a sampled run that holds a few dozen blocks spread
 * over the 16 shards of each of its heap's regions touched a page per
 * shard when this was a page (churn: 48 shards, 196 KiB). The second
 * table is one page (the header and 169 slots), its own mapping, and the
 * first is then retired by zeroing it (its page is its neighbours'). */
#define FIRST_BYTES 256
#define FIRST_CAP ((FIRST_BYTES - sizeof(struct slots)) / sizeof(slot))
#define INITIAL_BYTES 4096
/* The most records a shard holds per slot before it grows: 4/5. A shard
 * grows by a quarter (GROW_NUM / GROW_DEN of its mapping, in whole pages),
 * not by doubling, so its load runs from 64% to 80%: the mapping is 40 to
 * 37.5 bytes per record (doubling: 30 to 60, which the peak of a program
 * whose count just crossed a threshold pays in full; with 32-byte slots it
 * was 40 to 50). Each record is then
 * copied about 4 times over a shard's growth instead of once: a sequential
 * read and a scattered write per copy, rare next to the inserts. An insert
 * probes 4.2 slots on average (linear probing's 1/2 + 1/(2 * (1 -
 * load)^2)), 13 at the top: more slots of the lines it mostly reads
 * already (2.7 slots a line). */
#define MAX_LOAD_NUM 4
#define MAX_LOAD_DEN 5
#define GROW_NUM 5
#define GROW_DEN 4
/* The readers' bound (tools/tables.c); far past any mapping that succeeds. */
#define MAX_CAP ((size_t)1 << 40)

/* A slot: a record packed in 24 bytes (live_table.h's MT_LIVE_SLOT_*;
 * the state descriptor's live_slot_* words say the same to readers out
 * of process): w0 the address in its low MT_LIVE_SLOT_PTR_BITS bits and
 * the size's high bits above them; seq_word as mt_live_entry's; w2 the
 * stack id in its low 32 bits, the thread word (thread | kind) above
 * them and the size's low MT_LIVE_SLOT_SIZE_LOW bits at the top. A slot
 * is empty iff w0 is 0 (a record's address is never 0). */
typedef struct {
    uint64_t w0, seq_word, w2;
} slot;
#define PTR_MASK ((UINT64_C(1) << MT_LIVE_SLOT_PTR_BITS) - 1)
#define LOW_MASK ((UINT64_C(1) << MT_LIVE_SLOT_SIZE_LOW) - 1)
#define SIZE_BITS (64 - MT_LIVE_SLOT_PTR_BITS + MT_LIVE_SLOT_SIZE_LOW)
#define THREAD_WORD_BITS (64 - 32 - MT_LIVE_SLOT_SIZE_LOW)
_Static_assert(sizeof(slot) == MT_LIVE_SLOT_SIZE, "the descriptor's live_slot_size");
_Static_assert(MT_ENTRY_THREAD_BITS + 2 <= THREAD_WORD_BITS, "every thread word packs");

static inline uintptr_t slot_ptr(const slot *x)
{
    return x->w0 & PTR_MASK;
}

/* Whether E fits a slot: false for a block of 2^SIZE_BITS bytes (8 MiB)
 * or more, or at an address of 2^MT_LIVE_SLOT_PTR_BITS or more (none that
 * x86-64's 4-level page tables map; a program's own pool up there, with
 * 5 levels): those go to the shard's side records. */
static inline bool packs(const mt_live_entry *e)
{
    return (e->ptr >> MT_LIVE_SLOT_PTR_BITS | e->size >> SIZE_BITS |
            (uint64_t)e->thread >> THREAD_WORD_BITS) == 0;
}

static inline slot pack(const mt_live_entry *e)
{
    return (slot){ e->ptr | (e->size >> MT_LIVE_SLOT_SIZE_LOW) << MT_LIVE_SLOT_PTR_BITS,
                   e->seq_word,
                   e->stack | (uint64_t)e->thread << 32 |
                       (e->size & LOW_MASK) << (64 - MT_LIVE_SLOT_SIZE_LOW) };
}

static inline void unpack(const slot *x, mt_live_entry *e)
{
    e->ptr = x->w0 & PTR_MASK;
    e->size = (x->w0 >> MT_LIVE_SLOT_PTR_BITS) << MT_LIVE_SLOT_SIZE_LOW |
              x->w2 >> (64 - MT_LIVE_SLOT_SIZE_LOW);
    e->seq_word = x->seq_word;
    e->stack = (uint32_t)x->w2;
    e->thread = (uint32_t)(x->w2 >> 32) & (((uint32_t)1 << THREAD_WORD_BITS) - 1);
}

/* A mapping of slots: cap is written before the mapping is published and
 * never again (a retired mapping reads 0); every access goes through the
 * atomic macros, relaxed, since the publication orders it. The header is
 * one slot. Slots are 24 bytes: one in four straddles two cache lines
 * (prefetch_run fetches both). cap is not the first word, so that the
 * state descriptor's live_cap_offset, nonzero, also says that capacities
 * are counts (descriptor.h). */
struct slots {
    size_t unused;
    size_t cap;
    size_t pad;
    slot e[];
};
_Static_assert(offsetof(struct slots, cap) != 0, "live_cap_offset: nonzero");
_Static_assert(offsetof(struct slots, e) == sizeof(slot), "the header is one slot");
_Static_assert(FIRST_CAP * sizeof(slot) + sizeof(struct slots) == FIRST_BYTES - 16 &&
                   FIRST_CAP * MAX_LOAD_NUM / MAX_LOAD_DEN >= 1,
               "a first table holds records, and is no capacity a page's is");

/* A shard's side records, the few that do not pack (packs): whole
 * mt_live_entry records, the first count of cap in use, in no order.
 * cap is written before the mapping is published and never again. */
struct side {
    size_t unused;
    size_t cap;
    size_t pad[2];
    mt_live_entry e[];
};
_Static_assert(offsetof(struct side, e) == sizeof(mt_live_entry), "the header is one record");

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
     * lock use it to aim a prefetch (mt_live_prefetch) and, loaded with
     * acquire before the slots pointer (grow stores it after, with
     * release), to bound the slots a free's look reads
     * (mt_live_prefetch_size); the reports read the mapping's own (see
     * above). */
    mt_atomic(size_t) cap;
    /* The side records (struct side), NULL before the first; published
     * with release as slots is. side_count: how many, read without the
     * lock as count is (an insert or remove looks at the side records
     * only when it is nonzero). */
    mt_atomic(struct side *) side;
    mt_atomic(size_t) side_count;
} __attribute__((aligned(MT_CACHELINE)));

static struct shard shards[MT_LIVE_SHARDS];
/* A statistic: relaxed; grow's add and subtract may be seen in any order. */
static mt_atomic(size_t) mapped_bytes;

/* The debugger reads these words as plain integers and pointers. */
_Static_assert(sizeof(mt_atomic(size_t)) == sizeof(size_t) &&
                   _Alignof(mt_atomic(size_t)) == _Alignof(size_t),
               "the state descriptor's shard layout");
_Static_assert(sizeof(mt_atomic(struct side *)) == sizeof(void *) &&
                   _Alignof(mt_atomic(struct side *)) == _Alignof(void *),
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
 * Callers pass a capacity a live mapping has: under the lock, from
 * readable_cap, or the shard's as mt_live_prefetch_size loads it. */
static inline size_t home_of(uint64_t h, size_t cap)
{
    return (size_t)(((unsigned __int128)(h << MT_LIVE_GROUP_BITS) * cap) >> 64);
}

/* The slot after I in a table of CAP slots (the probe wraps). */
static inline size_t next_slot(size_t i, size_t cap)
{
    return i + 1 == cap ? 0 : i + 1;
}

/* The bytes of a mapping of CAP slots, in whole pages (grow chooses CAP
 * to fill them). */
static size_t slots_bytes(size_t cap)
{
    size_t page = mt_os_page_size();
    return (sizeof(struct slots) + cap * sizeof(slot) + page - 1) / page * page;
}

/* For the lock holder: the capacity of SH's live mapping, from the shard's
 * own line. */
static inline size_t cap_of(const struct shard *sh)
{
    MT_ASSERT(mt_lock_is_mine(&sh->lock));
    size_t cap = mt_atomic_load_relaxed(&sh->cap);
    MT_ASSERT(cap >= FIRST_CAP && cap <= MAX_CAP &&
              cap == mt_atomic_load_relaxed(&mt_atomic_load_relaxed(&sh->slots)->cap));
    return cap;
}

/* For a reader that may not hold the lock: S's capacity, read once, or 0 if
 * S is NULL or retired (zeros) or the value is one no live mapping has; 0
 * means an empty table. */
static size_t readable_cap(const struct slots *s)
{
    size_t cap = s ? mt_atomic_load_relaxed(&s->cap) : 0;
    return cap >= FIRST_CAP && cap <= MAX_CAP ? cap : 0;
}

/* Index of PTR in S, whose capacity is CAP, or SIZE_MAX. */
static size_t find_slot(const struct slots *s, size_t cap, uintptr_t ptr, uint64_t h)
{
    for (size_t i = home_of(h, cap), n = 0; n < cap; i = next_slot(i, cap), n++) {
        uintptr_t p = slot_ptr(&s->e[i]);
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
    while (s->e[i].w0 != 0 && slot_ptr(&s->e[i]) != e->ptr)
        i = next_slot(i, cap);
    mt_live_entry old = { 0 };
    if (s->e[i].w0)
        unpack(&s->e[i], &old);
    s->e[i] = pack(e);
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

/* The first tables of all shards, FIRST_BYTES each, shard i's at i *
 * FIRST_BYTES: mapped at the first shard's first insert (published with
 * release; never unmapped); 1 when that failed. */
static mt_atomic(uintptr_t) first_tables;

/* SH's first table (zeroes), or NULL when the array cannot be mapped (the
 * shard then starts at a page of its own). */
static struct slots *first_table(struct shard *sh)
{
    uintptr_t base = mt_atomic_load_acquire(&first_tables);
    if (!base) {
        void *p = mt_os_map((size_t)MT_LIVE_SHARDS * FIRST_BYTES, "live table");
        uintptr_t got = p ? (uintptr_t)p : 1, expected = 0;
        if (!mt_atomic_cas_acq_rel(&first_tables, &expected, got)) {
            if (p) /* another shard's grow mapped it first */
                munmap(p, (size_t)MT_LIVE_SHARDS * FIRST_BYTES);
            got = expected;
        }
        base = got;
    }
    if (base == 1)
        return NULL;
    return (struct slots *)(base + (size_t)(sh - shards) * FIRST_BYTES);
}

/* Under the shard lock: a table with room for one more record, or NULL.
 * The new mapping is a quarter larger than the old one, in whole pages
 * (the entries fill its last page). */
static MT_COLD struct slots *grow(struct shard *sh)
{
    MT_ASSERT(mt_lock_is_mine(&sh->lock));
    struct slots *old = mt_atomic_load_relaxed(&sh->slots);
    size_t old_cap = old ? cap_of(sh) : 0;
    struct slots *s = old ? NULL : first_table(sh);
    size_t cap = FIRST_CAP, bytes = FIRST_BYTES;
    if (!s) {
        bytes = INITIAL_BYTES;
        if (old && old_cap != FIRST_CAP) {
            size_t page = mt_os_page_size();
            bytes = (slots_bytes(old_cap) / GROW_DEN * GROW_NUM + page - 1) / page * page;
        }
        cap = (bytes - sizeof(struct slots)) / sizeof(slot);
        if (cap > MAX_CAP)
            return NULL;
        s = map_slots(slots_bytes(cap));
        if (!s)
            return NULL;
        bytes = slots_bytes(cap);
    }
    mt_atomic_store_relaxed(&s->cap, cap);
    for (size_t i = 0; i < old_cap; i++)
        if (old->e[i].w0) {
            size_t j = home_of(hash_ptr(slot_ptr(&old->e[i])), cap);
            while (s->e[j].w0 != 0)
                j = next_slot(j, cap);
            s->e[j] = old->e[i];
        }
    /* Pairs with the acquire loads in mt_live_find and
     * mt_live_find_around. */
    mt_atomic_store_release(&sh->slots, s);
    /* After the slots, with release: a reader that loads cap with acquire
     * and then slots gets a mapping at least as new as the one of that
     * cap, so at least as large (capacities only grow): every slot below
     * the cap lies inside it (mt_live_prefetch_size). */
    mt_atomic_store_release(&sh->cap, cap);
    mt_atomic_add_relaxed(&mapped_bytes, bytes);
    if (old && old_cap == FIRST_CAP) {
        /* A first table: zeroed in place, cap first (a reader that loads
         * 0 there takes the table for empty; one that read the cap before
         * finds the slots it probes empty, or not yet zeroed: the entries
         * are plain, as for any reader without the lock). */
        mt_atomic_store_relaxed(&old->cap, 0);
        memset(old->e, 0, FIRST_CAP * sizeof(slot));
        mt_atomic_sub_relaxed(&mapped_bytes, FIRST_BYTES);
    } else if (old) {
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
static inline void prefetch_run(const slot *e)
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

/* How many slots from the home slot mt_live_prefetch_size looks at: all
 * in the two lines prefetch_run fetches (a slot starts at most 56 bytes
 * into its line, so three end within the next). */
#define PEEK_SLOTS 3

size_t mt_live_prefetch_size(uintptr_t ptr)
{
    uint64_t h = hash_ptr(ptr);
    struct shard *sh = shard_of(ptr, h);
    __builtin_prefetch(sh, 1);
    /* Without the lock, as mt_live_prefetch, but the slots are loaded: the
     * capacity comes from the shard's line (no load of the mapping's own
     * header, another line, before the slots' address is known), loaded
     * before the slots pointer and with acquire, which pairs with grow's
     * release: the mapping loaded then is the one of that capacity or a
     * newer, larger one (a retired one reads zeros), so every slot read
     * lies inside it. */
    size_t cap = mt_atomic_load_acquire(&sh->cap);
    const struct slots *s = mt_atomic_load_relaxed(&sh->slots);
    if (!s || cap < FIRST_CAP || cap > MAX_CAP)
        return 0;
    size_t i = home_of(h, cap);
    prefetch_run(&s->e[i]);
    if (i > cap - PEEK_SLOTS)
        return 0; /* the run wraps: rare, and only a prefetch is lost */
    /* No branch on the loaded words: they may arrive long after the code
     * that follows has run ahead, which a mispredicted branch would throw
     * away (a conditional is compiled to one): a slot is taken through a
     * mask, all ones where it matches. One slot at most matches but for a
     * torn read, whose size is as wrong as a stale one; none matched, the
     * size is 0. */
    uint64_t w0 = 0, w2 = 0;
    for (size_t k = 0; k < PEEK_SLOTS; k++) {
        const slot *x = &s->e[i + k];
        uint64_t hit = -(uint64_t)((x->w0 & PTR_MASK) == ptr);
        w0 |= x->w0 & hit;
        w2 |= x->w2 & hit;
    }
    return (size_t)((w0 >> MT_LIVE_SLOT_PTR_BITS) << MT_LIVE_SLOT_SIZE_LOW |
                    w2 >> (64 - MT_LIVE_SLOT_SIZE_LOW));
}

/* The cyclic distance from slot A forward to slot B in a table of CAP. */
static inline size_t ahead(size_t a, size_t b, size_t cap)
{
    return b >= a ? b - a : b + cap - a;
}

/* Backward-shift deletion of slot I. */
static void erase(struct slots *s, size_t cap, size_t i)
{
    for (size_t j = next_slot(i, cap);; j = next_slot(j, cap)) {
        uintptr_t p = slot_ptr(&s->e[j]);
        if (p == 0)
            break;
        size_t k = home_of(hash_ptr(p), cap);
        /* Slot j may move to i iff its home k is not cyclically in (i, j]. */
        if (ahead(k, j, cap) >= ahead(i, j, cap)) {
            s->e[i] = s->e[j];
            i = j;
        }
    }
    s->e[i].w0 = 0;
}

/* ---- side records: a shard's records that do not pack, few (blocks of
 * 8 MiB or more), so kept in an array searched from end to end. */

/* For a reader that may not hold the lock: the side records of SH in
 * *E and their number, read once, bounded by the mapping's own cap (0
 * from a retired mapping). */
static size_t side_records(const struct shard *sh, const mt_live_entry **e)
{
    /* Pairs with the release in side_grow. */
    const struct side *sd = mt_atomic_load_acquire(&sh->side);
    size_t n = mt_atomic_load_relaxed(&sh->side_count);
    size_t cap = sd ? mt_atomic_load_relaxed(&sd->cap) : 0;
    *e = sd ? sd->e : NULL;
    return n < cap ? n : cap;
}

static size_t side_find(const struct shard *sh, uintptr_t ptr)
{
    const struct side *sd = mt_atomic_load_relaxed(&sh->side);
    size_t n = mt_atomic_load_relaxed(&sh->side_count);
    for (size_t i = 0; i < n; i++)
        if (sd->e[i].ptr == ptr)
            return i;
    return SIZE_MAX;
}

/* Under the lock: removes the side record of PTR into *OUT (and its size
 * from the shard's bytes); false if there is none. */
static MT_COLD bool side_take(struct shard *sh, uintptr_t ptr, mt_live_entry *out)
{
    MT_ASSERT(mt_lock_is_mine(&sh->lock));
    size_t i = side_find(sh, ptr);
    if (i == SIZE_MAX)
        return false;
    struct side *sd = mt_atomic_load_relaxed(&sh->side);
    size_t n = mt_atomic_load_relaxed(&sh->side_count);
    *out = sd->e[i];
    sd->e[i] = sd->e[n - 1];
    sd->e[n - 1].ptr = 0;
    mt_atomic_store_relaxed(&sh->side_count, n - 1);
    mt_atomic_store_relaxed(&sh->bytes, mt_atomic_load_relaxed(&sh->bytes) - out->size);
    return true;
}

/* Under the lock: side records with room for one more, or NULL. Doubles,
 * from one page; the old mapping is retired as grow retires slots. */
static MT_COLD struct side *side_grow(struct shard *sh)
{
    struct side *old = mt_atomic_load_relaxed(&sh->side);
    size_t n = mt_atomic_load_relaxed(&sh->side_count);
    size_t old_cap = old ? mt_atomic_load_relaxed(&old->cap) : 0;
    if (old && n < old_cap)
        return old;
    size_t bytes = old ? 2 * (sizeof(struct side) + old_cap * sizeof(mt_live_entry))
                       : mt_os_page_size();
    struct side *sd = mt_os_map(bytes, "live table");
    if (!sd)
        return NULL;
    size_t cap = (bytes - sizeof(struct side)) / sizeof(mt_live_entry);
    mt_atomic_store_relaxed(&sd->cap, cap);
    for (size_t i = 0; i < n; i++)
        sd->e[i] = old->e[i];
    /* Pairs with the acquire load in side_records. */
    mt_atomic_store_release(&sh->side, sd);
    mt_atomic_add_relaxed(&mapped_bytes, bytes);
    if (old) {
        size_t old_bytes = sizeof(struct side) + old_cap * sizeof(mt_live_entry);
        mt_os_retire(old, old_bytes);
        mt_atomic_sub_relaxed(&mapped_bytes, old_bytes);
    }
    return sd;
}

/* Under the lock: records E, which does not pack, replacing any record of
 * its address (a side record or a slot). */
static MT_COLD bool side_insert(struct shard *sh, const mt_live_entry *e, uint64_t h)
{
    mt_live_entry old = { 0 };
    if (!side_take(sh, e->ptr, &old)) {
        struct slots *s = mt_atomic_load_relaxed(&sh->slots);
        size_t cap = s ? cap_of(sh) : 0;
        size_t i = s ? find_slot(s, cap, e->ptr, h) : SIZE_MAX;
        if (i != SIZE_MAX) {
            unpack(&s->e[i], &old);
            erase(s, cap, i);
            mt_atomic_store_relaxed(&sh->count, mt_atomic_load_relaxed(&sh->count) - 1);
            mt_atomic_store_relaxed(&sh->bytes, mt_atomic_load_relaxed(&sh->bytes) - old.size);
        }
    }
    struct side *sd = side_grow(sh);
    if (!sd)
        return false;
    size_t n = mt_atomic_load_relaxed(&sh->side_count);
    sd->e[n] = *e;
    mt_atomic_store_relaxed(&sh->side_count, n + 1);
    mt_atomic_store_relaxed(&sh->bytes, mt_atomic_load_relaxed(&sh->bytes) + e->size);
    return true;
}

/* Zeroes the scratch registers packing used: a slot's first word is the
 * block's address itself for a block under 64 bytes, and the compiler
 * keeps it in a caller-saved register, which would then still hold the
 * address when malloc returns to a program that has dropped it: a leak
 * check reads the registers of a stopped thread as roots and would call
 * the block reachable. */
static inline __attribute__((always_inline)) void scrub_scratch(void)
{
#if defined(__x86_64__)
    __asm__ volatile("xor %%r8d, %%r8d\n\txor %%r9d, %%r9d\n\txor %%r10d, %%r10d\n\t"
                     "xor %%r11d, %%r11d"
                     :
                     :
                     : "r8", "r9", "r10", "r11");
#endif
}

bool mt_live_insert(const mt_live_entry *e)
{
    uint64_t h = hash_ptr(e->ptr);
    struct shard *sh = shard_of(e->ptr, h);
    mt_lock_acquire(&sh->lock);
    if (MT_UNLIKELY(!packs(e))) {
        bool ok = side_insert(sh, e, h);
        mt_lock_release(&sh->lock);
        return ok;
    }
    struct slots *s = mt_atomic_load_relaxed(&sh->slots);
    size_t count = mt_atomic_load_relaxed(&sh->count);
    if (MT_UNLIKELY(!s || (count + 1) * MAX_LOAD_DEN > MAX_LOAD_NUM * cap_of(sh)))
        s = grow(sh);
    if (MT_LIKELY(s != NULL)) {
        mt_live_entry old = put(s, cap_of(sh), e, h);
        if (old.ptr == 0) {
            count++;
            /* A side record of the same address (its free unseen) goes:
             * side_take takes its size off the shard's bytes. */
            if (MT_UNLIKELY(mt_atomic_load_relaxed(&sh->side_count) != 0)) {
                mt_live_entry gone;
                side_take(sh, e->ptr, &gone);
            }
        }
        MT_ASSERT(count * MAX_LOAD_DEN <= MAX_LOAD_NUM * cap_of(sh));
        mt_atomic_store_relaxed(&sh->count, count);
        mt_atomic_store_relaxed(&sh->bytes, mt_atomic_load_relaxed(&sh->bytes) + e->size -
                                                (old.ptr ? old.size : 0));
    }
    mt_lock_release(&sh->lock);
    scrub_scratch();
    return s != NULL;
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
        mt_live_entry got;
        unpack(&s->e[i], &got);
        if (out)
            *out = got;
        uint64_t bytes = mt_atomic_load_relaxed(&sh->bytes);
        size_t count = mt_atomic_load_relaxed(&sh->count);
        MT_ASSERT(count > 0 && bytes >= got.size);
        mt_atomic_store_relaxed(&sh->bytes, bytes - got.size);
        erase(s, cap, i);
        mt_atomic_store_relaxed(&sh->count, count - 1);
    } else if (MT_UNLIKELY(mt_atomic_load_relaxed(&sh->side_count) != 0)) {
        mt_live_entry got;
        found = side_take(sh, ptr, &got);
        if (found && out)
            *out = got;
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
    bool found = i != SIZE_MAX;
    if (found) {
        unpack(&s->e[i], out);
    } else {
        const mt_live_entry *side;
        size_t n = side_records(sh, &side);
        for (size_t k = 0; k < n && !found; k++)
            if (side[k].ptr == ptr) {
                *out = side[k];
                found = true;
            }
    }
    if (locked)
        mt_lock_release(&sh->lock);
    return found;
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
        if (s->e[i].w0 != 0) {
            mt_live_entry e;
            unpack(&s->e[i], &e);
            fn(&e, ctx);
        }
    const mt_live_entry *side;
    size_t n = side_records(sh, &side);
    for (size_t k = 0; k < n; k++)
        if (side[k].ptr != 0) {
            mt_live_entry e = side[k];
            fn(&e, ctx);
        }
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
        n += mt_atomic_load_relaxed(&shards[i].count) +
             mt_atomic_load_relaxed(&shards[i].side_count);
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
        .side_offset = offsetof(struct shard, side),
        .side_count_offset = offsetof(struct shard, side_count),
        .side_entries_offset = offsetof(struct side, e),
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
