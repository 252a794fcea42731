/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The libunwind unwinder: unw_backtrace, which follows DWARF call-frame
 * information and caches what it learned per address. */
#define UNW_LOCAL_ONLY
#include "capture/capture.h"

#include <libunwind.h>

void mt_unwind_libunwind_init(void)
{
    /* For unw_step, which unw_backtrace falls back to on frames its fast
     * path cannot trace: a per-thread cache takes no lock. (The fast path
     * keeps its own cache; on the churn bench the policy measured no
     * difference either way.) */
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
}

unsigned mt_unwind_libunwind(void **buf, unsigned n)
{
    int got = unw_backtrace(buf, (int)n);
    return got > 0 ? (unsigned)got : 0;
}
