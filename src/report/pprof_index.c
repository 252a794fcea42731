/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pprof writer's containers (see pprof_index.h). */
#include "report/pprof_index.h"

#include <string.h>

bool mt_pprof_grow(const mt_pprof_heap *h, void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t cap2 = *cap ? *cap : 16;
    while (cap2 < need)
        cap2 *= 2;
    void *a = h->alloc(cap2 * elem);
    if (!a)
        return false;
    if (*arr) {
        memcpy(a, *arr, *cap * elem);
        h->free(*arr);
    }
    *arr = a;
    *cap = cap2;
    return true;
}

bool mt_pprof_index_reserve(const mt_pprof_heap *h, struct mt_pprof_index *ix,
                            uint64_t (*rehash)(const void *ctx, uint32_t n), const void *ctx)
{
    if ((ix->count + 1) * 2 <= ix->cap)
        return true;
    size_t cap = ix->cap ? ix->cap * 2 : 1024;
    uint32_t *slot = h->alloc(cap * sizeof *slot);
    if (!slot)
        return false;
    memset(slot, 0, cap * sizeof *slot);
    for (size_t i = 0; i < ix->cap; i++) {
        uint32_t n = ix->slot[i];
        if (!n)
            continue;
        size_t at = rehash(ctx, n - 1) & (cap - 1);
        while (slot[at])
            at = (at + 1) & (cap - 1);
        slot[at] = n;
    }
    h->free(ix->slot);
    ix->slot = slot;
    ix->cap = cap;
    return true;
}
