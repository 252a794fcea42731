/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Bad frees (mt_bad_free in state.h): a free the live table could not match
 * is told apart here, off the hot path, and reported on memtrace's stderr
 * (mt_err_fd) before the caller hands the call to the real allocator
 * unchanged. A double free (no live block starts at the address, and the
 * freed history's latest record there was followed by no allocation there)
 * is reported every time; a free inside a live block (within INSIDE_REACH
 * bytes of its start) and a mismatched pair (delete of malloc'ed memory,
 * free of new[]'ed, ...) once per call site. Anything less certain says
 * nothing: a wrong report is worse than none. A report is an error like a
 * heap error's: it sets the exit status and MEMTRACE_ON_ERROR=abort aborts
 * at it (mt_error_reported). */
#include "capture/state.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/config.h"
#include "base/lock.h"
#include "base/output.h"
#include "base/reentry.h"
#include "base/upcalls.h"
#include "capture/capture.h"
#include "report/describe.h"
#include "report/format.h"
#include "report/heap_error.h"
#include "store/freed_history.h"
#include "store/live_table.h"
#include "store/stack_store.h"
#include "store/threads.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

/* How far below a freed address a block's start is looked for: a free
 * inside a block further from its start than this is not recognised (and
 * is then an unknown pointer, passed on silently). Each 8 bytes is one
 * exact lookup in the live table, so this bounds the cost of every free of
 * an unknown pointer: 128 lookups, about 2 microseconds. */
#define INSIDE_REACH 1024
#define INSIDE_STEP 8

/* ------------------------------------------------------------ the ring's addresses */

/* An index of the freed ring's addresses, so that a free of an address the
 * ring does not hold (the usual unknown pointer: a block from before
 * memtrace started) costs a hash probe, not a walk of the whole ring.
 * Invariant, under its lock: every address of a record pushed before
 * SCANNED that the ring still holds is in SET, with some whose records have
 * left the ring since (a hit is confirmed by mt_freed_find). A push enters
 * the set at most once between two rebuilds, and a rebuild happens when
 * stale addresses fill it: the work is bounded by the frees since the last
 * call, and by the ring's capacity. The set is mapped on first use, twice
 * the ring's capacity in slots, at most 3/4 full. */
static struct {
    mt_lock lock;
    uintptr_t *set; /* open addressing, linear probing; 0 = empty */
    size_t cap;     /* slots, a power of two */
    size_t count;
    uint64_t scanned; /* mt_freed_each_since's next FROM */
    bool failed;      /* the set could not be mapped: walk the ring */
} ring_index;

static size_t index_slot(uintptr_t addr)
{
    return (size_t)(((uint64_t)addr >> 3) * 0x9e3779b97f4a7c15ull >> 20) & (ring_index.cap - 1);
}

static bool index_has(uintptr_t addr)
{
    for (size_t i = index_slot(addr);; i = (i + 1) & (ring_index.cap - 1)) {
        if (ring_index.set[i] == addr)
            return true;
        if (ring_index.set[i] == 0)
            return false;
    }
}

static void index_add(const mt_freed_record *r, void *ctx)
{
    (void)ctx;
    size_t i = index_slot(r->ptr);
    for (; ring_index.set[i] != 0; i = (i + 1) & (ring_index.cap - 1))
        if (ring_index.set[i] == r->ptr)
            return;
    MT_ASSERT((ring_index.count + 1) * 4 <= ring_index.cap * 3);
    ring_index.set[i] = r->ptr;
    ring_index.count++;
}

/* False only if the freed ring holds no record starting at ADDR. */
static bool ring_may_hold(uintptr_t addr)
{
    size_t ring_cap;
    uint64_t pushed;
    if (!mt_freed_ring(&ring_cap, &pushed))
        return false;
    /* A bounded wait: another thread's call holds it briefly; a holder in a
     * forked child's parent never returns, and the ring walk answers. */
    if (!mt_lock_try_for(&ring_index.lock, 4096))
        return true;
    if (!ring_index.set && !ring_index.failed) {
        size_t cap = 1024;
        while (cap < 2 * ring_cap)
            cap *= 2;
        /* Not mt_os_map: failing to map this must not stop recording. */
        void *p = mmap(NULL, cap * sizeof(uintptr_t), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) {
            ring_index.failed = true;
        } else {
            ring_index.set = p;
            ring_index.cap = cap;
        }
    }
    bool hit = true;
    if (ring_index.set) {
        uint64_t from = ring_index.scanned > pushed ? pushed : ring_index.scanned;
        uint64_t adding = pushed - from < ring_cap ? pushed - from : ring_cap;
        if ((ring_index.count + adding) * 4 > ring_index.cap * 3) {
            /* Stale addresses fill it: start again from the ring as it is. */
            memset(ring_index.set, 0, ring_index.cap * sizeof(uintptr_t));
            ring_index.count = 0;
            from = 0;
        }
        ring_index.scanned = mt_freed_each_since(from, index_add, NULL);
        hit = index_has(addr);
    }
    mt_lock_release(&ring_index.lock);
    return hit;
}

/* ------------------------------------------------------------ lookups */

/* The freed history's records about one address (mt_freed_find). */
typedef struct {
    uintptr_t addr;
    bool found;
    mt_freed_record latest; /* the record starting at ADDR freed last */
    uint64_t newest;        /* the newest when of every record that covered ADDR */
} history;

/* Records come newest first (by when): the first one starting at ADDR is
 * the latest. */
static void note_record(const mt_freed_record *r, void *arg)
{
    history *h = arg;
    if (r->when > h->newest)
        h->newest = r->when;
    if (r->ptr == h->addr && !h->found) {
        h->latest = *r;
        h->found = true;
    }
}

/* Whether a free of ADDR now frees it again: the latest record starting
 * there (into *PREV) is certain to have been followed by no allocation
 * there. No live block starts at ADDR (the caller's table missed) nor
 * holds it (find_inside missed). Traced allocations there since would have
 * left a record freed after that free (any record covering ADDR with a
 * later when: a block there freed later was allocated after, since two
 * live blocks never overlap; allocation numbers are not in time order
 * across threads); untraced ones move mt_untraced_seq. */
static bool freed_again(uintptr_t addr, mt_freed_record *prev)
{
    if (!ring_may_hold(addr))
        return false;
    history h = { .addr = addr };
    mt_freed_find(addr, note_record, &h);
    if (!h.found || h.newest > h.latest.when)
        return false;
    if (h.latest.free_seq <= mt_atomic_load_relaxed(&mt_untraced_seq))
        return false;
    *prev = h.latest;
    return true;
}

/* The live block ADDR is inside (not at its start), looked for at most
 * INSIDE_REACH bytes below. Only an answer read under the shard locks
 * counts, of a block recorded after the last untraced fork-window call. */
static bool find_inside(uintptr_t addr, mt_live_entry *out)
{
    for (uintptr_t back = INSIDE_STEP; back <= INSIDE_REACH && back <= addr; back += INSIDE_STEP) {
        bool unlocked = false;
        if (!mt_live_find(addr - back, out, &unlocked))
            continue;
        return !unlocked && addr - out->ptr < out->size &&
               out->seq > mt_atomic_load_relaxed(&mt_untraced_seq);
    }
    return false;
}

/* ------------------------------------------------------------ once per site */

/* Call sites (the return address into the caller of the free function,
 * with the kind of report) already reported, so that a loop reports an
 * interior free or a mismatch once. Lock-free: a key is claimed by
 * compare-and-swap from 0. When the probe finds no room the report is
 * written anyway. */
#define SITES (1u << 12)
#define SITE_PROBES 32
static mt_atomic(uintptr_t) sites[SITES];

static bool first_at_site(uintptr_t ret, int what)
{
    if (ret == 0)
        return true;
    uintptr_t key = ret ^ ((uintptr_t)what << 60);
    size_t i = (size_t)((uint64_t)key * 0x9e3779b97f4a7c15ull >> 52) & (SITES - 1);
    for (unsigned n = 0; n < SITE_PROBES; n++, i = (i + 1) & (SITES - 1)) {
        uintptr_t seen = 0;
        if (mt_atomic_cas_acq_rel(&sites[i], &seen, key))
            return true;
        if (seen == key)
            return false;
    }
    return true;
}

/* ------------------------------------------------------------ the report */

static const char *call_name(unsigned kind)
{
    if (kind & MT_FREE_BY_REALLOC)
        return "realloc";
    switch (kind & 0xff) {
    case MT_KIND_NEW: return "delete";
    case MT_KIND_NEW_ARRAY: return "delete[]";
    case MT_KIND_POOL: return "memtrace_freelike";
    default: return "free";
    }
}

static const char *alloc_name(unsigned kind)
{
    switch (kind) {
    case MT_KIND_NEW: return "new";
    case MT_KIND_NEW_ARRAY: return "new[]";
    case MT_KIND_POOL: return "memtrace_malloclike";
    default: return "malloc";
    }
}

/* Writes B, whose stack is this call's FRAMES, to memtrace's stderr. */
static void report(mt_fmt_bad_free_report *b, const uintptr_t *frames, unsigned depth)
{
    int fd = mt_err_fd();
    if (fd < 0)
        return;
    b->thread = mt_describe_thread(mt_thread_number());
    b->stack = (mt_fmt_stack_ref){ frames, depth };
    /* write is a cancellation point: a thread cancelled while it holds the
     * symbolizer's lock would leave every later answer with raw frames. */
    int cancel;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    mt_out out;
    mt_out_init(&out, fd);
    mt_fmt_bad_free(&out, b, mt_describe_stack, NULL);
    mt_out_flush(&out);
    pthread_setcancelstate(cancel, NULL);
}

void mt_bad_free(const void *ptr, unsigned kind, const mt_live_entry *found)
{
    MT_ASSERT(!mt_busy);
    if (mt_cfg.bad_free == MT_BAD_FREE_QUIET)
        return;
    int was = mt_enter();
    uintptr_t addr = (uintptr_t)ptr;
    uint64_t untraced = mt_atomic_load_relaxed(&mt_untraced_seq);
    mt_fmt_bad_free_report b = { .call = call_name(kind), .addr = addr };
    mt_live_entry e = { 0 };
    mt_freed_record prev = { 0 };
    if (found) {
        /* A record older than an untraced fork-window free may be stale. */
        if (found->seq <= untraced)
            goto out;
        e = *found;
        b.what = MT_BAD_FREE_MISMATCH;
        b.alloc = alloc_name(mt_entry_kind(found));
    } else if (find_inside(addr, &e)) {
        b.what = MT_BAD_FREE_INSIDE;
    } else if (freed_again(addr, &prev)) {
        b.what = MT_BAD_FREE_DOUBLE;
        b.ptr = prev.ptr;
        b.size = prev.size;
        b.alloc_seq = prev.alloc_seq;
        b.free_seq = prev.free_seq;
        b.alloc_thread = mt_describe_thread(prev.alloc_thread);
        b.free_thread = mt_describe_thread(prev.free_thread);
        b.alloc_stack = mt_describe_stack_ref(prev.alloc_stack);
        b.free_stack = mt_describe_stack_ref(prev.free_stack);
    } else if ((kind & 0xff) == MT_KIND_POOL) {
        /* Every block memtrace_malloclike declares is recorded: an
         * address none starts is wrong, not merely untraced. */
        b.what = MT_BAD_FREE_WILD;
    } else {
        goto out;
    }
    if (b.what == MT_BAD_FREE_WILD) {
        b.ptr = addr;
    } else if (b.what != MT_BAD_FREE_DOUBLE) {
        b.ptr = e.ptr;
        b.size = e.size;
        b.alloc_seq = e.seq;
        b.alloc_thread = mt_describe_thread(mt_entry_thread(&e));
        b.alloc_stack = mt_describe_stack_ref(e.stack);
    }
    uintptr_t frames[MT_MAX_DEPTH];
    unsigned depth = mt_capture(frames, mt_cfg.depth);
    bool reported = b.what == MT_BAD_FREE_DOUBLE || first_at_site(depth ? frames[0] : 0, b.what);
    if (reported) {
        report(&b, frames, depth);
        bool twice = b.what == MT_BAD_FREE_DOUBLE;
        mt_error_record r = {
            .kind = MT_ERROR_BAD_FREE + (uint64_t)b.what,
            .ptr = b.ptr,
            .size = b.size,
            .addr = addr,
            .freed = twice,
            .alloc_seq = b.alloc_seq,
            .free_seq = b.free_seq,
            .alloc_stack = twice ? prev.alloc_stack : e.stack,
            .free_stack = twice ? prev.free_stack : 0,
            .alloc_thread = twice ? prev.alloc_thread : mt_entry_thread(&e),
            .free_thread = twice ? prev.free_thread : 0,
            .thread = mt_thread_number(),
            .depth = depth < MT_ERROR_FRAMES ? depth : MT_ERROR_FRAMES,
        };
        snprintf(r.where, sizeof r.where, "%s", b.call);
        snprintf(r.call, sizeof r.call, "%s", b.call);
        snprintf(r.alloc, sizeof r.alloc, "%s", b.alloc ? b.alloc : "");
        for (unsigned i = 0; i < r.depth; i++)
            r.frames[i] = frames[i];
        mt_error_record_keep(&r);
    }
    mt_leave(was);
    if (reported)
        mt_error_reported(); /* may abort: the real free has not run */
    return;
out:
    mt_leave(was);
}
