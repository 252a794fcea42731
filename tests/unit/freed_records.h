/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Freed-history records whose every field is derived from one number k, so
 * that a record mixing two pushes (a torn read) shows; shared by the
 * freed-ring stress in test_freed_history.c and its ThreadSanitizer run in
 * tsan_tables.c. Every such record covers FREED_PROBE. */
#ifndef MT_TEST_FREED_RECORDS_H
#define MT_TEST_FREED_RECORDS_H

#include "store/freed_history.h"

#include <stdbool.h>
#include <stdint.h>

/* ptr < 2^44 and size > 2^62: every record covers it. */
#define FREED_PROBE ((uintptr_t)1 << 61)

static inline mt_freed_record freed_record_of(uint64_t k)
{
    mt_freed_record r = {
        .ptr = k,
        .size = ((uint64_t)1 << 62) + 3 * k,
        .alloc_seq = k ^ 0x5555555555555555ull,
        .free_seq = k ^ 0x0123456789abcdefull,
        .alloc_stack = (uint32_t)(k * 0x9E3779B1u),
        .free_stack = (uint32_t)(k >> 32) ^ 0x5bd1e995u,
        .alloc_thread = (uint32_t)k ^ 0xdeadbeefu,
        .free_thread = (uint32_t)(k >> 16),
    };
    return r;
}

static inline bool freed_record_consistent(const mt_freed_record *r)
{
    mt_freed_record want = freed_record_of(r->ptr);
    return r->ptr != 0 && r->size == want.size && r->alloc_seq == want.alloc_seq &&
           r->free_seq == want.free_seq && r->alloc_stack == want.alloc_stack &&
           r->free_stack == want.free_stack && r->alloc_thread == want.alloc_thread &&
           r->free_thread == want.free_thread;
}

/* mt_freed_find's callback: counts the records seen and the torn ones. */
struct freed_tally {
    uint64_t accepted, torn;
};

static inline void freed_tally(const mt_freed_record *r, void *ctx)
{
    struct freed_tally *t = ctx;
    t->accepted++;
    t->torn += !freed_record_consistent(r);
}

#endif
