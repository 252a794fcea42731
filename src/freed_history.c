/* Freed history ring. Invariant: slot i % cap holds the record pushed i-th
 * (stamp i + 1) or a later one; a reader trusts a slot only if its stamp,
 * read before and after copying it, is the one it expects. */
#include "freed_history.h"

#include "common.h"
#include "os.h"

static mt_freed_record *ring;
static size_t cap;
static uint64_t head; /* records pushed so far */

void mt_freed_init(size_t capacity)
{
    if (capacity == 0)
        return;
    mt_freed_record *r = mt_os_map(capacity * sizeof *r, "freed history");
    if (!r)
        return;
    cap = capacity;
    __atomic_store_n(&ring, r, __ATOMIC_RELEASE);
}

bool mt_freed_enabled(void)
{
    return __atomic_load_n(&ring, __ATOMIC_RELAXED) != NULL;
}

void mt_freed_push(mt_freed_record *r)
{
    uint64_t i = __atomic_fetch_add(&head, 1, __ATOMIC_RELAXED);
    mt_freed_record *slot = &ring[i % cap];
    __atomic_store_n(&slot->stamp, 0, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    r->stamp = 0;
    *slot = *r;
    __atomic_store_n(&slot->stamp, i + 1, __ATOMIC_RELEASE);
}

size_t mt_freed_find(uintptr_t addr, void (*fn)(const mt_freed_record *, void *), void *ctx)
{
    if (!ring)
        return 0;
    uint64_t end = __atomic_load_n(&head, __ATOMIC_ACQUIRE);
    uint64_t begin = end > cap ? end - cap : 0;
    size_t found = 0;
    for (uint64_t i = end; i-- > begin;) {
        const mt_freed_record *slot = &ring[i % cap];
        if (__atomic_load_n(&slot->stamp, __ATOMIC_ACQUIRE) != i + 1)
            continue;
        mt_freed_record r = *slot;
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&slot->stamp, __ATOMIC_RELAXED) != i + 1)
            continue;
        if (addr >= r.ptr && (addr - r.ptr < r.size || addr == r.ptr)) {
            fn(&r, ctx);
            found++;
        }
    }
    return found;
}

const mt_freed_record *mt_freed_ring(size_t *capacity, uint64_t *pushed)
{
    *capacity = cap;
    *pushed = __atomic_load_n(&head, __ATOMIC_ACQUIRE);
    return ring;
}

const uint64_t *mt_freed_pushed(void)
{
    return &head;
}
