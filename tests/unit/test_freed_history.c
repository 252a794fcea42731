/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Freed history: newest first, every record covering an address, bounded
 * capacity (the oldest records fall out), and writers that lap each other
 * never leave a reader a record mixing two pushes. */
#include "store/freed_history.h"
#include "freed_records.h"
#include "base/lock.h"

#include <criterion/criterion.h>
#include <pthread.h>

static uint64_t seqs[16];
static size_t nseqs;

static void collect(const mt_freed_record *r, void *ctx)
{
    (void)ctx;
    if (nseqs < 16)
        seqs[nseqs++] = r->alloc_seq;
}

static void push(uintptr_t ptr, uint64_t size, uint64_t seq)
{
    mt_freed_record r = { .ptr = ptr, .size = size, .alloc_seq = seq };
    mt_freed_push(&r);
}

Test(freed_history, newest_first_and_interior)
{
    mt_freed_init(8);
    push(0x1000, 64, 1);
    push(0x2000, 16, 2);
    push(0x1000, 32, 3); /* the address reused, then freed again */
    nseqs = 0;
    cr_assert_eq(mt_freed_find(0x1000 + 20, collect, NULL), 2);
    cr_assert_eq(seqs[0], 3);
    cr_assert_eq(seqs[1], 1);
    nseqs = 0;
    cr_assert_eq(mt_freed_find(0x1000 + 40, collect, NULL), 1, "only the 64-byte block covers +40");
    cr_assert_eq(seqs[0], 1);
    cr_assert_eq(mt_freed_find(0x3000, collect, NULL), 0);
}

static uint64_t near_seqs[16];
static size_t nnear;

static void collect_around(const mt_freed_record *r, bool near, void *ctx)
{
    if (!near)
        collect(r, ctx);
    else if (nnear < 16)
        near_seqs[nnear++] = r->alloc_seq;
}

Test(freed_history, near_records_newest_first_and_bounded)
{
    mt_freed_init(16);
    push(0x1000, 100, 1); /* ends 4 bytes before 0x1068 */
    push(0x1070, 16, 2);  /* starts 8 bytes after it */
    push(0x3000, 16, 3);  /* far */
    push(0x1060, 16, 4);  /* covers it */
    push(0x0f00, 16, 5);  /* ends 344 bytes before it */
    nseqs = nnear = 0;
    cr_assert_eq(mt_freed_find_around(0x1068, 4096, 2, collect_around, NULL), 1);
    cr_assert_eq(nseqs, 1);
    cr_assert_eq(seqs[0], 4);
    cr_assert_eq(nnear, 2, "at most NEAR_MAX near records");
    cr_assert_eq(near_seqs[0], 5);
    cr_assert_eq(near_seqs[1], 2);
    nseqs = nnear = 0;
    cr_assert_eq(mt_freed_find_around(0x1068, 8, 4, collect_around, NULL), 1);
    cr_assert_eq(nnear, 2, "within 8 bytes: the blocks 4 and 8 bytes away");
    cr_assert_eq(near_seqs[0], 2);
    cr_assert_eq(near_seqs[1], 1);
}

Test(freed_history, bounded_oldest_fall_out)
{
    mt_freed_init(4);
    for (uint64_t i = 1; i <= 10; i++)
        push(0x5000, 8, i);
    nseqs = 0;
    cr_assert_eq(mt_freed_find(0x5000, collect, NULL), 4);
    cr_assert_eq(seqs[0], 10);
    cr_assert_eq(seqs[3], 7);
}

Test(freed_history, disabled_finds_nothing)
{
    mt_freed_init(0);
    cr_assert_not(mt_freed_enabled());
    cr_assert_eq(mt_freed_find(0x5000, collect, NULL), 0);
}

/* mt_freed_each_since (bad_free.c's index over the ring): oldest first,
 * each push once across chained calls, only what the ring still holds. */
Test(freed_history, each_since_chains_and_stays_in_the_window)
{
    mt_freed_init(4);
    push(0x1000, 8, 1);
    push(0x2000, 8, 2);
    nseqs = 0;
    uint64_t next = mt_freed_each_since(0, collect, NULL);
    cr_assert_eq(next, 2);
    cr_assert_eq(nseqs, 2);
    cr_assert_eq(seqs[0], 1);
    cr_assert_eq(seqs[1], 2);
    for (uint64_t i = 3; i <= 8; i++)
        push(0x3000, 8, i);
    nseqs = 0;
    next = mt_freed_each_since(next, collect, NULL);
    cr_assert_eq(next, 8);
    cr_assert_eq(nseqs, 4, "pushes 3 and 4 have left the ring");
    cr_assert_eq(seqs[0], 5);
    cr_assert_eq(seqs[3], 8);
    nseqs = 0;
    cr_assert_eq(mt_freed_each_since(next, collect, NULL), 8);
    cr_assert_eq(nseqs, 0);
}

/* A writer stopped in the middle of its copy, modelled by hand: it took the
 * next push number and claimed that push's slot. */
static mt_freed_record *stalled_writer(uint64_t *push_number)
{
    size_t cap;
    uint64_t pushed;
    mt_freed_record *ring = (mt_freed_record *)mt_freed_ring(&cap, &pushed);
    uint64_t i = __atomic_fetch_add((uint64_t *)mt_freed_pushed(), 1, __ATOMIC_RELAXED);
    mt_freed_record *slot = &ring[i % cap];
    __atomic_store_n(&slot->stamp, MT_FREED_WRITING | (i + 1), __ATOMIC_RELAXED);
    slot->ptr = 0xA000; /* its first word written, the rest still the old record */
    *push_number = i;
    return slot;
}

/* With one slot, every push laps the stalled writer: the later writer must
 * leave the slot alone (it drops its record), and readers must not trust
 * the half-written slot. Before slots were claimed, the later writer wrote
 * over the slot and the stalled writer's final stamp then vouched for the
 * mix of the two. */
Test(freed_history, writer_lapping_a_stalled_one_leaves_its_slot_alone)
{
    mt_freed_init(1);
    push(0x1000, 16, 1);
    uint64_t i;
    mt_freed_record *slot = stalled_writer(&i);
    push(0xB000, 16, 2);
    cr_assert_eq(slot->stamp, MT_FREED_WRITING | (i + 1), "stamp %#lx: the slot was taken over",
                 (unsigned long)slot->stamp);
    cr_assert_eq(slot->ptr, 0xA000);
    cr_assert_eq(slot->alloc_seq, 1, "the stalled writer's slot was written over");
    cr_assert_eq(mt_freed_find(0xA000, collect, NULL), 0, "a slot being written is not trusted");
    cr_assert_eq(mt_freed_find(0xB000, collect, NULL), 0);
    cr_assert_eq(mt_freed_find(0x1000, collect, NULL), 0);

    /* The stalled writer finishes; its record is older than the pushes
     * numbered since, so no reader looks for it. The next push takes the
     * slot again. */
    slot->size = 16;
    slot->alloc_seq = 3;
    __atomic_store_n(&slot->stamp, i + 1, __ATOMIC_RELEASE);
    push(0xC000, 16, 4);
    nseqs = 0;
    cr_assert_eq(mt_freed_find(0xC000, collect, NULL), 1);
    cr_assert_eq(seqs[0], 4);
    cr_assert_eq(mt_freed_find(0xA000, collect, NULL), 0);
}

/* With more slots, a writer whose slot is held takes the next push number
 * and its record is kept. */
Test(freed_history, writer_meeting_a_held_slot_takes_another)
{
    mt_freed_init(4);
    for (uint64_t s = 1; s <= 4; s++)
        push(0x1000 * s, 16, s);
    uint64_t i;
    mt_freed_record *slot = stalled_writer(&i); /* slot 0 */
    for (uint64_t s = 5; s <= 8; s++)           /* slots 1, 2, 3, then 0 is held */
        push(0x1000 * s, 16, s);
    cr_assert_eq(slot->stamp, MT_FREED_WRITING | (i + 1));
    cr_assert_eq(slot->alloc_seq, 1, "the stalled writer's slot was written over");
    nseqs = 0;
    cr_assert_eq(mt_freed_find(0x8000, collect, NULL), 1, "the record went to the next slot");
    cr_assert_eq(seqs[0], 8);
    cr_assert_eq(mt_freed_find(0xA000, collect, NULL), 0);
}

/* Writers lapping each other on a two-slot ring while readers look: every
 * field of a record is derived from one number k, so a record mixing two
 * pushes shows (freed_records.h). Every record covers FREED_PROBE, so a
 * reader sees every record it accepts. Timing-based, and weak: before slots were claimed, a torn
 * record needed a writer stalled mid-copy exactly while a reader holding an old push count looked,
 * and this test never caught one (70 runs, 2 cores); the same check in tests/unit/tsan_tables.c,
 * whose instrumented copies are slow, did in most runs. The two tests above are the deterministic
 * ones. */

enum { WRITERS = 3, READERS = 2, PUSHES = 200000 };
static int writers_done;
/* Set once a reader has accepted a record while the writers ran: on a
 * loaded machine the readers may get no time slice before PUSHES are
 * done, so the writers go on (up to 50 x PUSHES) until one has. */
static int reader_saw_one;

static void *writer(void *arg)
{
    uint64_t t = (uintptr_t)arg;
    for (uint64_t n = 1; n <= PUSHES || (!__atomic_load_n(&reader_saw_one, __ATOMIC_ACQUIRE) &&
                                         n <= 50 * (uint64_t)PUSHES);
         n++) {
        mt_freed_record r = freed_record_of(t << 32 | n);
        mt_freed_push(&r);
    }
    __atomic_fetch_add(&writers_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void *reader(void *arg)
{
    struct freed_tally *t = arg;
    while (__atomic_load_n(&writers_done, __ATOMIC_ACQUIRE) < WRITERS) {
        mt_freed_find(FREED_PROBE, freed_tally, t);
        if (t->accepted)
            __atomic_store_n(&reader_saw_one, 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

Test(freed_history, lapping_writers_never_show_a_torn_record)
{
    mt_freed_init(2);
    pthread_t w[WRITERS], r[READERS];
    struct freed_tally tallies[READERS] = { { 0, 0 } };
    for (uintptr_t i = 0; i < READERS; i++)
        pthread_create(&r[i], NULL, reader, &tallies[i]);
    for (uintptr_t i = 0; i < WRITERS; i++)
        pthread_create(&w[i], NULL, writer, (void *)(i + 1));
    for (int i = 0; i < WRITERS; i++)
        pthread_join(w[i], NULL);
    struct freed_tally all = { 0, 0 };
    for (int i = 0; i < READERS; i++) {
        pthread_join(r[i], NULL);
        all.accepted += tallies[i].accepted;
        all.torn += tallies[i].torn;
    }
    cr_assert_gt(all.accepted, 0, "the readers accepted no record at all");
    cr_assert_eq(all.torn, 0, "%lu of %lu records accepted were torn", (unsigned long)all.torn,
                 (unsigned long)all.accepted);
    /* When the writers stop, the ring is complete and consistent. */
    struct freed_tally last = { 0, 0 };
    mt_freed_find(FREED_PROBE, freed_tally, &last);
    cr_assert_eq(last.torn, 0);
}

/* A push still being written is where the next chained call starts again:
 * its record may commit later. */
Test(freed_history, each_since_retries_a_push_being_written)
{
    mt_freed_init(8);
    push(0x1000, 8, 1);
    uint64_t stalled;
    stalled_writer(&stalled);
    push(0x2000, 8, 3);
    nseqs = 0;
    cr_assert_eq(mt_freed_each_since(0, collect, NULL), stalled);
    cr_assert_eq(nseqs, 2, "the committed pushes on both sides are seen");
}

/* ---- a ring large enough for blocks of push numbers per thread */

static void *push_one(void *arg)
{
    push(0x1000, 16, (uintptr_t)arg);
    return NULL;
}

/* Threads take push numbers a block at a time, so a later free of another
 * thread can have a greater push number than a later free of this one:
 * the order is the frees' (their clock stamps), not the numbers'. */
Test(freed_history, blocks_newest_first_across_threads)
{
    mt_freed_init(4096);
    cr_assert_gt(mt_freed_block_size(), 1, "a ring this large is handed out in blocks");
    push(0x1000, 16, 1); /* this thread's block: numbers 0, 1, ... */
    pthread_t t;
    pthread_create(&t, NULL, push_one, (void *)2); /* the next block */
    pthread_join(t, NULL);
    push(0x1000, 16, 3); /* number 1 here, below the other thread's */
    nseqs = 0;
    cr_assert_eq(mt_freed_find(0x1000, collect, NULL), 3);
    cr_assert_eq(seqs[0], 3);
    cr_assert_eq(seqs[1], 2);
    cr_assert_eq(seqs[2], 1);
}

/* More matches than one ordering pass keeps (32), from two threads: every
 * one is called once, newest first. */
Test(freed_history, blocks_many_matches_in_order)
{
    mt_freed_init(4096);
    for (uintptr_t i = 1; i <= 40; i++) {
        if (i % 3 == 0) {
            pthread_t t;
            pthread_create(&t, NULL, push_one, (void *)i);
            pthread_join(t, NULL);
        } else {
            push(0x1000, 16, i);
        }
    }
    nseqs = 0;
    cr_assert_eq(mt_freed_find(0x1000, collect, NULL), 40);
    for (size_t k = 0; k < 16; k++)
        cr_assert_eq(seqs[k], 40 - k);
}

/* The lapping stress again on a ring handed out in blocks: the threads'
 * blocks are lapped by the others' while they write. */
Test(freed_history, blocks_lapping_writers_never_show_a_torn_record)
{
    mt_freed_init(4096);
    pthread_t w[WRITERS], r[READERS];
    struct freed_tally tallies[READERS] = { { 0, 0 } };
    for (uintptr_t i = 0; i < READERS; i++)
        pthread_create(&r[i], NULL, reader, &tallies[i]);
    for (uintptr_t i = 0; i < WRITERS; i++)
        pthread_create(&w[i], NULL, writer, (void *)(i + 1));
    for (int i = 0; i < WRITERS; i++)
        pthread_join(w[i], NULL);
    struct freed_tally all = { 0, 0 };
    for (int i = 0; i < READERS; i++) {
        pthread_join(r[i], NULL);
        all.accepted += tallies[i].accepted;
        all.torn += tallies[i].torn;
    }
    cr_assert_gt(all.accepted, 0, "the readers accepted no record at all");
    cr_assert_eq(all.torn, 0, "%lu of %lu records accepted were torn", (unsigned long)all.torn,
                 (unsigned long)all.accepted);
    struct freed_tally last = { 0, 0 };
    cr_assert_gt(mt_freed_find(FREED_PROBE, freed_tally, &last), 0);
    cr_assert_eq(last.torn, 0);
}

static void *push_9000(void *arg)
{
    (void)arg;
    for (uint64_t i = 0; i < 9000; i++)
        push(0x100000 + 16 * i, 16, 100 + i);
    return NULL;
}

/* A thread idle while the others used up STALE_PUSHES numbers leaves its
 * block: the unwritten rest of it does not hold mt_freed_each_since's
 * chain back, and its next record goes to a new block, where a reader
 * that chained past the old one sees it. */
Test(freed_history, blocks_an_idle_thread_leaves_its_block)
{
    mt_freed_init(16384);
    uint64_t b = mt_freed_block_size();
    push(0x1000, 16, 1); /* this thread's block 0: number 0 */
    pthread_t t;
    pthread_create(&t, NULL, push_9000, NULL); /* blocks 1 to 141 */
    pthread_join(t, NULL);
    nseqs = 0;
    uint64_t next = mt_freed_each_since(0, collect, NULL);
    cr_assert_eq(next, b + 9000, "the chain waits at the other thread's unwritten slots only");
    push(0x2000, 16, 2);
    nseqs = 0;
    mt_freed_each_since(next, collect, NULL);
    cr_assert_eq(nseqs, 1);
    cr_assert_eq(seqs[0], 2, "the idle thread's record is in a new block, after the chain");
}

static void *push_many(void *arg)
{
    for (uintptr_t n = 0; n < (uintptr_t)arg; n++)
        push(0x2000, 16, 100 + n);
    return NULL;
}

/* A thread that falls STALE_PUSHES behind leaves its block, and the next
 * lap finds the block's unused slots older than it expects: claiming them
 * met no other thread, so it is not contention (mt_contended, the bench's
 * contention line). Deterministic: the threads take turns. */
Test(freed_history, slots_of_a_left_block_are_no_contention)
{
    mt_freed_init(4096);
    push(0x1000, 16, 1); /* this thread's block 0, number 0 */
    pthread_t t;
    pthread_create(&t, NULL, push_many, (void *)2048);
    pthread_join(t, NULL);
    push(0x1000, 16, 2); /* far behind: leaves block 0, 63 numbers unused */
    uint64_t before = mt_atomic_load_relaxed(&mt_contended);
    pthread_create(&t, NULL, push_many, (void *)8192); /* two laps on */
    pthread_join(t, NULL);
    uint64_t met = mt_atomic_load_relaxed(&mt_contended) - before;
    cr_assert_eq(met, 0, "contended %lu times", (unsigned long)met);
    nseqs = 0;
    cr_assert_gt(mt_freed_find(0x2000, collect, NULL), 0);
    cr_assert_eq(seqs[0], 100 + 8191, "the newest push is kept");
}
