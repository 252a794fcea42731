/* Lock tokens (see lock.h): the kernel thread id, cached per thread. A raw
 * system call: no libc lock, no allocation, not a cancellation point. */
#include "lock.h"

#include <sys/syscall.h>
#include <unistd.h>

MT_TLS int mt_lock_self;

int mt_lock_token_slow(void)
{
    int t = (int)syscall(SYS_gettid);
    mt_lock_self = t;
    return t;
}
