/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Freed history ring: one seqlock per slot, whose writer must claim the slot
 * before writing it.
 *
 * Invariants (stamps as described in freed_history.h):
 * - slot i % cap holds the record pushed i-th, or one pushed later, or
 *   that push was dropped;
 * - at most one writer holds a slot: it claimed it by a compare-and-swap
 *   from a committed stamp (or 0) to MT_FREED_WRITING | (i + 1), and only it
 *   writes the slot's data and then its committed stamp i + 1;
 * - only push i ever stores stamp i + 1, once, so a slot whose stamp has
 *   left i + 1 never shows i + 1 again;
 * - a reader trusts slot i % cap as push i only if it reads stamp i + 1
 *   before and after copying the slot: no writer held the slot meanwhile.
 *
 * Ordering (a C11 seqlock): the writer claims (acquire: the previous
 * holder's data stores come before its own), issues a release fence, stores
 * the data words relaxed, then stores the stamp with release. The reader
 * loads the stamp with acquire, the data words relaxed, issues an acquire
 * fence, and loads the stamp again relaxed. Data words are copied as
 * relaxed atomic words so that racing with a writer is defined behaviour
 * and ThreadSanitizer, which does not model the fences, sees no race. */
#include "store/freed_history.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/lock.h"
#include "base/os.h"

/* Push numbers a writer takes when it finds its slot held by a slower
 * writer, before it drops its record. */
#define CLAIM_TRIES 4

/* Push numbers per block on a ring of at least BLOCKED_RING records. */
#define BLOCK 64
#define BLOCKED_RING 4096

/* A thread leaves its block, used or not, once the blocks claimed since
 * hold STALE_PUSHES push numbers: so an idle thread's block does not keep
 * unwritten slots that a later push of it may still fill, and
 * mt_freed_each_since looks again only at the unwritten slots of the
 * newest PENDING_PUSHES numbers (more, for a writer preempted between its
 * check and its commit). */
#define STALE_PUSHES 1024
#define PENDING_PUSHES ((uint64_t)8 * STALE_PUSHES)

/* A record as words, for the atomic word copies; word 0 is the stamp. */
typedef uint64_t __attribute__((may_alias)) record_word;
#define RECORD_WORDS (sizeof(mt_freed_record) / sizeof(record_word))
_Static_assert(sizeof(mt_freed_record) % sizeof(record_word) == 0 &&
                   offsetof(mt_freed_record, stamp) == 0,
               "a record is whole words, the stamp first");

/* Published with release by mt_freed_init, after cap; every reader loads it
 * with acquire (pairs with that release) before it reads cap. */
static mt_atomic(mt_freed_record *) ring;
bool mt_freed_on;
static size_t cap;         /* written once, before ring is published */
static uint64_t cap_magic; /* floor((2^64 - 1) / cap), written with cap */
static uint64_t block = 1; /* push numbers per block, written with cap;
                              divides cap */
/* Blocks of push numbers handed out so far. Relaxed everywhere: a stale
 * value only makes a reader look at older pushes, and the stamps say which
 * slots still hold them. The debugger reads it as a plain uint64_t. Every
 * thread's first push of a block writes it: it has its cache line to
 * itself, so that ring, cap and cap_magic, read on every push, stay shared
 * in every thread's cache. */
static struct {
    mt_atomic(uint64_t) n;
} __attribute__((aligned(MT_CACHELINE))) head;

/* This thread's block: push numbers next to end - 1 are its to use; and
 * the when of its latest push, so that its own pushes' whens rise even
 * when it moves to a CPU whose clock is a little behind. */
static MT_TLS struct {
    uint64_t next, end, when;
} mine;

_Static_assert(sizeof(mt_atomic(uint64_t)) == sizeof(uint64_t) &&
                   _Alignof(mt_atomic(uint64_t)) == _Alignof(uint64_t),
               "mt_freed_pushed: the debugger reads a plain uint64_t");

void mt_freed_init(size_t capacity)
{
    if (capacity == 0)
        return;
    mt_freed_record *r = mt_os_map(capacity * sizeof *r, "freed history");
    if (!r)
        return;
    cap = capacity;
    cap_magic = UINT64_MAX / capacity;
    block = capacity >= BLOCKED_RING && capacity % BLOCK == 0 ? BLOCK : 1;
    mt_atomic_store_release(&ring, r);
    mt_freed_on = true;
}

/* The slot of push I: I % cap without a divide (tens of cycles on every
 * push). q = (I * cap_magic) >> 64 is I / cap or one less, for every I and
 * every cap >= 1 (cap_magic * cap > 2^64 - 1 - cap, so the product falls
 * short of I * 2^64 / cap by less than 2^64), hence one correction. */
static inline size_t slot_of(uint64_t i)
{
    uint64_t q = (uint64_t)(((unsigned __int128)i * cap_magic) >> 64);
    uint64_t r = i - q * cap;
    r = r >= cap ? r - cap : r;
    MT_ASSERT(r == i % cap);
    return (size_t)r;
}

/* SLOT is held by this writer for push I: writes R and commits. */
static void write_record(mt_freed_record *slot, const mt_freed_record *r, uint64_t i)
{
    /* Pairs with the acquire fence in mt_freed_find_around: a reader whose
     * copy saw any store below sees the claim, or later, when it loads the
     * stamp again. */
    mt_atomic_fence_release();
    const record_word *from = (const record_word *)r;
    record_word *to = (record_word *)slot;
#pragma GCC unroll 8
    for (size_t w = 1; w < RECORD_WORDS; w++)
        mt_atomic_store_relaxed(&to[w], from[w]);
    MT_ASSERT(mt_atomic_load_relaxed(&slot->stamp) == (MT_FREED_WRITING | (i + 1)));
    /* Pairs with the first (acquire) load of the stamp in
     * mt_freed_find_around. */
    mt_atomic_store_release(&slot->stamp, i + 1);
}

/* The next push number of this thread's block, taking a new block when it
 * has used its own. */
static inline uint64_t next_push(void)
{
    if (MT_UNLIKELY(mine.next >= mine.end ||
                    mt_atomic_load_relaxed(&head.n) * block > mine.end + STALE_PUSHES)) {
        mine.next = mt_atomic_add_relaxed(&head.n, 1) * block;
        mine.end = mine.next + block;
    }
    return mine.next++;
}

void mt_freed_push(const mt_freed_record *r)
{
    mt_freed_record *rg = mt_atomic_load_acquire(&ring);
    if (MT_UNLIKELY(rg == NULL))
        return;
    mt_freed_record rec = *r;
    uint64_t now = mt_os_ticks();
    rec.when = mine.when = now > mine.when ? now : mine.when + 1;
    r = &rec;
    for (unsigned tries = 0; tries < CLAIM_TRIES; tries++) {
        uint64_t i = next_push();
        mt_freed_record *slot = &rg[slot_of(i)];
        /* Usually the slot holds the previous lap's push, committed. */
        uint64_t seen = i >= cap ? i + 1 - cap : 0;
        for (;;) {
            /* Acquire: pairs with the release store of SEEN by the previous
             * holder, so its data stores come before ours. */
            if (mt_atomic_cas_acq_rel(&slot->stamp, &seen, MT_FREED_WRITING | (i + 1))) {
                MT_ASSERT(!(seen & MT_FREED_WRITING) && seen < i + 1);
                write_record(slot, r, i);
                /* The thread's next push takes the next slot (a block
                 * never straddles the ring's end): its line, last written
                 * a lap ago, is fetched now so that its claim does not
                 * wait on the miss (the claim was half of this function's
                 * samples on python3, perf). */
                if (mine.next < mine.end)
                    __builtin_prefetch(slot + 1, 1);
                return;
            }
            /* A later push holds the slot or has filled it: the ring has
             * lapped this thread's block, whose numbers are older than
             * every record it keeps now. Leave the block. */
            if ((seen & ~MT_FREED_WRITING) > i + 1) {
                mt_contended_note();
                if (block == 1)
                    return; /* then it was only this record's number */
                mine.next = mine.end;
                break;
            }
            /* A slower writer, an earlier push, still holds it. */
            if (seen & MT_FREED_WRITING) {
                mt_contended_note();
                break;
            }
            /* An older record, committed, or none: the push a lap ago was
             * dropped or its block left unused (a thread leaves its block
             * when it falls STALE_PUSHES behind, as a descheduled one
             * does). No other thread met here: not contention. Claim it. */
        }
    }
}

/* Copies push I out of RG into R if the ring holds it committed. */
static bool read_push(const mt_freed_record *rg, uint64_t i, mt_freed_record *r)
{
    const mt_freed_record *slot = &rg[slot_of(i)];
    /* Pairs with the release store of the stamp in write_record: the
     * copy below sees all of push i. */
    if (mt_atomic_load_acquire(&slot->stamp) != i + 1)
        return false;
    const record_word *from = (const record_word *)slot;
    record_word *to = (record_word *)r;
    for (size_t w = 1; w < RECORD_WORDS; w++)
        to[w] = mt_atomic_load_relaxed(&from[w]);
    /* Pairs with the release fence in write_record. */
    mt_atomic_fence_acquire();
    if (mt_atomic_load_relaxed(&slot->stamp) != i + 1)
        return false;
    r->stamp = i + 1;
    return true;
}

/* The pushes handed out so far: the window a reader looks at ends there. */
static uint64_t pushes_end(void)
{
    return mt_atomic_load_relaxed(&head.n) * block;
}

/* A record's place in the readers' order: newer is greater. */
typedef struct {
    uint64_t when, i;
} order_key;

static bool newer(order_key a, order_key b)
{
    return a.when > b.when || (a.when == b.when && a.i > b.i);
}

/* Records sorted per pass of mt_freed_find_around: a pass over the ring
 * keeps the ORDER_BATCH newest matches older than the last one called. */
#define ORDER_BATCH 32

/* Whether R is one mt_freed_find_around reports: covering ADDR (*GAP
 * UINT64_MAX) or, when NEAR_MAX, within NEAR_BYTES of it. */
static bool wanted(const mt_freed_record *r, uintptr_t addr, uint64_t near_bytes, unsigned near_max,
                   uint64_t *gap)
{
    *gap = mt_block_gap(addr, r->ptr, r->size);
    return *gap == UINT64_MAX || (near_max && *gap <= near_bytes);
}

/* The newest matches older than *BELOW (all, when FIRST) into TOP, newest
 * first; returns how many (ORDER_BATCH at most). */
static unsigned order_pass(const mt_freed_record *rg, uint64_t begin, uint64_t end, uintptr_t addr,
                           uint64_t near_bytes, unsigned near_max, bool first, order_key below,
                           order_key *top)
{
    unsigned n = 0;
    for (uint64_t i = end; i-- > begin;) {
        mt_freed_record r;
        uint64_t gap;
        if (!read_push(rg, i, &r) || !wanted(&r, addr, near_bytes, near_max, &gap))
            continue;
        order_key k = { r.when, i };
        if ((!first && !newer(below, k)) || (n == ORDER_BATCH && !newer(k, top[n - 1])))
            continue;
        unsigned at = n < ORDER_BATCH ? n++ : n - 1;
        for (; at > 0 && newer(k, top[at - 1]); at--)
            top[at] = top[at - 1];
        top[at] = k;
    }
    return n;
}

size_t mt_freed_find_around(uintptr_t addr, uint64_t near_bytes, unsigned near_max,
                            void (*fn)(const mt_freed_record *, bool near, void *), void *ctx)
{
    const mt_freed_record *rg = mt_atomic_load_acquire(&ring);
    if (!rg)
        return 0;
    uint64_t end = pushes_end();
    uint64_t begin = end > cap ? end - cap : 0;
    size_t found = 0;
    unsigned near = 0;
    order_key top[ORDER_BATCH], below = { 0, 0 };
    for (bool first = true;; first = false) {
        unsigned n = order_pass(rg, begin, end, addr, near_bytes, near_max, first, below, top);
        for (unsigned k = 0; k < n; k++) {
            mt_freed_record r;
            uint64_t gap;
            /* Rewritten since the pass: gone from the ring. */
            if (!read_push(rg, top[k].i, &r) || r.when != top[k].when ||
                !wanted(&r, addr, near_bytes, near_max, &gap))
                continue;
            if (gap == UINT64_MAX) {
                fn(&r, false, ctx);
                found++;
            } else if (near < near_max) {
                fn(&r, true, ctx);
                near++;
            }
        }
        if (n < ORDER_BATCH)
            return found;
        below = top[n - 1];
    }
}

struct covering {
    void (*fn)(const mt_freed_record *, void *);
    void *ctx;
};

static void call_covering(const mt_freed_record *r, bool near, void *arg)
{
    const struct covering *c = arg;
    (void)near; /* never true: no near record was asked for */
    c->fn(r, c->ctx);
}

size_t mt_freed_find(uintptr_t addr, void (*fn)(const mt_freed_record *, void *), void *ctx)
{
    struct covering c = { fn, ctx };
    return mt_freed_find_around(addr, 0, 0, call_covering, &c);
}

uint64_t mt_freed_each_since(uint64_t from, void (*fn)(const mt_freed_record *, void *), void *ctx)
{
    const mt_freed_record *rg = mt_atomic_load_acquire(&ring);
    if (!rg)
        return from;
    uint64_t end = pushes_end();
    uint64_t begin = end > cap ? end - cap : 0;
    uint64_t next = end;
    for (uint64_t i = from > begin ? from : begin; i < end; i++) {
        mt_freed_record r;
        if (read_push(rg, i, &r))
            fn(&r, ctx);
        else if (next == end && i + PENDING_PUSHES >= end &&
                 (mt_atomic_load_relaxed(&rg[slot_of(i)].stamp) & ~MT_FREED_WRITING) <= i + 1)
            next = i; /* not claimed yet, or being written: may commit later */
    }
    return next;
}

const mt_freed_record *mt_freed_ring(size_t *capacity, uint64_t *pushed)
{
    const mt_freed_record *rg = mt_atomic_load_acquire(&ring);
    *capacity = cap;
    *pushed = pushes_end();
    return rg;
}

uint64_t mt_freed_block_size(void)
{
    return block;
}

const uint64_t *mt_freed_pushed(void)
{
    return (const uint64_t *)&head.n;
}
