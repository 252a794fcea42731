/* The frame-pointer unwinder (x86-64 and other ABIs where a frame is
 * [saved frame pointer][return address]). It follows the chain only while
 * each frame lies inside the calling thread's stack, is aligned, and moves
 * towards the stack's base, so a frame without a frame pointer ends the walk
 * early (a short stack) and never makes it read outside the stack. The
 * library is built with -fno-omit-frame-pointer so that its own frames
 * chain to the program's. */
#include "capture.h"

#include "common.h"

#include <pthread.h>

static MT_TLS uintptr_t stack_low;  /* lowest address of this thread's stack */
static MT_TLS uintptr_t stack_base; /* highest address of this thread's stack */
static MT_TLS int stack_known;      /* 1 known, -1 could not be found */

static void find_stack(void)
{
    pthread_attr_t attr;
    void *addr;
    size_t size;
    stack_known = -1;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
        stack_low = (uintptr_t)addr;
        stack_base = (uintptr_t)addr + size;
        stack_known = 1;
    }
    pthread_attr_destroy(&attr);
}

MT_NOINLINE unsigned mt_unwind_fp(void **buf, unsigned n)
{
    if (MT_UNLIKELY(stack_known == 0))
        find_stack(); /* allocates: the caller is inside memtrace */
    if (stack_known < 0)
        return 0;
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    uintptr_t limit = stack_base;
    if (fp < stack_low || fp >= limit)
        return 0; /* on a signal stack or a fiber's: libunwind takes it */
    unsigned k = 0;
    while (k < n && (fp & (sizeof(uintptr_t) - 1)) == 0 && fp + 2 * sizeof(uintptr_t) <= limit) {
        const uintptr_t *frame = (const uintptr_t *)fp;
        uintptr_t next = frame[0], ret = frame[1];
        if (ret < 4096)
            break;
        buf[k++] = (void *)ret;
        if (next <= fp)
            break;
        fp = next;
    }
    return k;
}
