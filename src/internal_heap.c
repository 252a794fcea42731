/* A small segregated-fit heap over one reserved range, committed in steps.
 * Blocks are power-of-two classes from 32 bytes up; each starts with a
 * 16-byte header {class, offset from the header back to the block start}, so
 * every pointer handed out is 16-aligned (or as aligned as asked) and free
 * needs no search. Freed blocks go on their class's list and are reused;
 * nothing is returned to the kernel. One lock: this heap is only used off the
 * hot path (bootstrap, nested allocations, symbolization). */
#include "internal_heap.h"

#include "atomic.h"
#include "common.h"
#include "lock.h"
#include "os.h"

#include "output.h"

#include <errno.h>
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

struct mt_iheap_range mt_iheap_range;
static uintptr_t limit;

static mt_lock heap_lock = MT_LOCK_INIT;
/* bump is written under heap_lock and read without it by mt_iheap_headroom,
 * a heuristic that tolerates a stale value. */
static mt_atomic(uintptr_t) bump;
static uintptr_t committed;
static void *free_lists[NUM_CLASSES];
static int reserve_failed;

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
    limit = (uintptr_t)p + size;
    mt_iheap_range.size = size;
    mt_atomic_store_release(&mt_iheap_range.base, (uintptr_t)p);
    return true;
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
    mt_lock_acquire(&heap_lock);
    char *block = carve(cls);
    mt_lock_release(&heap_lock);
    if (!block) {
        errno = ENOMEM;
        return NULL;
    }
    uintptr_t user = ((uintptr_t)block + HEADER + align - 1) & ~(uintptr_t)(align - 1);
    struct header *h = (struct header *)(user - HEADER);
    h->cls = cls;
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
    mt_lock_acquire(&heap_lock);
    *(void **)block = free_lists[cls];
    free_lists[cls] = block;
    mt_lock_release(&heap_lock);
}

size_t mt_iheap_usable(const void *p)
{
    const struct header *h = header_of(p);
    if (h->magic != MAGIC)
        return 0;
    return ((size_t)1 << (h->cls + MIN_SHIFT)) - h->back - HEADER;
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
    if (!mt_atomic_load_acquire(&mt_iheap_range.base))
        return reserve_failed ? 0 : RESERVE_SIZE;
    return mt_iheap_range.size;
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
