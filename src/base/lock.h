/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A one-word spin lock for short critical sections (a few hundred cycles at
 * most: a table probe, an insert, a rehash). Waiters yield the CPU after a
 * short spin so a preempted holder can finish. Usable before libc's
 * pthread is initialised and from fork handlers.
 *
 * The word of a held lock is its holder's token (nonzero, distinct for every
 * thread of the process), so that a fork handler run from a signal handler
 * can tell the locks that the code it interrupted, in its own thread, holds
 * (mt_lock_acquire_unless_mine). Readers that only ask "held?" (the gdb
 * helper) test for nonzero. */
#ifndef MT_LOCK_H
#define MT_LOCK_H

#include "base/atomic.h"
#include "base/common.h"

#include <sched.h>
#include <stdbool.h>

/* held: 0, or the holder's token. Taken with an acquire exchange, given
 * back with a release store: what the holder wrote is seen by the next. */
typedef struct {
    mt_atomic(int) held;
} mt_lock;

/* This thread's token: its kernel thread id, read once per thread. A forked
 * child's thread keeps its parent's until mt_lock_forget_token. */
extern MT_TLS int mt_lock_self;
int mt_lock_token_slow(void);

static inline int mt_lock_token(void)
{
    int t = mt_lock_self;
    return MT_LIKELY(t != 0) ? t : mt_lock_token_slow();
}

/* In a fork child that took every lock in its prepare handler: the token is
 * read again (the kernel id changed). */
static inline void mt_lock_forget_token(void)
{
    mt_lock_self = 0;
}

/* Contention met on the hot path, over the process: lock acquisitions
 * that found the lock held (mt_lock_acquire's wait) and compare-and-swaps
 * of the hot path's lock-free stores that failed on another thread's
 * claim (not those that only guessed a slot's old value wrong, where no
 * other thread was: freed_history.c says which). Counted only when
 * they happen, so the count's line is written only by a thread that has
 * just met another on a line anyway; memtrace_get_stats reports it (the
 * bench's contention line). */
extern mt_atomic(uint64_t) mt_contended MT_HIDDEN;

static inline void mt_contended_note(void)
{
    mt_atomic_add_relaxed(&mt_contended, 1);
}

static inline void mt_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

#define MT_LOCK_INIT \
    {                \
        0            \
    }

static inline bool mt_lock_try(mt_lock *l)
{
    /* A compare-and-swap, not an exchange: a failed exchange would write
     * this thread's token over the holder's, and the word would no longer
     * name its holder (mt_lock_acquire_unless_mine relies on it). */
    int expected = 0;
    return mt_atomic_load_relaxed(&l->held) == 0 &&
           mt_atomic_cas_acquire(&l->held, &expected, mt_lock_token());
}

static inline void mt_lock_acquire(mt_lock *l)
{
    if (__builtin_expect(mt_lock_try(l), 1))
        return;
    mt_contended_note();
    for (unsigned spins = 0;; spins++) {
        if (mt_lock_try(l))
            return;
        if (spins < 64)
            mt_cpu_relax();
        else
            sched_yield();
    }
}

/* mt_lock_acquire, giving up after about MAX_NS of waiting (spinning, then
 * yielding): for callers that must not wait without bound on a holder that
 * may never run again (a thread stopped by a debugger). False: not taken. */
bool mt_lock_acquire_within(mt_lock *l, unsigned long long max_ns);

/* Tries for about SPINS rounds without yielding; for callers that must not
 * wait on a holder that may never run again (a thread stopped by gdb). */
static inline bool mt_lock_try_for(mt_lock *l, unsigned spins)
{
    for (unsigned i = 0; i < spins; i++) {
        if (mt_lock_try(l))
            return true;
        mt_cpu_relax();
    }
    return false;
}

/* For fork prepare handlers: takes L unless this thread holds it already
 * (the handler runs inside a signal handler that interrupted a critical
 * section of this thread; that section ends, releasing L, when the signal
 * handler returns, in the parent and in the child alike). Returns whether
 * it took L. Only this thread writes its own token, so reading it back
 * means this thread holds L. */
static inline bool mt_lock_acquire_unless_mine(mt_lock *l)
{
    if (mt_atomic_load_relaxed(&l->held) == mt_lock_token())
        return false;
    mt_lock_acquire(l);
    return true;
}

/* Whether this thread holds L (for MT_ASSERT): the word names its holder. */
static inline bool mt_lock_is_mine(const mt_lock *l)
{
    return mt_atomic_load_relaxed(&l->held) == mt_lock_token();
}

/* In a fork child, for a lock this thread's prepare handler took: the
 * child's token may differ from the one in the word (startup.c's child
 * handler drops the parent's), so the holder is not checked. */
static inline void mt_lock_release_in_child(mt_lock *l)
{
    mt_atomic_store_release(&l->held, 0);
}

/* In a fork child, for a lock held by the code this thread's fork handler
 * interrupted (which will release it): the word gets the child's token. */
static inline void mt_lock_adopt_in_child(mt_lock *l)
{
    mt_atomic_store_relaxed(&l->held, mt_lock_token());
}

static inline void mt_lock_release(mt_lock *l)
{
    MT_ASSERT(mt_lock_is_mine(l));
    mt_atomic_store_release(&l->held, 0);
}

#endif
