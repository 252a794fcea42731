/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The hot path's part of the timeline (timeline.h, ring.h): the calling
 * thread's ring and the append. An append takes the time (the vDSO),
 * writes two or four words into the thread's own ring and publishes them
 * with one release store; it reads the drain's TAIL only when its copy
 * says the ring may be full. A full ring wakes the writer and waits for
 * room; with no writer (before the constructor, or once the timeline has
 * ended) the appender drains the rings itself, or drops the record once
 * the timeline is over. */

#include "base/os.h"
#include "base/output.h"
#include "base/reentry.h"
#include "store/threads.h"
#include "timeline/drain.h"
#include "timeline/ring.h"
#include "timeline/timeline.h"

#include <pthread.h>
#include <sys/mman.h>
#include <time.h>

static MT_TLS mt_tl_ring *mine;
static pthread_key_t exit_key;
static bool exit_key_made;

/* A thread exits: its ring is the drain's to free once drained. A record
 * the thread makes later (a later destructor's free) goes to a new ring,
 * which this destructor, run again (glibc's rounds), marks in turn. */
static void thread_exits(void *ring)
{
    mt_tl_ring *r = ring;
    if (r == mine)
        mine = NULL;
    mt_atomic_store_release(&r->done, 1); /* pairs with the reclaim's acquire */
}

void mt_tl_append_init(void)
{
    exit_key_made = pthread_key_create(&exit_key, thread_exits) == 0;
}

/* The calling thread's ring, made on its first record (NULL when no memory:
 * its records are then dropped, said once). */
static MT_COLD MT_NOINLINE mt_tl_ring *ring_new(void)
{
    static mt_atomic(int) said;
    void *m = mmap(NULL, sizeof(mt_tl_ring), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        if (!mt_atomic_exchange_relaxed(&said, 1))
            mt_warn("MEMTRACE_RECORD: no memory for a thread's buffer; its events are not "
                    "recorded");
        return NULL;
    }
    mt_tl_ring *r = m;
    r->thread = mt_thread_number();
    mt_tl_rings_add(r);
    mine = r;
    /* The main thread's value is never destroyed (it exits the process):
     * its ring stays. pthread_setspecific of a low key allocates nothing. */
    if (exit_key_made)
        pthread_setspecific(exit_key, r);
    return r;
}

/* Waits until R has room for words up to END; false when the timeline
 * is over (the record is dropped). */
static MT_COLD MT_NOINLINE bool wait_room(mt_tl_ring *r, uint64_t end)
{
    for (;;) {
        if (!mt_atomic_load_relaxed(&mt_tl_on))
            return false;
        if (mt_tl_writer_running()) {
            mt_tl_wake_writer();
            struct timespec ts = { 0, 200000 };
            nanosleep(&ts, NULL);
        } else {
            int was = mt_enter(); /* zstd allocates: from the internal heap */
            bool drained = mt_tl_drain(false);
            mt_leave(was);
            if (!drained) {
                struct timespec ts = { 0, 200000 };
                nanosleep(&ts, NULL);
            }
        }
        r->tail_seen = mt_atomic_load_acquire(&r->tail);
        if (end - r->tail_seen <= MT_TL_RING_WORDS)
            return true;
    }
}

/* Room for N more words in the calling thread's ring: the index of the
 * first, or -1 when the record is dropped (no ring, timeline over). */
static inline __attribute__((always_inline)) int64_t room(mt_tl_ring **rp, uint64_t *hp, unsigned n)
{
    mt_tl_ring *r = mine;
    if (MT_UNLIKELY(!r) && !(r = ring_new()))
        return -1;
    uint64_t h = mt_atomic_load_relaxed(&r->head);
    if (MT_UNLIKELY(h + n - r->tail_seen > MT_TL_RING_WORDS)) {
        /* pairs with the drain's release of tail: its reads are done */
        r->tail_seen = mt_atomic_load_acquire(&r->tail);
        if (h + n - r->tail_seen > MT_TL_RING_WORDS && !wait_room(r, h + n))
            return -1;
    }
    *rp = r;
    *hp = h;
    return (int64_t)(h & (MT_TL_RING_WORDS - 1));
}

/* Words W[0..N) at R's head H (ring index AT), then published. Only a
 * record that starts in the ring's last words wraps: it alone takes the
 * loop that masks each index. */
static inline __attribute__((always_inline)) void put(mt_tl_ring *r, uint64_t h, int64_t at,
                                                      const uint64_t *w, unsigned n)
{
    if (MT_LIKELY((uint64_t)at + n <= MT_TL_RING_WORDS)) {
        for (unsigned i = 0; i < n; i++)
            r->words[at + i] = w[i];
    } else {
        for (unsigned i = 0; i < n; i++)
            r->words[(h + i) & (MT_TL_RING_WORDS - 1)] = w[i];
    }
    mt_atomic_store_release(&r->head, h + n); /* pairs with the drain's acquire */
}

static inline uint64_t now_word(unsigned tag)
{
    return ((mt_os_now_ns() - mt_tl_start_ns) & MT_TL_TIME_MASK) | (uint64_t)tag << MT_TL_TAG_SHIFT;
}

void mt_tl_put_alloc(uintptr_t p, size_t size, mt_stack_id stack)
{
    uint64_t t = now_word('A'); /* before a wait for room */
    mt_tl_ring *r;
    uint64_t h;
    int64_t at = room(&r, &h, MT_TL_ALLOC_WORDS);
    if (at < 0)
        return;
    const uint64_t w[MT_TL_ALLOC_WORDS] = { t, p, size, stack };
    put(r, h, at, w, MT_TL_ALLOC_WORDS);
}

void mt_tl_put_free(uintptr_t p)
{
    uint64_t t = now_word('F');
    mt_tl_ring *r;
    uint64_t h;
    int64_t at = room(&r, &h, MT_TL_FREE_WORDS);
    if (at < 0)
        return;
    const uint64_t w[MT_TL_FREE_WORDS] = { t, p };
    put(r, h, at, w, MT_TL_FREE_WORDS);
}
