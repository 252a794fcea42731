/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The tables of leak_client.h. An ignored block is kept as its address and
 * allocation number, so that its entry dies with it: a block allocated
 * later at the same address has another number and is checked again
 * (LeakSanitizer keeps the flag in the chunk's header, with the same
 * effect). The lock is never held while a thread is stopped: the check
 * copies the roots before it stops them; the ignored blocks, applied
 * while they are stopped, wait for the lock a bounded time (a thread
 * stopped inside a call here holds it: that check then ignores nothing,
 * and says nothing, a case of nanoseconds). */
#include "leak/leak_client.h"

#include "base/lock.h"

#include <string.h>

#define MAX_IGNORED 4096
#define MAX_ROOTS 1024

static mt_lock lock;
/* The layout mt_leak_client_describe promises: two 64-bit words an entry,
 * 64-bit counts. */
static struct {
    uint64_t ptr;
    uint64_t seq;
} ignored[MAX_IGNORED];
static uint64_t nignored;
static struct {
    uint64_t lo, hi;
} roots[MAX_ROOTS];
static uint64_t nroots;

void mt_leak_client_describe(mt_leak_client_layout *l)
{
    l->ignored = (uintptr_t)ignored;
    l->ignored_count = (uintptr_t)&nignored;
    l->ignored_max = MAX_IGNORED;
    l->roots = (uintptr_t)roots;
    l->roots_count = (uintptr_t)&nroots;
    l->roots_max = MAX_ROOTS;
}

const char *mt_leak_ignore(uintptr_t p)
{
    mt_live_entry e;
    bool unlocked = false;
    if (!mt_live_find(p, &e, &unlocked)) {
        mt_live_around a;
        if (!mt_live_find_around(p, &a, &unlocked))
            return "is in no live block memtrace knows; nothing ignored";
        e = a.below;
    }
    const char *why = NULL;
    mt_lock_acquire(&lock);
    size_t i = 0;
    while (i < nignored && ignored[i].ptr != e.ptr)
        i++;
    if (i == nignored && nignored == MAX_IGNORED)
        why = "the table of ignored blocks is full (4096); nothing ignored";
    else {
        ignored[i].ptr = e.ptr;
        ignored[i].seq = e.seq;
        nignored += i == nignored;
    }
    mt_lock_release(&lock);
    return why;
}

const char *mt_leak_root_add(uintptr_t p, size_t size, uintptr_t overlap[2])
{
    overlap[0] = overlap[1] = 0;
    if (size == 0 || p + size < p)
        return "is empty or wraps around the address space; not registered";
    const char *why = NULL;
    mt_lock_acquire(&lock);
    for (size_t i = 0; i < nroots && !overlap[1]; i++)
        if (roots[i].lo < p + size && p < roots[i].hi) {
            overlap[0] = roots[i].lo;
            overlap[1] = roots[i].hi;
        }
    if (nroots == MAX_ROOTS)
        why = "the table of root regions is full (1024); not registered";
    else
        roots[nroots].lo = p, roots[nroots++].hi = p + size;
    mt_lock_release(&lock);
    return why;
}

const char *mt_leak_root_remove(uintptr_t p, size_t size)
{
    const char *why = "was never registered with this address and size; nothing removed";
    mt_lock_acquire(&lock);
    for (size_t i = 0; i < nroots; i++)
        if (roots[i].lo == p && roots[i].hi == p + size) {
            roots[i] = roots[--nroots]; /* the order of the roots is no matter */
            why = NULL;
            break;
        }
    mt_lock_release(&lock);
    return why;
}

void mt_leak_client_roots(void (*add)(void *ctx, const mt_leak_root *root), void *ctx)
{
    mt_lock_acquire(&lock);
    for (size_t i = 0; i < nroots; i++) {
        mt_leak_root r = { .lo = roots[i].lo, .hi = roots[i].hi, .kind = MT_ROOT_OTHER };
        add(ctx, &r);
    }
    mt_lock_release(&lock);
}

void mt_leak_client_ignored(mt_leak_block *b, size_t n)
{
    if (!mt_lock_try_for(&lock, 200000)) /* about a millisecond */
        return;
    size_t kept = 0;
    for (size_t i = 0; i < nignored; i++) {
        mt_live_entry e;
        bool unlocked = false;
        if (!mt_live_find(ignored[i].ptr, &e, &unlocked) || e.seq != ignored[i].seq)
            continue; /* freed since: the entry goes */
        ptrdiff_t k = mt_leak_find(b, n, ignored[i].ptr);
        if (k >= 0 && b[k].ptr == ignored[i].ptr)
            b[k].flags |= MT_LEAK_FLAG_ROOT;
        ignored[kept++] = ignored[i];
    }
    nignored = kept;
    mt_lock_release(&lock);
}
