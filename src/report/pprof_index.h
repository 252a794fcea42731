/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pprof writer's containers (pprof.c): arrays and open-addressed
 * indexes grown through the caller's mt_pprof_heap, which has no
 * realloc. */
#ifndef MT_PPROF_INDEX_H
#define MT_PPROF_INDEX_H

#include "report/pprof_heap.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Makes *ARR (*CAP elements of ELEM bytes) hold at least NEED, doubling
 * from 16; false when out of memory (*ARR is then unchanged). */
bool mt_pprof_grow(const mt_pprof_heap *h, void **arr, size_t *cap, size_t need, size_t elem);

/* An open-addressed index of element numbers (slot: number + 1, 0 empty),
 * count * 2 <= cap, cap a power of two. The caller hashes and compares. */
struct mt_pprof_index {
    uint32_t *slot;
    size_t cap, count;
};

static inline uint64_t mt_pprof_mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

/* Makes room for one more element; false when out of memory. REHASH gives
 * the hash of element N. */
bool mt_pprof_index_reserve(const mt_pprof_heap *h, struct mt_pprof_index *ix,
                            uint64_t (*rehash)(const void *ctx, uint32_t n), const void *ctx);

#endif
