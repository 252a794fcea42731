/* A one-word spin lock for short critical sections (a few hundred cycles at
 * most: a table probe, an insert, a rehash). Waiters yield the CPU after a
 * short spin so a preempted holder can finish. Usable before libc's
 * pthread is initialised and from fork handlers. */
#ifndef MT_LOCK_H
#define MT_LOCK_H

#include <sched.h>
#include <stdbool.h>

typedef struct { int held; } mt_lock;

static inline void mt_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

#define MT_LOCK_INIT { 0 }

static inline bool mt_lock_try(mt_lock *l)
{
    return __atomic_load_n(&l->held, __ATOMIC_RELAXED) == 0 &&
           __atomic_exchange_n(&l->held, 1, __ATOMIC_ACQUIRE) == 0;
}

static inline void mt_lock_acquire(mt_lock *l)
{
    if (__builtin_expect(mt_lock_try(l), 1))
        return;
    for (unsigned spins = 0;; spins++) {
        if (mt_lock_try(l))
            return;
        if (spins < 64)
            mt_cpu_relax();
        else
            sched_yield();
    }
}

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

static inline void mt_lock_release(mt_lock *l)
{
    __atomic_store_n(&l->held, 0, __ATOMIC_RELEASE);
}

#endif
