/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The drain of the timeline's rings (drain.h): the list of every
 * thread's ring, the lock a drain holds, and the writer thread's doorbell.
 * A drain reads each ring up to its head into the current block (emit.c),
 * through the culling when MEMTRACE_RECORD_CULL_MS asks for it (cull.c),
 * frees the rings of exited threads, and writes the block out when it is
 * large or half a second old. The writer thread drains every 10 ms; an
 * appender whose ring is full rings the doorbell, or drains itself when
 * no writer runs. */
#include "timeline/drain.h"

#include "base/atomic.h"
#include "base/lock.h"
#include "base/os.h"
#include "timeline/emit.h"
#include "timeline/timeline.h"

#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FLUSH_NS 500000000ull /* a block's age at most before it is written */

mt_atomic(int) mt_tl_on;
uint64_t mt_tl_start_ns;

/* Every ring, newest first: listed with a release (mt_tl_rings_add), read
 * with an acquire that pairs with it; unlisted by the drain alone. */
static mt_atomic(mt_tl_ring *) rings;

static struct {
    bool ready; /* the emitter's buffers exist: drains may run */
    uint64_t cull_ns;
    mt_lock lock; /* held by a drain */
    uint64_t last_flush;
    mt_atomic(int) running, wake; /* the writer thread runs; wake it */
} D;

void mt_tl_drain_begin(uint64_t cull_ns)
{
    D.cull_ns = cull_ns;
    D.ready = true;
}

bool mt_tl_drain_ready(void)
{
    return D.ready;
}

void mt_tl_drain_forget(void)
{
    D.ready = false;
    mt_atomic_store_relaxed(&D.running, 0);
}

void mt_tl_rings_add(mt_tl_ring *r)
{
    mt_tl_ring *old = mt_atomic_load_relaxed(&rings);
    do
        r->next = old;
    while (!mt_atomic_cas_weak_release(&rings, &old, r));
}

static long futex(mt_atomic(int) * word, int op, int val, const struct timespec *ts)
{
    return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

bool mt_tl_writer_running(void)
{
    return mt_atomic_load_acquire(&D.running);
}

void mt_tl_writer_set_running(bool running)
{
    mt_atomic_store_release(&D.running, running ? 1 : 0);
}

void mt_tl_wake_writer(void)
{
    if (mt_atomic_exchange_relaxed(&D.wake, 1) == 0)
        futex(&D.wake, FUTEX_WAKE_PRIVATE, 1, NULL);
}

void mt_tl_writer_sleep(uint64_t ns)
{
    struct timespec ts = { 0, (long)ns };
    if (!mt_atomic_exchange_relaxed(&D.wake, 0))
        futex(&D.wake, FUTEX_WAIT_PRIVATE, 0, &ts);
    mt_atomic_store_relaxed(&D.wake, 0);
}

/* Stops the timeline after a failed write (emit.c said why): the rings
 * are drained into nothing. */
static void stop_timeline(void)
{
    mt_atomic_store_relaxed(&mt_tl_on, 0);
}

static void drain_ring(mt_tl_ring *r)
{
    uint64_t h = mt_atomic_load_acquire(&r->head); /* pairs with the owner's release */
    uint64_t t = mt_atomic_load_relaxed(&r->tail);
    bool keep = !mt_tl_emit_failed();
    while (t < h) {
        uint64_t w0 = r->words[t & (MT_TL_RING_WORDS - 1)];
        uint64_t time = w0 & MT_TL_TIME_MASK;
        uint64_t addr = r->words[(t + 1) & (MT_TL_RING_WORDS - 1)];
        if ((w0 >> MT_TL_TAG_SHIFT) == 'A') {
            uint64_t size = r->words[(t + 2) & (MT_TL_RING_WORDS - 1)];
            uint32_t stack = (uint32_t)r->words[(t + 3) & (MT_TL_RING_WORDS - 1)];
            t += MT_TL_ALLOC_WORDS;
            if (!keep)
                continue;
            if (D.cull_ns) {
                mt_temp_alloc(&r->temp, stack, size);
                r->temp_hidden = true; /* it may be culled */
                mt_tl_cull_alloc(r->thread, time, addr, size, stack);
            } else {
                mt_tl_emit_alloc(r->thread, time, addr, size, stack);
            }
        } else {
            t += MT_TL_FREE_WORDS;
            if (!keep)
                continue;
            if (!D.cull_ns) {
                mt_tl_emit_free(r->thread, time, addr);
            } else if (mt_tl_cull_free(time, addr, &r->temp)) {
                r->temp_hidden = true;
            } else {
                /* the reader's latest kind for the thread is then the
                 * rule's, whatever was culled before */
                mt_tl_emit_free_after(r->thread, time, addr, r->temp_hidden ? &r->temp : NULL);
                r->temp.armed = false;
                r->temp_hidden = false;
            }
        }
    }
    mt_atomic_store_release(&r->tail, t); /* pairs with the owner's acquire */
}

/* Unlists and unmaps the rings whose owner has exited and that are
 * drained (under the lock: the only one that unlists). */
static void reclaim(void)
{
    mt_tl_ring *prev = NULL;
    for (mt_tl_ring *r = mt_atomic_load_acquire(&rings), *next; r; r = next) {
        next = r->next;
        if (!mt_atomic_load_acquire(&r->done) ||
            mt_atomic_load_acquire(&r->head) != mt_atomic_load_relaxed(&r->tail)) {
            prev = r;
            continue;
        }
        if (prev) {
            prev->next = next;
        } else {
            mt_tl_ring *expected = r; /* the head: a new ring may be listed meanwhile */
            if (!mt_atomic_cas_acq_rel(&rings, &expected, next)) {
                prev = r; /* freed at a later drain, once not the head */
                continue;
            }
        }
        munmap(r, sizeof *r);
    }
}

static void drain_locked(bool final)
{
    uint64_t now = mt_os_now_ns() - mt_tl_start_ns;
    for (mt_tl_ring *r = mt_atomic_load_acquire(&rings); r; r = r->next)
        drain_ring(r);
    reclaim();
    if (D.cull_ns)
        mt_tl_cull_expire(final ? UINT64_MAX : now);
    bool old = now - D.last_flush >= FLUSH_NS;
    if (old)
        D.last_flush = now;
    if (!mt_tl_emit_flush(old || final))
        stop_timeline();
}

bool mt_tl_drain(bool wait)
{
    if (!D.ready)
        return false;
    if (wait)
        mt_lock_acquire(&D.lock);
    else if (!mt_lock_try(&D.lock))
        return false;
    drain_locked(false);
    mt_lock_release(&D.lock);
    return true;
}

void mt_tl_drain_lock(void)
{
    mt_lock_acquire(&D.lock);
}

void mt_tl_drain_unlock(void)
{
    mt_lock_release(&D.lock);
}

void mt_tl_drain_final(void)
{
    drain_locked(true);
}
