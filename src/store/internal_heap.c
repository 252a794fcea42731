/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A small segregated-fit heap over one reserved range, committed in steps.
 * Blocks are power-of-two classes from 32 bytes up; each starts with a
 * 16-byte header {class, offset from the header back to the block start}, so
 * every pointer handed out is 16-aligned (or as aligned as asked) and free
 * needs no search. Freed blocks go on their class's list and are reused;
 * nothing is returned to the kernel. One lock: this heap is only used off the
 * hot path (bootstrap, nested allocations, symbolization).
 *
 * Nothing here waits without bound: print_trace runs while other threads
 * may be stopped by a debugger, one of them perhaps holding heap_lock. A
 * caller that cannot take the lock within LOCK_WAIT_NS is served from the
 * spare region, the top of the range, bump-allocated without a lock and
 * never reused (its blocks are not freed); a free that cannot take the lock
 * leaves its block unused. Only when the spare region is used up does an
 * allocation wait for the lock as long as it takes (and fails instead when
 * its own thread holds the lock: a signal handler's allocation that
 * interrupted this heap's work). */
#include "store/internal_heap.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/lock.h"
#include "base/os.h"

#include "base/output.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <string.h>

#define RESERVE_SIZE ((size_t)MT_IHEAP_RESERVE)
#define COMMIT_STEP ((size_t)1 << 20)
#define MIN_SHIFT 5
#define NUM_CLASSES 40
#define HEADER 16

struct header {
    uint32_t cls;
    uint32_t magic;
    uint64_t back; /* bytes from the header's end to the block start */
};

#define MAGIC 0x6d74696bu
#define SPARE_CLASS 0x100u /* or'ed into a spare block's class */
#define SPARE_MAX ((size_t)16 << 20)
#define LOCK_WAIT_NS (10 * 1000000ull)

struct mt_iheap_range mt_iheap_range;
static uintptr_t limit;

static mt_lock heap_lock = MT_LOCK_INIT;
/* bump is written under heap_lock and read without it by mt_iheap_headroom,
 * a heuristic that tolerates a stale value. */
static mt_atomic(uintptr_t) bump;
static uintptr_t committed;
static void *free_lists[NUM_CLASSES];
static int reserve_failed;
/* The spare region [spare_next, spare_end): set once with the range (before
 * its base is published), then only bumped, atomically. Empty if it could
 * not be made writable. */
static mt_atomic(uintptr_t) spare_next;
static uintptr_t spare_end;

/* RESERVE_SIZE, or a quarter of the address-space limit when that is less
 * (a program run under `ulimit -v` keeps the rest), said once. */
static size_t reserve_size(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur / 4 >= RESERVE_SIZE)
        return RESERVE_SIZE;
    size_t size = (size_t)(rl.rlim_cur / 4) & ~(COMMIT_STEP - 1);
    if (size < COMMIT_STEP)
        size = COMMIT_STEP;
    mt_warn("the address-space limit (ulimit -v) is %lu MiB: memtrace's internal heap "
            "reserves %zu MiB instead of %zu MiB",
            (unsigned long)(rl.rlim_cur >> 20), size >> 20, RESERVE_SIZE >> 20);
    return size;
}

/* Under heap_lock. */
static bool ensure_reserved(void)
{
    if (mt_atomic_load_relaxed(&mt_iheap_range.base)) /* under heap_lock */
        return true;
    if (reserve_failed)
        return false;
    size_t size = reserve_size();
    void *p = mt_os_reserve(size, "internal heap");
    if (!p) {
        reserve_failed = 1;
        return false;
    }
    mt_atomic_store_relaxed(&bump, (uintptr_t)p);
    committed = (uintptr_t)p;
    /* The spare region: made writable at once (pages are only used when
     * touched) with mprotect directly, so that it neither counts as a
     * metadata request (MEMTRACE_FAULT_MAP) nor stops recording if it fails. */
    size_t spare = size / 16 < SPARE_MAX ? (size / 16) & ~(COMMIT_STEP - 1) : SPARE_MAX;
    limit = (uintptr_t)p + size - spare;
    if (spare && mprotect((void *)limit, spare, PROT_READ | PROT_WRITE) == 0) {
        madvise((void *)limit, spare, MADV_DODUMP); /* in cores, as mt_os_commit's */
        spare_end = limit + spare;
        mt_atomic_store_relaxed(&spare_next, limit);
    }
    mt_atomic_store_release(&mt_iheap_range.base, (uintptr_t)p);
    mt_atomic_store_release(&mt_iheap_range.size, size); /* last: mt_iheap_owns */
    return true;
}

void mt_iheap_reserve(void)
{
    mt_lock_acquire(&heap_lock);
    ensure_reserved();
    mt_lock_release(&heap_lock);
}

static unsigned class_of(size_t need)
{
    unsigned cls = 0;
    while (((size_t)1 << (cls + MIN_SHIFT)) < need)
        cls++;
    return cls;
}

static void *carve(unsigned cls)
{
    size_t size = (size_t)1 << (cls + MIN_SHIFT);
    if (free_lists[cls]) {
        void *b = free_lists[cls];
        free_lists[cls] = *(void **)b;
        return b;
    }
    if (!ensure_reserved())
        return NULL;
    uintptr_t b = mt_atomic_load_relaxed(&bump);
    if (size > limit - b)
        return NULL;
    if (b + size > committed) {
        size_t grow = (b + size - committed + COMMIT_STEP - 1) & ~(COMMIT_STEP - 1);
        if (grow > limit - committed)
            grow = limit - committed;
        if (mt_os_commit((void *)committed, grow, "internal heap") != 0)
            return NULL;
        committed += grow;
    }
    mt_atomic_store_relaxed(&bump, b + size);
    return (void *)b;
}

/* A block of class CLS from the spare region, or NULL when it is used up
 * (or was never made). Lock-free. */
static char *spare_carve(unsigned cls)
{
    if (!mt_atomic_load_acquire(&mt_iheap_range.base)) /* spare_end set before */
        return NULL;
    size_t size = (size_t)1 << (cls + MIN_SHIFT);
    uintptr_t b = mt_atomic_load_relaxed(&spare_next);
    do {
        if (b == 0 || size > spare_end - b)
            return NULL;
    } while (!mt_atomic_cas_weak_relaxed(&spare_next, &b, b + size));
    return (char *)b;
}

/* Takes heap_lock unless a holder keeps it LOCK_WAIT_NS (stopped by a
 * debugger, most likely: no operation here takes that long), or holds it
 * in this very thread (a signal handler's allocation that interrupted
 * one here: the holder cannot go on before the handler returns). */
static bool lock_within_bound(void)
{
    if (mt_lock_is_mine(&heap_lock))
        return false;
    return mt_lock_acquire_within(&heap_lock, LOCK_WAIT_NS);
}

void *mt_iheap_alloc(size_t size, size_t align)
{
    if (align < HEADER)
        align = HEADER;
    if (size > RESERVE_SIZE || align > RESERVE_SIZE / 2) {
        errno = ENOMEM;
        return NULL;
    }
    size_t need = HEADER + size + (align > HEADER ? align : 0);
    unsigned cls = class_of(need);
    if (cls >= NUM_CLASSES) {
        errno = ENOMEM;
        return NULL;
    }
    char *block = NULL;
    bool spare = false;
    if (lock_within_bound()) {
        block = carve(cls);
        mt_lock_release(&heap_lock);
    } else if ((block = spare_carve(cls)) != NULL) {
        spare = true;
    } else if (!mt_lock_is_mine(&heap_lock)) {
        mt_lock_acquire(&heap_lock);
        block = carve(cls);
        mt_lock_release(&heap_lock);
    }
    if (!block) {
        errno = ENOMEM;
        return NULL;
    }
    uintptr_t user = ((uintptr_t)block + HEADER + align - 1) & ~(uintptr_t)(align - 1);
    struct header *h = (struct header *)(user - HEADER);
    h->cls = cls | (spare ? SPARE_CLASS : 0);
    h->magic = MAGIC;
    h->back = user - HEADER - (uintptr_t)block;
    return (void *)user;
}

static struct header *header_of(const void *p)
{
    return (struct header *)((uintptr_t)p - HEADER);
}

void mt_iheap_free(void *p)
{
    struct header *h = header_of(p);
    if (h->magic != MAGIC)
        return; /* not a block start: ignore rather than corrupt the lists */
    void *block = (char *)h - h->back;
    unsigned cls = h->cls;
    h->magic = 0;
    /* A spare block is never reused; a block whose free cannot take the
     * lock stays unused: both cost memory, never a wait. */
    if ((cls & SPARE_CLASS) || !lock_within_bound())
        return;
    *(void **)block = free_lists[cls];
    free_lists[cls] = block;
    mt_lock_release(&heap_lock);
}

size_t mt_iheap_usable(const void *p)
{
    const struct header *h = header_of(p);
    if (h->magic != MAGIC)
        return 0;
    return ((size_t)1 << ((h->cls & ~SPARE_CLASS) + MIN_SHIFT)) - h->back - HEADER;
}

void *mt_iheap_realloc(void *p, size_t size)
{
    if (!p)
        return mt_iheap_alloc(size, HEADER);
    size_t old = mt_iheap_usable(p);
    if (size <= old)
        return p;
    void *q = mt_iheap_alloc(size, HEADER);
    if (!q)
        return NULL;
    memcpy(q, p, old);
    mt_iheap_free(p);
    return q;
}

/* Before the range is reserved, RESERVE_SIZE: the RLIMIT_AS check is made
 * (and said) at the reservation only. */
size_t mt_iheap_capacity(void)
{
    size_t size = mt_atomic_load_acquire(&mt_iheap_range.size); /* set after base */
    if (!size)
        return reserve_failed ? 0 : RESERVE_SIZE;
    return size;
}

size_t mt_iheap_headroom(void)
{
    if (!mt_atomic_load_acquire(&mt_iheap_range.base))
        return mt_iheap_capacity();
    return limit - mt_atomic_load_relaxed(&bump);
}

bool mt_iheap_lock(void)
{
    return mt_lock_acquire_unless_mine(&heap_lock);
}

void mt_iheap_unlock(void)
{
    mt_lock_release(&heap_lock);
}
