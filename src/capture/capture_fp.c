/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The frame-pointer unwinder (x86-64 and other ABIs where a frame is
 * [saved frame pointer][return address]). It follows the chain only while
 * each frame lies inside the calling thread's stack mapping, is aligned, and
 * moves towards the stack's base, so a frame without a frame pointer ends
 * the walk early (a short stack) and never makes it read outside the stack,
 * whatever value such code left in the frame-pointer register. The library
 * is built with -fno-omit-frame-pointer so that its own frames chain to the
 * program's. */
#include "capture/capture.h"

#include "base/common.h"
#include "store/stack_bounds.h"

#include <stdbool.h>

MT_NOINLINE unsigned mt_unwind_fp(void **buf, unsigned n, bool *broken)
{
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    if (MT_UNLIKELY(mt_stack_known == 0))
        mt_stack_find(fp);
    if (mt_stack_known < 0)
        return 0;
    uintptr_t limit = mt_stack_base;
    if (fp < mt_stack_low || fp >= limit)
        return 0; /* on a signal stack or a fiber's: libunwind takes it */
    unsigned k = 0;
    /* Invariant: mt_stack_low <= fp < limit, and the walk only moves up, so
     * every word read lies in this thread's stack mapping. Written as a
     * difference: fp + 16 wraps past zero for fp near the top of the
     * address space. */
    while (k < n && (fp & (sizeof(uintptr_t) - 1)) == 0 && limit - fp >= 2 * sizeof(uintptr_t)) {
        const uintptr_t *frame = (const uintptr_t *)fp;
        uintptr_t next = frame[0], ret = frame[1];
        if (ret < 4096)
            break;
        buf[k++] = (void *)ret;
        if (next <= fp || next >= limit || (next & (sizeof(uintptr_t) - 1))) {
            /* 0 ends the chain (the outermost frames clear rbp); anything
             * else is a frame that keeps no frame pointer */
            *broken = next != 0;
            break;
        }
        fp = next;
    }
    return k;
}
