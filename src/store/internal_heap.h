/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memtrace's private heap: serves every allocation made while a thread is
 * inside memtrace (libunwind, libdw, dlsym during bootstrap) so that those
 * never touch the traced allocator or its locks. Its blocks live in one
 * reserved address range, so a pointer is ours iff mt_iheap_owns() says so,
 * and such a pointer is never passed to the real free. */
#ifndef MT_INTERNAL_HEAP_H
#define MT_INTERNAL_HEAP_H

#include "base/atomic.h"
#include "base/common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The range reserved: 4 GiB of address space, less under an RLIMIT_AS
 * that would not leave the program three quarters of its limit. */
#define MT_IHEAP_RESERVE ((uintptr_t)4 << 30)

/* Both are 0 until the range is reserved; both are set once, base
 * before size (a release store, paired with the acquire in mt_iheap_owns:
 * a thread that sees size sees base), and never change. While size reads
 * 0 the range owns nothing, whatever base reads: so mt_iheap_owns is one
 * range test, with no test of base first (the sampled mode's fast free). */
extern struct mt_iheap_range {
    mt_atomic(uintptr_t) base;
    mt_atomic(uintptr_t) size;
} mt_iheap_range MT_HIDDEN;

static inline bool mt_iheap_owns(const void *p)
{
    uintptr_t size = mt_atomic_load_acquire(&mt_iheap_range.size);
    return (uintptr_t)p - mt_atomic_load_relaxed(&mt_iheap_range.base) < size;
}

/* Reserves the range now (start-up), not on first use: a program that
 * later fills its address space (ulimit -v) leaves none for it. */
void mt_iheap_reserve(void);

/* Like malloc/memalign: NULL with errno ENOMEM when the range is exhausted.
 * ALIGN must be a power of two. */
void *mt_iheap_alloc(size_t size, size_t align);
void mt_iheap_free(void *p);
size_t mt_iheap_usable(const void *p);
void *mt_iheap_realloc(void *p, size_t size);

/* Bytes of the range never handed out yet (freed blocks not counted): a
 * caller about to start something that allocates without checking (libdw)
 * can give up first when this is low. A racy read, for heuristics. */
size_t mt_iheap_headroom(void);
/* The size of the range; 4 GiB before it is reserved, whatever RLIMIT_AS
 * will make it then. */
size_t mt_iheap_capacity(void);

/* Held across fork so the child inherits a consistent heap. Returns
 * whether it took the lock (see mt_lock_acquire_unless_mine). */
bool mt_iheap_lock(void);
void mt_iheap_unlock(void);

#endif
