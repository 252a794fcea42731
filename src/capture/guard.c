/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The guard pages' pool (guard.h): its slots, the sampled allocations and
 * the slots their frees give back (the frees' records: malloc.c's
 * mt_guard_free). Off the fast path but for mt_guard_take and
 * mt_guard_owns (inline in guard.h); everything here runs once per
 * sampled block. */
#include "capture/guard.h"

#include "base/common.h"
#include "base/lock.h"
#include "base/os.h"
#include "capture/quarantine.h"

#include <string.h>
#include <sys/mman.h>

uintptr_t mt_guard_lo, mt_guard_len;

/* Which way this thread places its next sampled block: right-aligned
 * (overflows fault) when 0, left-aligned (underflows fault) when 1. */
static MT_TLS unsigned char place_left;

/* A slot is ALLOCATING or FREEING while one thread changes it outside the
 * lock (its page's protection): no other thread takes or frees it then. */
enum { ALLOCATING = MT_GUARD_FREED + 1, FREEING };

static struct {
    unsigned long every; /* MEMTRACE_GUARD_SAMPLE; 0 = off */
    size_t page;
    size_t nslots;
    mt_lock lock;
    mt_guard_block *slots; /* nslots, mapped with the pool */
    uint32_t *fifo;        /* freed slots, oldest at head */
    size_t head, count;
    size_t fresh; /* slots below this were used once */
} pool;

/* How long a thread waits for the pool's lock before allocating as usual
 * (a lock left held in a forked child is never released). */
#define LOCK_SPINS 100000

/* The data page of slot I. */
static inline uintptr_t page_of(size_t i)
{
    return mt_guard_lo + (2 * i + 1) * pool.page;
}

bool mt_guard_init(unsigned long every, unsigned long slots)
{
    size_t page = mt_os_page_size();
    size_t len = (2 * slots + 1) * page;
    /* Not mt_os_map: failing to map the pool must not stop recording. */
    void *range = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    size_t meta = slots * (sizeof(mt_guard_block) + sizeof(uint32_t));
    void *table = mmap(NULL, meta, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (range == MAP_FAILED || table == MAP_FAILED) {
        if (range != MAP_FAILED)
            munmap(range, len);
        if (table != MAP_FAILED)
            munmap(table, meta);
        return false;
    }
    /* The guard pages are never dumped (they hold nothing), and their
     * flag keeps each of them and each data page a mapping of its own:
     * a data page's mprotect then changes one mapping's protection in
     * place, where it would split and merge mappings with its neighbours
     * (twice the cost). Best effort: the guard works without. */
    for (size_t k = 0; k <= slots; k++)
        madvise((char *)range + 2 * k * page, page, MADV_DONTDUMP);
    pool.page = page;
    pool.nslots = slots;
    pool.slots = table;
    pool.fifo = (uint32_t *)(pool.slots + slots);
    pool.every = every;
    mt_guard_lo = (uintptr_t)range;
    mt_guard_len = len;
    return true;
}

/* The alignment of every block of the pool: glibc's (MALLOC_ALIGNMENT,
 * 16 on x86-64) for every size, as the allocator the program was built
 * against gives it (the C standard asks less of a block under 16 bytes,
 * but code written for glibc relies on 16), and more when asked. */
#define MIN_ALIGN 16

/* A slot for a new block, marked ALLOCATING; false when none is free. */
static bool take_slot(size_t *out)
{
    if (!mt_lock_try_for(&pool.lock, LOCK_SPINS))
        return false;
    bool got = true;
    if (pool.fresh < pool.nslots) {
        *out = pool.fresh++;
    } else if (pool.count > 0) {
        *out = pool.fifo[pool.head];
        pool.head = (pool.head + 1) % pool.nslots;
        pool.count--;
    } else {
        got = false;
    }
    if (got)
        pool.slots[*out].state = ALLOCATING;
    mt_lock_release(&pool.lock);
    return got;
}

/* Slot I, whose page is inaccessible, joins the freed ones (newest last). */
static void put_freed(size_t i)
{
    if (!mt_lock_try_for(&pool.lock, LOCK_SPINS))
        return; /* a lock a forked child inherited held: the slot is lost */
    pool.slots[i].state = MT_GUARD_FREED;
    pool.fifo[(pool.head + pool.count) % pool.nslots] = (uint32_t)i;
    pool.count++;
    mt_lock_release(&pool.lock);
}

void *mt_guard_alloc(size_t size, size_t align)
{
    mt_guard_left = pool.every ? (uint32_t)(pool.every - 1) : UINT32_MAX;
    if (pool.every == 0 || size > pool.page || align > pool.page || (align & (align - 1)))
        return NULL;
    if (align < MIN_ALIGN)
        align = MIN_ALIGN;
    size_t i;
    if (!take_slot(&i))
        return NULL;
    uintptr_t page = page_of(i);
    if (mprotect((void *)page, pool.page, PROT_READ | PROT_WRITE) != 0) {
        put_freed(i);
        return NULL;
    }
    /* A block of 0 bytes still gets a byte of its page: its address must
     * not be the guard page's. */
    size_t room = size ? size : 1;
    uintptr_t start = place_left ? page : (page + pool.page - room) & ~(uintptr_t)(align - 1);
    place_left ^= 1;
    /* The rest of the page, before and after the block, as redzones: a
     * write there that faulted on no page is found at the free
     * (mt_guard_slack, mt_guard_head). A tidy page is the pattern already
     * but for its last block's bytes; any other is filled whole. The block
     * itself starts zeroed (calloc's blocks come from here too). */
    mt_guard_block *s = &pool.slots[i];
    if (s->tidy) {
        mt_pattern_fill((unsigned char *)s->start, s->size, MT_REDZONE_BYTE);
    } else {
        mt_pattern_fill((unsigned char *)page, start - page, MT_REDZONE_BYTE);
        mt_pattern_fill((unsigned char *)(start + size), page + pool.page - (start + size),
                        MT_REDZONE_BYTE);
    }
    memset((void *)start, 0, size);
    *s = (mt_guard_block){ .state = MT_GUARD_LIVE, .start = start, .size = size };
    return (void *)start;
}

/* The slot whose data page holds ADDR, or SIZE_MAX for a guard page. */
static size_t slot_of(uintptr_t addr)
{
    size_t k = (addr - mt_guard_lo) / pool.page;
    return (k & 1) ? (k - 1) / 2 : SIZE_MAX;
}

mt_guard_block *mt_guard_claim(const void *p, bool *lost)
{
    size_t i = slot_of((uintptr_t)p);
    *lost = false;
    if (i == SIZE_MAX)
        return NULL;
    if (!mt_lock_try_for(&pool.lock, LOCK_SPINS)) {
        *lost = true;
        return NULL;
    }
    mt_guard_block *s = &pool.slots[i];
    bool mine = s->state == MT_GUARD_LIVE && s->start == (uintptr_t)p;
    if (mine)
        s->state = FREEING;
    mt_lock_release(&pool.lock);
    return mine ? s : NULL;
}

void mt_guard_mend(const mt_guard_block *s)
{
    uintptr_t page = s->start & ~(uintptr_t)(pool.page - 1);
    mt_pattern_fill((unsigned char *)page, s->start - page, MT_REDZONE_BYTE);
    mt_pattern_fill((unsigned char *)(s->start + s->size), page + pool.page - (s->start + s->size),
                    MT_REDZONE_BYTE);
}

void mt_guard_release(mt_guard_block *s, bool tidy)
{
    size_t i = (size_t)(s - pool.slots);
    uintptr_t page = page_of(i);
    s->tidy = tidy;
    /* Its bytes stay (the next block of the slot is zeroed and filled
     * anew): no madvise, whose cost, and the page fault after it, doubled
     * a slot's turn. */
    mprotect((void *)page, pool.page, PROT_NONE);
    put_freed(i);
}

bool mt_guard_slack(const mt_guard_block *s, size_t *first, size_t *end, size_t *len)
{
    uintptr_t from = s->start + s->size;
    *len = (s->start & ~(uintptr_t)(pool.page - 1)) + pool.page - from;
    return mt_pattern_damage((const unsigned char *)from, *len, MT_REDZONE_BYTE, first, end);
}

bool mt_guard_head(const mt_guard_block *s, size_t *first, size_t *end, size_t *len)
{
    uintptr_t page = s->start & ~(uintptr_t)(pool.page - 1);
    *len = s->start - page;
    return mt_pattern_damage((const unsigned char *)page, *len, MT_REDZONE_BYTE, first, end);
}

void *mt_guard_resize(const void *p, size_t size)
{
    size_t i = slot_of((uintptr_t)p);
    mt_guard_block *s = &pool.slots[i];
    uintptr_t page = s->start & ~(uintptr_t)(pool.page - 1), end = page + pool.page;
    uintptr_t from = s->start, to = s->start, old_end = s->start + s->size;
    size_t room = size ? size : 1;
    if (from != page) /* right-aligned: the end stays at the guard page */
        to = (end - room) & ~(uintptr_t)(MIN_ALIGN - 1);
    memmove((void *)to, (void *)from, s->size < size ? s->size : size);
    /* What the old block held outside the new one is redzone again. */
    uintptr_t new_end = to + size;
    if (from < to)
        mt_pattern_fill((unsigned char *)from, (to < old_end ? to : old_end) - from,
                        MT_REDZONE_BYTE);
    if (old_end > new_end) {
        uintptr_t a = new_end > from ? new_end : from;
        mt_pattern_fill((unsigned char *)a, old_end - a, MT_REDZONE_BYTE);
    }
    s->start = to;
    s->size = size;
    return (void *)to;
}

size_t mt_guard_page_size(void)
{
    return pool.page;
}

bool mt_guard_near_damage(const mt_guard_block *s)
{
    uintptr_t page = s->start & ~(uintptr_t)(pool.page - 1), end = s->start + s->size;
    size_t before = s->start - page < MT_GUARD_NEAR ? s->start - page : MT_GUARD_NEAR;
    size_t after = page + pool.page - end < MT_GUARD_NEAR ? page + pool.page - end : MT_GUARD_NEAR;
    return mt_pattern_differs((const unsigned char *)(s->start - before), before,
                              MT_REDZONE_BYTE) ||
           mt_pattern_differs((const unsigned char *)end, after, MT_REDZONE_BYTE);
}

const mt_guard_block *mt_guard_live(const void *p)
{
    size_t i = slot_of((uintptr_t)p);
    if (i == SIZE_MAX)
        return NULL;
    mt_guard_block *s = &pool.slots[i];
    return s->state == MT_GUARD_LIVE && s->start == (uintptr_t)p ? s : NULL;
}

bool mt_guard_freed(const void *p)
{
    size_t i = slot_of((uintptr_t)p);
    if (i == SIZE_MAX)
        return false;
    const mt_guard_block *s = &pool.slots[i];
    return (s->state == MT_GUARD_FREED || s->state == FREEING) && s->start == (uintptr_t)p;
}

bool mt_guard_block_at(uintptr_t addr, mt_guard_block *out)
{
    if (!mt_guard_owns((void *)addr))
        return false;
    size_t i = slot_of(addr);
    if (i == SIZE_MAX) {
        /* A guard page: the right-aligned block before it, or the
         * left-aligned one after it, whichever lies nearer. */
        size_t k = (addr - mt_guard_lo) / pool.page;
        const mt_guard_block *before = k > 0 ? &pool.slots[k / 2 - 1] : NULL;
        const mt_guard_block *after = k / 2 < pool.nslots ? &pool.slots[k / 2] : NULL;
        if (before && (before->state == MT_GUARD_NEVER || before->start == 0))
            before = NULL;
        if (after && (after->state == MT_GUARD_NEVER || after->start == 0))
            after = NULL;
        if (before && after) {
            uintptr_t end = before->start + before->size;
            if (addr - end > after->start - addr)
                before = NULL;
        }
        const mt_guard_block *b = before ? before : after;
        if (!b)
            return false;
        *out = *b;
    } else {
        *out = pool.slots[i];
        if (out->state == MT_GUARD_NEVER || out->start == 0)
            return false;
    }
    if (out->state != MT_GUARD_LIVE)
        out->state = out->state == MT_GUARD_FREED || out->state == FREEING ? MT_GUARD_FREED
                                                                           : MT_GUARD_LIVE;
    return true;
}
