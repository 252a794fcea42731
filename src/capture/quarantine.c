/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The quarantine of freed blocks (quarantine.h): a ring per thread, made
 * on the thread's first traced free (or a free ring of an exited thread
 * taken over), on the list of every ring. The owner changes its ring only
 * with the ring's busy word taken (1); a checker from another thread takes
 * it too (2), with a bounded wait, and the owner that finds it taken frees
 * its block at once: nobody waits on the hot path, and no lock survives a
 * fork in a state the child cannot undo (mt_quarantine_fork_child). */
#include "capture/quarantine.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/config.h"
#include "base/lock.h"
#include "base/reentry.h"
#include "base/upcalls.h"
#include "capture/state.h"
#include "store/live_table.h"
#include "store/threads.h"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

bool mt_quarantine_on;
static uint64_t limit; /* bytes a ring holds at most */
/* The largest block mt_quarantine_hold takes without a second look: the
 * least of LIMIT and MAPPED_MIN - 1. */
static uint64_t plain_max;
/* The smallest block that may be a glibc chunk of its own mapping (the
 * chunk header's IS_MMAPPED bit): glibc maps blocks of at least
 * M_MMAP_THRESHOLD (128 KiB and more unless the program lowers it) in
 * whole pages, so a program may mprotect one PROT_READ and still free it
 * (glibc then only reads its header and unmaps it). */
#define MAPPED_MIN 4096
static uint64_t slots; /* slots of a ring */
/* Whether the blocks held have glibc's chunk header to check (set at
 * start-up: glibc is the next allocator, no sample mode's trailers): those
 * freed by C's free (MT_FC_REAL), whose blocks are glibc's own. */
static bool headers;
static mt_atomic(mt_quarantine_ring *) rings;
static pthread_key_t exit_key;
static bool exit_key_made;
static MT_TLS mt_quarantine_ring *mine;
static MT_TLS bool exiting; /* the ring was flushed at thread exit: no more */

enum { FREE = 0, OWNER = 1, CHECKER = 2 };

/* A ring starts this far into its mapping, not at a page boundary: the
 * header's line (busy, head, tail), touched on every free, otherwise
 * shares its L1 set (address bits 6-11) with the other page-aligned hot
 * lines (thread-local blocks, table headers) and is evicted between two
 * frees (cachegrind on churn: 3 misses fewer per malloc/free pair). */
#define RING_COLOR 1472
_Static_assert(RING_COLOR % 64 == 0 && sizeof(mt_quarantine_held) == 64 &&
                   offsetof(mt_quarantine_ring, slots) % 64 == 0,
               "a ring's slots are on lines of their own");

/* A held slot's fields from ptr to free_thread are a freed record's, in the
 * same order from its ptr on: put copies them at once. */
#define HELD_AS_FREED offsetof(mt_quarantine_held, filled)
#define SAME_AT(field)                      \
    (offsetof(mt_quarantine_held, field) == \
     offsetof(mt_freed_record, field) - offsetof(mt_freed_record, ptr))
_Static_assert(SAME_AT(ptr) && SAME_AT(size) && SAME_AT(alloc_seq) && SAME_AT(free_seq) &&
                   SAME_AT(alloc_stack) && SAME_AT(free_stack) && SAME_AT(alloc_thread) &&
                   SAME_AT(free_thread) &&
                   HELD_AS_FREED == offsetof(mt_quarantine_held, free_thread) + 4,
               "a held slot starts as a freed record from its ptr");

mt_quarantine_ring *const *mt_quarantine_rings(void)
{
    return (mt_quarantine_ring *const *)&rings;
}

static void on_thread_exit(void *ring);
static mt_quarantine_ring *claim(void);

void mt_quarantine_init(void)
{
    limit = mt_cfg.quarantine;
    if (limit == 0)
        return;
    plain_max = limit < MAPPED_MIN - 1 ? limit : MAPPED_MIN - 1;
    uint64_t n = limit / 4096;
    for (slots = MT_QUARANTINE_SLOTS_MIN; slots < n && slots < MT_QUARANTINE_SLOTS_MAX;)
        slots *= 2;
    exit_key_made = pthread_key_create(&exit_key, on_thread_exit) == 0;
    mt_quarantine_on = true;
    headers = mt_real_glibc && !mt_cfg.sample;
    /* The starting thread's ring now, not at its first free: a mapping
     * made later would take the place of one the program just unmapped
     * (a library it dlclosed and opens again lands elsewhere). */
    claim();
}

/* Takes R's busy word as WHO, trying TRIES times. */
static bool take(mt_quarantine_ring *r, int who, unsigned tries)
{
    for (unsigned i = 0;; i++) {
        int expected = FREE;
        if (mt_atomic_load_relaxed(&r->busy) == FREE &&
            mt_atomic_cas_acquire(&r->busy, &expected, who))
            return true;
        if (i + 1 >= tries)
            return false;
        if (i % 64 == 63)
            sched_yield();
        else
            mt_cpu_relax();
    }
}

static void give_back(mt_quarantine_ring *r)
{
    mt_atomic_store_release(&r->busy, FREE);
}

/* The calling thread's ring: a free one taken over, or a new one (not
 * mt_os_map: failing to map it must not stop recording). NULL when the
 * thread has flushed its ring at exit, or nothing can be mapped. */
static MT_NOINLINE mt_quarantine_ring *claim(void)
{
    if (exiting)
        return NULL;
    int tid = mt_lock_token();
    mt_quarantine_ring *r;
    for (r = mt_atomic_load_acquire(&rings); r; r = r->next) {
        int expected = 0;
        if (mt_atomic_load_relaxed(&r->owner) == 0 &&
            mt_atomic_cas_acq_rel(&r->owner, &expected, tid))
            break;
    }
    if (!r) {
        size_t bytes = RING_COLOR + sizeof(mt_quarantine_ring) +
                       slots * (sizeof(mt_quarantine_held) + sizeof(mt_free_call));
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) {
            exiting = true; /* no ring for this thread: its frees go on */
            return NULL;
        }
        r = (mt_quarantine_ring *)((char *)p + RING_COLOR);
        r->cap = slots;
        r->calls = (mt_free_call *)(r->slots + slots);
        mt_atomic_store_relaxed(&r->owner, tid);
        mt_quarantine_ring *head = mt_atomic_load_relaxed(&rings);
        do
            r->next = head;
        while (!mt_atomic_cas_weak_release(&rings, &head, r));
    }
    /* Flushed by on_thread_exit when the thread ends; pthread_setspecific
     * may allocate (keys past the first 32): from the internal heap. */
    if (exit_key_made) {
        int was = mt_enter();
        pthread_setspecific(exit_key, r);
        mt_leave(was);
    }
    mine = r;
    return r;
}

/* The call that frees the block of R's slot I (I < cap). */
static inline mt_free_call call_of(const mt_quarantine_ring *r, uint64_t i)
{
    if ((r->slots[i].shape & MT_FC_SHAPE) == MT_FC_REAL)
        return MT_FREE_CALL(NULL, r->slots[i].shape, 0, 0);
    return r->calls[i];
}

/* R's slot I (I < cap) as a whole record. */
static mt_quarantine_slot unpack(const mt_quarantine_ring *r, uint64_t i)
{
    const mt_quarantine_held *h = &r->slots[i];
    return (mt_quarantine_slot){
        .ptr = h->ptr,
        .size = h->size,
        .alloc_seq = h->alloc_seq,
        .free_seq = h->free_seq,
        .alloc_stack = h->alloc_stack,
        .free_stack = h->free_stack,
        .alloc_thread = h->alloc_thread,
        .free_thread = h->free_thread,
        .filled = h->filled,
        .call = call_of(r, i),
    };
}

/* The block of R's slot I differs from its fill: the write after free
 * reported (outside memtrace only). */
static MT_COLD MT_NOINLINE void report_damage(const mt_quarantine_ring *r, uint64_t i)
{
    if (mt_busy)
        return;
    size_t first, end;
    mt_pattern_find((const unsigned char *)r->slots[i].ptr, r->slots[i].filled, MT_FREED_BYTE,
                    &first, &end);
    mt_quarantine_slot s = unpack(r, i);
    struct mt_heap_error report = mt_quarantine_error(&s, first, end, mt_cfg.redzone, "quarantine");
    mt_heap_error_report(&report);
}

/* The block of S, held, has a damaged chunk header (DAMAGE bytes before
 * it: mt_glibc_header_damage's; 0: the next chunk's, at AT): the report
 * of S's underflow, or of its write past its end, after its free. */
static struct mt_heap_error header_error(const mt_quarantine_slot *s, unsigned damage, size_t at,
                                         const char *where)
{
    struct mt_heap_error e = mt_quarantine_error(s, 0, 0, mt_cfg.redzone, where);
    e.kind = damage ? MT_HEAP_UNDERFLOW : MT_HEAP_OVERFLOW;
    e.offset = damage ? -(int64_t)damage : (int64_t)at;
    e.bytes = damage ? damage : 8;
    e.at_least = 0;
    return e;
}

/* R's slot I's block has a damaged chunk header (DAMAGE bytes before
 * it; 0: the next chunk's size word, at AT): reported (outside memtrace
 * only). */
static MT_COLD MT_NOINLINE void report_header(const mt_quarantine_ring *r, uint64_t i,
                                              unsigned damage, size_t at)
{
    if (mt_busy)
        return;
    mt_quarantine_slot s = unpack(r, i);
    struct mt_heap_error report = header_error(&s, damage, at, "quarantine");
    mt_heap_error_report(&report);
}

/* The block of R's slot I (I < cap) leaves the quarantine: checked,
 * then freed for real (with its ring taken: the call may not come back
 * into the quarantine, pass-through or mt_real.next_free, and a report runs
 * inside memtrace). Checked are its fill; its own chunk header (glibc's
 * size word, on the fill's line), after which glibc's own check of it
 * runs as without memtrace; and, when that word is sound and not a mapped
 * chunk's, the next chunk's size word, which is inside the same arena or
 * heap (glibc's free reads it there too) and which a write past the
 * block's end after its free, beyond its redzone, tramples. A block whose
 * next word is damaged is not freed (as mt_quarantine_check keeps it):
 * glibc would follow the word, where without memtrace the block was
 * freed before the write. Its redzone is not read here: it was checked
 * at the free, and reading it again would cost a miss on a line nothing
 * else touches (mt_quarantine_check reads it). */
static inline __attribute__((always_inline)) void release(const mt_quarantine_ring *r, uint64_t i)
{
    const mt_quarantine_held *h = &r->slots[i];
    if (h->ptr == 0)
        return; /* taken out by mt_quarantine_take */
    void *p = (void *)h->ptr;
    if (MT_UNLIKELY(mt_pattern_differs(p, h->filled, MT_FREED_BYTE)))
        report_damage(r, i);
    if (headers && (h->shape & MT_FC_SHAPE) == MT_FC_REAL) {
        unsigned damage = mt_glibc_header_damage(h->ptr, h->size + mt_cfg.redzone);
        size_t at = 0;
        if (MT_UNLIKELY(damage || !mt_glibc_next_ok(h->ptr, &at))) {
            report_header(r, i, damage, at);
            if (!damage)
                return;
        }
    }
    if ((h->shape & MT_FC_SHAPE) == MT_FC_REAL)
        mt_real.next_free(p);
    else
        mt_free_call_run(p, &r->calls[i]);
}

/* The block of R's slot T & MASK leaves it, T being R's tail (R owned and
 * not empty; MASK its cap - 1). In line, as release: once a free. */
static inline __attribute__((always_inline)) void leave(mt_quarantine_ring *r, uint64_t t,
                                                        uint64_t mask)
{
    release(r, t & mask);
    r->bytes -= r->slots[t & mask].size;
    mt_atomic_store_relaxed(&r->tail, t + 1);
}

/* The oldest block of R (owned, not empty) leaves it. */
static inline __attribute__((always_inline)) void release_oldest(mt_quarantine_ring *r)
{
    leave(r, r->tail, r->cap - 1);
}

/* Where the next chunk's size word of a block of glibc's that memtrace
 * asked ASKED bytes of lies, from PTR: at its chunk's end as
 * mt_glibc_request2size makes it, which is where it is unless glibc
 * handed out a larger chunk (then it is up to 32 bytes further: only a
 * prefetch's address, never read). */
static inline const char *next_word_guess(uintptr_t ptr, uint64_t asked)
{
    return (const char *)ptr + mt_glibc_request2size(asked) - 8;
}

/* R is full: its MT_QUARANTINE_BATCH oldest blocks leave it. Their lines
 * that release reads, cold since their free, are fetched all at once
 * first, so that their misses overlap instead of coming one after the
 * other: the head line (the chunk header the allocator reads, the fill)
 * and, for a block whose chunk header is checked, the next chunk's size
 * word (a line of its own past 56 bytes; reading it was a third of this
 * function's samples on python3, perf). (Fetching the next batch's slots
 * too, written a ring ago and read in order, made no difference in its
 * samples: the hardware's own prefetcher follows the ring. Fetching the
 * live-table entries their
 * next mallocs insert at, cold since their frees' removes, cost 48M
 * instructions more on python3 under cachegrind, which does not model
 * prefetches, and timings could not tell it from none: not kept.) */
static void release_batch(mt_quarantine_ring *r)
{
    uint64_t mask = r->cap - 1, tail = r->tail;
    for (uint64_t t = tail; t != tail + MT_QUARANTINE_BATCH; t++) {
        const mt_quarantine_held *h = &r->slots[t & mask];
        __builtin_prefetch((const char *)h->ptr - 8); /* never faults */
        if (headers && (h->shape & MT_FC_SHAPE) == MT_FC_REAL)
            __builtin_prefetch(next_word_guess(h->ptr, h->size + mt_cfg.redzone));
    }
    for (uint64_t t = tail; t != tail + MT_QUARANTINE_BATCH; t++)
        leave(r, t, mask);
}

/* F's block into R (owned and taken, with a free slot and room for it);
 * R is given back. */
static inline __attribute__((always_inline)) void put(mt_quarantine_ring *r,
                                                      const mt_freed_record *f,
                                                      const mt_free_call *c)
{
    uint64_t i = r->head & (r->cap - 1), size = f->size;
    mt_quarantine_held *s = &r->slots[i];
    memcpy(s, &f->ptr, HELD_AS_FREED); /* ptr to free_thread */
    s->shape = c->shape;
    if ((c->shape & MT_FC_SHAPE) != MT_FC_REAL)
        r->calls[i] = *c;
    /* Filled before it is seen held: a checker compares the fill. */
    s->filled = mt_quarantine_fill(f->ptr, size);
    mt_pattern_fill((unsigned char *)f->ptr, s->filled, MT_FREED_BYTE);
    r->bytes += size;
    mt_atomic_store_release(&r->head, r->head + 1);
    give_back(r);
}

/* mt_quarantine_hold when R (owned and taken) has no free slot or no room
 * for F's block: blocks leave it until it has both (or is empty), then
 * F's goes in. Out of line, as hold_claiming, so that the common free
 * makes no call and saves no registers; the slots run out once in
 * MT_QUARANTINE_BATCH frees. */
static MT_NOINLINE bool hold_making_room(mt_quarantine_ring *r, const mt_freed_record *f,
                                         const mt_free_call *c)
{
    if (r->head - r->tail > r->cap - 1)
        release_batch(r);
    while (r->head != r->tail && r->bytes + f->size > limit)
        release_oldest(r);
    put(r, f, c);
    return true;
}

/* mt_quarantine_hold for a thread without a ring yet. */
static MT_COLD MT_NOINLINE bool hold_claiming(const mt_freed_record *f, const mt_free_call *c)
{
    return claim() && mt_quarantine_hold(f, c);
}

/* mt_quarantine_hold's work once F's block may be held. */
static inline __attribute__((always_inline)) bool hold(const mt_freed_record *f,
                                                       const mt_free_call *c)
{
    mt_quarantine_ring *r = mine;
    if (MT_UNLIKELY(!r))
        return hold_claiming(f, c);
    if (!take(r, OWNER, 1))
        return false; /* a checker reads it: this block is freed now */
    if (MT_UNLIKELY(r->head - r->tail > r->cap - 1 || r->bytes + f->size > limit))
        return hold_making_room(r, f, c);
    put(r, f, c);
    return true;
}

/* mt_quarantine_hold for a block larger than plain_max: held unless it is
 * larger than the quarantine, or a chunk glibc mapped for it alone (its
 * pages may be read-only: the fill must not write there; such a block is
 * freed at once, unchecked for writes after its free). Out of line, so
 * that the common free makes no call. */
static MT_NOINLINE bool hold_large(const mt_freed_record *f, const mt_free_call *c)
{
    if (f->size > limit || (mt_real_glibc && mt_glibc_mmapped((const void *)f->ptr)))
        return false;
    return hold(f, c);
}

bool mt_quarantine_hold(const mt_freed_record *f, const mt_free_call *c)
{
    if (MT_UNLIKELY(f->size > plain_max))
        return hold_large(f, c);
    return hold(f, c);
}

int mt_quarantine_take(uintptr_t ptr, mt_quarantine_slot *out)
{
    /* A held block starts with its fill, or its redzone when it is empty;
     * most frees that come here (blocks memtrace never recorded) do not,
     * and need no walk. (A block written after its free at offset 0 and
     * then freed again is missed.) */
    unsigned char first = *(const unsigned char *)ptr;
    if (first != MT_FREED_BYTE && first != MT_REDZONE_BYTE)
        return 0;
    for (mt_quarantine_ring *r = mt_atomic_load_acquire(&rings); r; r = r->next) {
        bool taken = take(r, r == mine ? OWNER : CHECKER, r == mine ? 1 : 1u << 16);
        uint64_t head = mt_atomic_load_relaxed(&r->head);
        uint64_t tail = mt_atomic_load_relaxed(&r->tail);
        int found = 0;
        for (uint64_t i = tail; i != head && !found; i++) {
            mt_quarantine_held *s = &r->slots[i & (r->cap - 1)];
            if (s->ptr != ptr)
                continue;
            found = taken ? 1 : -1;
            if (taken) { /* out of the ring: a hole, skipped when it leaves */
                *out = unpack(r, i & (r->cap - 1));
                r->bytes -= s->size;
                s->ptr = 0;
                s->size = 0;
            }
        }
        if (taken)
            give_back(r);
        if (found)
            return found;
    }
    return 0;
}

unsigned mt_quarantine_check(void (*fn)(const mt_quarantine_slot *s, size_t first, size_t end,
                                        void *ctx),
                             void (*header_fn)(const struct mt_heap_error *e, void *ctx),
                             bool (*mapped)(uintptr_t addr, size_t len), void *ctx)
{
    unsigned skipped = 0;
    for (mt_quarantine_ring *r = mt_atomic_load_acquire(&rings); r; r = r->next) {
        if (!take(r, CHECKER, 1u << 20)) {
            skipped++;
            continue;
        }
        for (uint64_t i = r->tail; i != r->head; i++) {
            const mt_quarantine_held *s = &r->slots[i & (r->cap - 1)];
            const unsigned char *p = (const unsigned char *)s->ptr;
            size_t first, end;
            if (s->ptr == 0 || s->size > PTRDIFF_MAX || s->filled > s->size ||
                !mapped(s->ptr, s->size + mt_cfg.redzone))
                continue;
            size_t at; /* where the damaged run starts: the head, or the redzone */
            unsigned damage = 0;
            size_t next_at = 0;
            if (headers && (s->shape & MT_FC_SHAPE) == MT_FC_REAL &&
                ((damage = mt_glibc_header_damage(s->ptr, s->size + mt_cfg.redzone)) ||
                 !mt_glibc_next_ok_in(s->ptr, &next_at, mapped))) {
                /* Reported as the release would: the block stays out of
                 * glibc's hands (a hole, its size no longer counted). */
                mt_quarantine_slot whole = unpack(r, i & (r->cap - 1));
                struct mt_heap_error e = header_error(&whole, damage, next_at, NULL);
                if (header_fn)
                    header_fn(&e, ctx);
                r->bytes -= s->size;
                ((mt_quarantine_held *)s)->ptr = 0;
                ((mt_quarantine_held *)s)->size = 0;
                continue;
            }
            if (mt_pattern_damage(p, s->filled, MT_FREED_BYTE, &first, &end))
                at = 0;
            else if (mt_pattern_damage(p + s->size, mt_cfg.redzone, MT_REDZONE_BYTE, &first, &end))
                at = s->size;
            else
                continue;
            mt_quarantine_slot whole = unpack(r, i & (r->cap - 1));
            fn(&whole, at + first, at + end, ctx);
            /* Said once: the block's release must not find it again. */
            memset((void *)s->ptr, MT_FREED_BYTE, s->filled);
            memset((char *)s->ptr + s->size, MT_REDZONE_BYTE, mt_cfg.redzone);
        }
        give_back(r);
    }
    return skipped;
}

/* A release of every ring is due (mt_quarantine_release_soon). */
static mt_atomic(int) release_due;

void mt_quarantine_release_soon(void)
{
    if (mt_quarantine_on)
        mt_atomic_store_release(&release_due, 1);
}

/* R's blocks are checked and freed, R taken as WHO; false when it could
 * not be taken. */
static bool release_ring(mt_quarantine_ring *r, int who)
{
    if (!take(r, who, who == OWNER ? 1 : 1u << 16))
        return false;
    while (r->head != r->tail)
        release_oldest(r);
    r->bytes = 0;
    give_back(r);
    return true;
}

static MT_COLD MT_NOINLINE void release_all(void)
{
    bool all = true;
    for (mt_quarantine_ring *r = mt_atomic_load_acquire(&rings); r; r = r->next) {
        if (mt_atomic_load_acquire(&mt_phase) == MT_READY)
            return; /* on again: its frees are held again */
        all &= release_ring(r, r == mine ? OWNER : CHECKER);
    }
    if (!all) /* a ring was busy: the next free tries again */
        mt_atomic_store_release(&release_due, 1);
}

void mt_quarantine_idle_free(void)
{
    if (MT_LIKELY(mt_atomic_load_relaxed(&release_due) == 0) || mt_busy ||
        mt_atomic_load_acquire(&mt_phase) == MT_READY)
        return;
    if (mt_atomic_exchange_acq_rel(&release_due, 0))
        release_all();
}

/* The thread ends: its blocks are checked and freed, its ring freed for
 * another thread; its frees from now on (later destructors) go on at once. */
static void on_thread_exit(void *ring)
{
    mt_quarantine_ring *r = ring;
    exiting = true;
    mine = NULL;
    for (;;) {
        if (!take(r, OWNER, 1u << 20))
            return; /* a checker never let go: the ring stays this thread's */
        if (r->head == r->tail) {
            r->bytes = 0;
            give_back(r);
            break;
        }
        release_oldest(r);
        give_back(r);
    }
    mt_atomic_store_release(&r->owner, 0);
}

void mt_quarantine_fork_child(void)
{
    for (mt_quarantine_ring *r = mt_atomic_load_acquire(&rings); r; r = r->next) {
        if (r == mine) { /* a checker of the parent's held it: gone */
            if (mt_atomic_load_relaxed(&r->busy) == CHECKER)
                mt_atomic_store_relaxed(&r->busy, FREE);
            continue;
        }
        r->tail = r->head;
        r->bytes = 0;
        mt_atomic_store_relaxed(&r->busy, FREE);
        mt_atomic_store_relaxed(&r->owner, 0);
    }
}
