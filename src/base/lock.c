/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Lock tokens (see lock.h): the kernel thread id, cached per thread. A raw
 * system call: no libc lock, no allocation, not a cancellation point. */
#include "base/lock.h"

#include "base/os.h"

#include <sys/syscall.h>
#include <unistd.h>

MT_TLS int mt_lock_self;
mt_atomic(uint64_t) mt_contended;

int mt_lock_token_slow(void)
{
    int t = (int)syscall(SYS_gettid);
    mt_lock_self = t;
    return t;
}

bool mt_lock_acquire_within(mt_lock *l, unsigned long long max_ns)
{
    if (MT_LIKELY(mt_lock_try(l)))
        return true;
    unsigned long long start = 0;
    for (unsigned spins = 0;; spins++) {
        if (mt_lock_try(l))
            return true;
        if (spins < 64) {
            mt_cpu_relax();
            continue;
        }
        unsigned long long t = mt_os_now_ns();
        if (!start)
            start = t;
        else if (t - start > max_ns)
            return false;
        sched_yield();
    }
}
