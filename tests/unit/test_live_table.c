/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Live table: insert, lookup, remove, replacement, growth, backward-shift
 * deletion against a reference model, interior lookup, and many threads. */
#include "base/lock.h"
#include "store/live_table.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Criterion reports every assertion to its runner and gives up after a few
 * hundred thousand, so the loops below count mismatches and assert once. */

/* Each test runs in its own process (Criterion forks), so the table starts
 * empty every time. Addresses are synthetic: the table never dereferences. */
static mt_live_entry entry(uintptr_t ptr, uint64_t size, uint32_t stack)
{
    mt_live_entry e = { .ptr = ptr, .size = size, .seq = ptr / 16, .stack = stack, .thread = 1 };
    return e;
}

Test(live_table, insert_find_remove)
{
    mt_live_entry e = entry(0x1000, 100, 7), out;
    bool unlocked = false;
    cr_assert(mt_live_insert(&e));
    cr_assert_eq(mt_live_count(), 1);
    cr_assert(mt_live_find(0x1000, &out, &unlocked));
    cr_assert_eq(out.size, 100);
    cr_assert_eq(out.stack, 7);
    cr_assert_not(unlocked);
    cr_assert_not(mt_live_find(0x1010, &out, &unlocked));
    cr_assert(mt_live_remove(0x1000, &out));
    cr_assert_eq(out.size, 100);
    cr_assert_not(mt_live_remove(0x1000, &out), "a second remove must miss");
    cr_assert_eq(mt_live_count(), 0);
}

Test(live_table, same_address_replaces_record)
{
    mt_live_entry a = entry(0x2000, 10, 1), b = entry(0x2000, 20, 2), out;
    bool unlocked = false;
    mt_live_insert(&a);
    mt_live_insert(&b);
    cr_assert_eq(mt_live_count(), 1);
    cr_assert_eq(mt_live_block_bytes(), 20, "the replaced record's bytes are gone");
    cr_assert(mt_live_find(0x2000, &out, &unlocked));
    cr_assert_eq(out.size, 20);
    cr_assert_eq(out.stack, 2);
    mt_live_remove(0x2000, NULL);
    cr_assert_eq(mt_live_block_bytes(), 0);
}

Test(live_table, grows_and_keeps_everything)
{
    enum { N = 200000 };
    size_t failed = 0;
    for (uintptr_t i = 1; i <= N; i++) {
        mt_live_entry e = entry(i * 48, i, (uint32_t)i);
        failed += !mt_live_insert(&e);
    }
    cr_assert_eq(failed, 0);
    cr_assert_eq(mt_live_count(), N);
    size_t lost = 0;
    for (uintptr_t i = 1; i <= N; i++) {
        mt_live_entry out;
        bool unlocked = false;
        lost += !mt_live_find(i * 48, &out, &unlocked) || out.size != i;
    }
    cr_assert_eq(lost, 0, "%zu of %d records lost or wrong", lost, N);
    /* 32-byte entries at a load factor of 2/5 to 4/5: at most 80 bytes
     * each (the shards' headers aside). */
    cr_assert_leq(mt_live_mapped_bytes(), (size_t)N * 80 + MT_LIVE_SHARDS * 32);
}

/* One shard filled record by record: its mapping never holds more than 50
 * bytes a record once past its first, however close to a growth the count
 * stands (a shard grows by a quarter at 4/5 full, so its load stays at 64%
 * or more; doubling would leave 80 bytes a record just after a growth),
 * plus a page for the rounding. Every record stays findable across the
 * growths (probes that wrap from the last slot to the first included). */
Test(live_table, a_grown_shard_holds_at_least_64_percent)
{
    enum { N = 60000 };
    size_t worst_at = 0, over = 0, lost = 0, count = 0;
    for (uintptr_t p = 16; count < N; p += 16) {
        uint64_t h = (uint64_t)(p >> MT_LIVE_HASH_SHIFT) * MT_LIVE_HASH_MULTIPLIER;
        if (h >> (64 - MT_LIVE_GROUP_BITS) != 0) /* shard 0 of region 0 only */
            continue;
        mt_live_entry e = entry(p, 1, 1);
        lost += !mt_live_insert(&e);
        size_t mapped = mt_live_mapped_bytes();
        if (++count > 8192 / 32 && mapped > count * 50 + 4096 && !over++)
            worst_at = count;
    }
    cr_assert_eq(lost, 0);
    cr_assert_eq(over, 0, "%zu counts over 50 bytes a record, first at %zu records", over,
                 worst_at);
    count = 0;
    for (uintptr_t p = 16; count < N; p += 16) {
        uint64_t h = (uint64_t)(p >> MT_LIVE_HASH_SHIFT) * MT_LIVE_HASH_MULTIPLIER;
        if (h >> (64 - MT_LIVE_GROUP_BITS) != 0)
            continue;
        mt_live_entry out;
        bool unlocked = false;
        lost += !mt_live_find(p, &out, &unlocked) || out.ptr != p;
        count++;
    }
    cr_assert_eq(lost, 0, "%zu records not found after the growths", lost);
}

/* Random inserts and removes checked against a plain array, so a wrong
 * backward shift (an entry moved past its home, or left unreachable) shows. */
Test(live_table, random_churn_matches_model)
{
    enum { SLOTS = 5000, OPS = 300000 };
    static uint64_t model[SLOTS]; /* size recorded per address, 0 = absent */
    uint64_t x = 88172645463325252ull;
    size_t live = 0, wrong = 0;
    for (int op = 0; op < OPS; op++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t k = x % SLOTS;
        uintptr_t addr = 0x10000 + k * 16;
        if (model[k]) {
            mt_live_entry out;
            wrong += !mt_live_remove(addr, &out) || out.size != model[k];
            model[k] = 0;
            live--;
        } else {
            model[k] = 1 + (x >> 40) % 1000;
            mt_live_entry e = entry(addr, model[k], 3);
            mt_live_insert(&e);
            live++;
        }
    }
    cr_assert_eq(wrong, 0, "%zu removes missed or returned a wrong record", wrong);
    cr_assert_eq(mt_live_count(), live);
    uint64_t bytes = 0;
    for (size_t k = 0; k < SLOTS; k++)
        bytes += model[k];
    cr_assert_eq(mt_live_block_bytes(), bytes);
    for (size_t k = 0; k < SLOTS; k++) {
        mt_live_entry out;
        bool unlocked = false;
        bool found = mt_live_find(0x10000 + k * 16, &out, &unlocked);
        wrong += found != (model[k] != 0) || (found && out.size != model[k]);
    }
    cr_assert_eq(wrong, 0, "%zu lookups disagree with the model", wrong);
}

/* The live block holding ADDR, as print_trace finds it: the scan's BELOW. */
static bool find_containing(uintptr_t addr, mt_live_entry *out, bool *unlocked)
{
    mt_live_around around;
    bool inside = mt_live_find_around(addr, &around, unlocked);
    *out = around.below;
    return inside;
}

Test(live_table, interior_pointer_finds_its_block)
{
    mt_live_entry a = entry(0x5000, 100, 1), b = entry(0x5100, 0, 2), out;
    bool unlocked = false;
    mt_live_insert(&a);
    mt_live_insert(&b);
    cr_assert(find_containing(0x5000 + 17, &out, &unlocked));
    cr_assert_eq(out.ptr, 0x5000);
    cr_assert(find_containing(0x5000 + 99, &out, &unlocked));
    cr_assert_not(find_containing(0x5000 + 100, &out, &unlocked));
    cr_assert(find_containing(0x5100, &out, &unlocked), "an empty block owns its address");
    cr_assert_eq(out.ptr, 0x5100);
    cr_assert_not(find_containing(0x4fff, &out, &unlocked));
}

Test(live_table, nearest_blocks_around_an_address)
{
    /* Spread over many shards: the nearest are found whatever shard holds
     * them. */
    for (uintptr_t k = 0; k < 1000; k++) {
        mt_live_entry e = entry(0x100000 + k * 0x100, 100, 1);
        mt_live_insert(&e);
    }
    mt_live_around around;
    bool unlocked = false;
    cr_assert_not(mt_live_find_around(0x100000 + 5 * 0x100 + 104, &around, &unlocked));
    cr_assert_eq(around.below.ptr, 0x100000 + 5 * 0x100);
    cr_assert_eq(around.above.ptr, 0x100000 + 6 * 0x100);
    cr_assert_not(mt_live_find_around(0xfff00, &around, &unlocked));
    cr_assert_eq(around.below.ptr, 0, "nothing below");
    cr_assert_eq(around.above.ptr, 0x100000);
    cr_assert_not(mt_live_find_around(0x200000, &around, &unlocked));
    cr_assert_eq(around.below.ptr, 0x100000 + 999 * 0x100);
    cr_assert_eq(around.above.ptr, 0, "nothing above");
    cr_assert_not(unlocked);
}

enum { THREADS = 4, PER_THREAD = 100000 };

static void *worker(void *arg)
{
    uintptr_t base = (uintptr_t)arg;
    for (uintptr_t i = 0; i < PER_THREAD; i++) {
        mt_live_entry e = entry(base + i * 16, i, 1);
        mt_live_insert(&e);
        if (i % 3 == 0)
            mt_live_remove(base + i * 16, NULL);
    }
    return NULL;
}

Test(live_table, many_threads_exact_count)
{
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)((i + 1) << 32));
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    size_t kept = PER_THREAD - (PER_THREAD + 2) / 3;
    cr_assert_eq(mt_live_count(), THREADS * kept);
    size_t wrong = 0;
    for (uintptr_t i = 0; i < THREADS; i++)
        for (uintptr_t k = 0; k < PER_THREAD; k++) {
            mt_live_entry out;
            bool unlocked = false;
            wrong += mt_live_find(((i + 1) << 32) + k * 16, &out, &unlocked) != (k % 3 != 0);
        }
    cr_assert_eq(wrong, 0);
}

/* A report reading a shard without its lock (the holder looks stopped) may
 * load the shard's slots pointer just before the holder, resumed, grows the
 * shard and retires that mapping: the reader then probes a zeroed table
 * (capacity 0). It must find nothing, and neither fault nor shift by 64.
 * Deterministic: grow shard 0, then put its retired mapping back in the
 * shard, and a token of a thread that is not there in its lock, while the
 * lookups run. */
static uintptr_t in_shard0(unsigned n)
{
    uintptr_t p = 0;
    for (unsigned found = 0;;) {
        p += 16;
        uint64_t h = (uint64_t)(p >> MT_LIVE_HASH_SHIFT) * MT_LIVE_HASH_MULTIPLIER;
        if (h >> (64 - MT_LIVE_GROUP_BITS) == 0 && found++ == n)
            return p;
    }
}

Test(live_table, reader_of_retired_mapping_finds_nothing)
{
    mt_live_layout l;
    mt_live_describe(&l);
    char *shard0 = (char *)l.shards;
    void *first, *now;
    mt_live_entry e = entry(in_shard0(0), 100, 1), out;
    cr_assert(mt_live_insert(&e));
    memcpy(&first, shard0 + l.slots_offset, sizeof first);
    cr_assert_not_null(first);
    unsigned n = 1;
    do {
        e = entry(in_shard0(n++), 100, 1);
        cr_assert(mt_live_insert(&e));
        memcpy(&now, shard0 + l.slots_offset, sizeof now);
    } while (now == first);
    size_t cap;
    memcpy(&cap, (char *)first + l.cap_offset, sizeof cap);
    cr_assert_eq(cap, 0, "the grown-out mapping reads as zeros");

    /* The reader's view: lock held by a thread that will not release it,
     * slots pointer loaded before the growth. */
    int held, stopped = -1;
    memcpy(&held, shard0 + l.lock_offset, sizeof held);
    memcpy(shard0 + l.lock_offset, &stopped, sizeof stopped);
    memcpy(shard0 + l.slots_offset, &first, sizeof first);
    bool unlocked = false;
    bool found = mt_live_find(in_shard0(0), &out, &unlocked);
    bool found_in = find_containing(in_shard0(0) + 1, &out, &unlocked);
    memcpy(shard0 + l.slots_offset, &now, sizeof now);
    memcpy(shard0 + l.lock_offset, &held, sizeof held);

    cr_assert(unlocked, "the reader could not take the lock");
    cr_assert_not(found, "a retired table is empty");
    cr_assert_not(found_in, "a retired table is empty");
    unlocked = false;
    cr_assert(mt_live_find(in_shard0(0), &out, &unlocked), "the live mapping still answers");
    cr_assert(find_containing(in_shard0(n - 1) + 1, &out, &unlocked));
    cr_assert_eq(out.ptr, in_shard0(n - 1));
    cr_assert_not(unlocked);
}

/* The thread word: a thread number past what its bits hold (the 2^24th
 * thread and later) must not spill into the kind bits, or every free of
 * that thread's blocks would be a mismatched pair. Numbers past the bits
 * take the cycle above the registry's slots (threads.h, mt_thread_wrap). */
Test(live_table, thread_number_past_its_bits_keeps_the_kind)
{
    const uint32_t past = 1u << 24;
    mt_live_entry a = entry(0x7000, 16, 3), b = entry(0x7100, 16, 4), c = entry(0x7200, 16, 5), out;
    a.thread = mt_entry_thread_word(past, MT_KIND_MALLOC);
    b.thread = mt_entry_thread_word(past + 5, MT_KIND_NEW);
    c.thread = mt_entry_thread_word(MT_THREAD_NUMBER_MAX, MT_KIND_NEW_ARRAY);
    cr_assert(mt_live_insert(&a) && mt_live_insert(&b) && mt_live_insert(&c));
    bool unlocked = false;
    cr_assert(mt_live_find(0x7000, &out, &unlocked));
    cr_assert_eq(mt_entry_kind(&out), MT_KIND_MALLOC);
    cr_assert_eq(mt_entry_thread(&out), MT_THREADS_MAX + 1, "thread %u", mt_entry_thread(&out));
    cr_assert(mt_live_find(0x7100, &out, &unlocked));
    cr_assert_eq(mt_entry_kind(&out), MT_KIND_NEW);
    cr_assert_eq(mt_entry_thread(&out), MT_THREADS_MAX + 6, "thread %u", mt_entry_thread(&out));
    cr_assert(mt_live_find(0x7200, &out, &unlocked));
    cr_assert_eq(mt_entry_kind(&out), MT_KIND_NEW_ARRAY);
    cr_assert_eq(mt_entry_thread(&out), MT_THREAD_NUMBER_MAX);
}

/* Sharding by region (live_table.h): SEEN[n] is set for every shard that
 * holds one of N blocks spread over the region at BASE. */
static void shards_of_region(uintptr_t base, unsigned n, bool seen[MT_LIVE_SHARDS])
{
    mt_live_layout l;
    mt_live_describe(&l);
    uintptr_t step = ((uintptr_t)1 << MT_LIVE_REGION_SHIFT) / n & ~(uintptr_t)15;
    for (unsigned i = 0; i < n; i++) {
        mt_live_entry e = entry(base + i * step, 16, 1);
        cr_assert(mt_live_insert(&e));
    }
    for (unsigned s = 0; s < MT_LIVE_SHARDS; s++) {
        size_t count;
        memcpy(&count, (const char *)l.shards + s * l.shard_size + l.count_offset, sizeof count);
        seen[s] = count != 0;
    }
    for (unsigned i = 0; i < n; i++)
        cr_assert(mt_live_remove(base + i * step, NULL));
}

/* glibc's thread heaps: 64 MiB-aligned, mapped one after another. Blocks of
 * neighbouring heaps never share a shard (a lock) while the heaps are fewer
 * than the groups, and each heap's blocks spread over its whole group. */
Test(live_table, neighbouring_heaps_share_no_shard)
{
    enum { GROUPS = MT_LIVE_SHARDS >> MT_LIVE_GROUP_BITS };
    static bool seen[GROUPS][MT_LIVE_SHARDS];
    uintptr_t first = (uintptr_t)0x7f1234 << 20 & ~(((uintptr_t)1 << MT_LIVE_REGION_SHIFT) - 1);
    for (unsigned r = 0; r < GROUPS; r++)
        shards_of_region(first + ((uintptr_t)r << MT_LIVE_REGION_SHIFT), 4096, seen[r]);
    unsigned shared = 0, narrow = 0;
    for (unsigned s = 0; s < MT_LIVE_SHARDS; s++) {
        unsigned users = 0;
        for (unsigned r = 0; r < GROUPS; r++)
            users += seen[r][s];
        shared += users > 1;
    }
    for (unsigned r = 0; r < GROUPS; r++) {
        unsigned used = 0;
        for (unsigned s = 0; s < MT_LIVE_SHARDS; s++)
            used += seen[r][s];
        narrow += used != 1u << MT_LIVE_GROUP_BITS;
    }
    cr_assert_eq(shared, 0, "shards used by two heaps");
    cr_assert_eq(narrow, 0, "heaps not spread over their whole group");
}

static pthread_barrier_t both_ready;

static void *churn_region(void *arg)
{
    uintptr_t base = (uintptr_t)arg;
    pthread_barrier_wait(&both_ready);
    for (uintptr_t i = 0; i < 200000; i++) {
        uintptr_t p = base + (i * 4096 + (i & 255) * 16) % ((uintptr_t)1 << MT_LIVE_REGION_SHIFT);
        mt_live_entry e = entry(p, 32, 1);
        mt_live_insert(&e);
        if (i >= 1000)
            mt_live_remove(base + ((i - 1000) * 4096 + ((i - 1000) & 255) * 16) %
                                      ((uintptr_t)1 << MT_LIVE_REGION_SHIFT),
                           NULL);
    }
    return NULL;
}

/* Two threads, each on its own heap, as with glibc's arenas: neither ever
 * waits for a shard lock (mt_contended, the bench's contention line).
 * With shards shared by hash, they met a few times a run here, unless the
 * machine ran them one after the other. */
Test(live_table, threads_on_their_own_heaps_never_wait)
{
    uintptr_t region = (uintptr_t)0x7f5678 << 20 & ~(((uintptr_t)1 << MT_LIVE_REGION_SHIFT) - 1);
    pthread_t t[2];
    uint64_t before = mt_atomic_load_relaxed(&mt_contended);
    pthread_barrier_init(&both_ready, NULL, 2);
    for (uintptr_t i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, churn_region, (void *)(region + (i << MT_LIVE_REGION_SHIFT)));
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    uint64_t met = mt_atomic_load_relaxed(&mt_contended) - before;
    cr_assert_eq(met, 0, "contended %lu times", (unsigned long)met);
    cr_assert_eq(mt_live_count(), 2000);
}

/* mt_live_find from a debugger while the thread holding the block's shard
 * lock is stopped: it does not wait, answers from the shard, and says the
 * answer was read without the lock. */
Test(live_table, find_while_a_stopped_thread_holds_the_lock)
{
    uintptr_t p = (uintptr_t)0x7f9abc << 20;
    mt_live_entry e = entry(p, 48, 9), out;
    cr_assert(mt_live_insert(&e));
    mt_live_layout l;
    mt_live_describe(&l);
    char *lock = NULL;
    for (unsigned s = 0; s < MT_LIVE_SHARDS; s++) {
        size_t count;
        char *shard = (char *)l.shards + s * l.shard_size;
        memcpy(&count, shard + l.count_offset, sizeof count);
        if (count)
            lock = shard + l.lock_offset;
    }
    cr_assert_not_null(lock);
    int held, stopped = -1;
    memcpy(&held, lock, sizeof held);
    memcpy(lock, &stopped, sizeof stopped);
    bool unlocked = false;
    bool found = mt_live_find(p, &out, &unlocked);
    memcpy(lock, &held, sizeof held);
    cr_assert(found);
    cr_assert_eq(out.size, 48);
    cr_assert_eq(out.stack, 9);
    cr_assert(unlocked, "the answer says it was read without the lock");
}

/* mt_live_prefetch_size, which aims the free's prefetch of the block's
 * end: for a live record its exact size or 0 (not in the first slots of
 * its probe), never another record's; 0 for an address with no record
 * and for one removed. At the table's load (64% to 80%) most records sit
 * within two slots of their home: at least half are found. */
Test(live_table, prefetch_size_is_the_record_s_or_zero)
{
    enum { N = 100000 };
    for (uintptr_t i = 1; i <= N; i++) {
        mt_live_entry e = entry(i * 48, 1000 + i, (uint32_t)i);
        cr_assert(mt_live_insert(&e));
    }
    size_t wrong = 0, found = 0;
    for (uintptr_t i = 1; i <= N; i++) {
        size_t got = mt_live_prefetch_size(i * 48);
        wrong += got != 0 && got != 1000 + i;
        found += got != 0;
        wrong += mt_live_prefetch_size(i * 48 + 16) != 0; /* no record there */
    }
    cr_assert_eq(wrong, 0, "%zu sizes wrong", wrong);
    cr_assert_geq(found, N / 2, "only %zu of %d found", found, N);
    for (uintptr_t i = 1; i <= N; i += 2)
        cr_assert(mt_live_remove(i * 48, NULL));
    for (uintptr_t i = 1; i <= N; i++) {
        size_t got = mt_live_prefetch_size(i * 48);
        wrong += i % 2 ? got != 0 : got != 0 && got != 1000 + i;
    }
    cr_assert_eq(wrong, 0, "%zu removed records still found", wrong);
}
