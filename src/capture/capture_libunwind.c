/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The libunwind unwinder: unw_backtrace, which follows DWARF call-frame
 * information and caches what it learned per address. */
#define UNW_LOCAL_ONLY
#include "capture/capture.h"

#include "base/lazy_libs.h"

#include <libunwind.h>

/* unw_local_addr_space, a variable of libunwind's: read through dlsym,
 * libunwind being loaded on first need (lazy_libs.h). */
#define LOCAL_ADDR_SPACE "_ULx86_64_local_addr_space"

static void set_caching(void)
{
    unw_addr_space_t *as = mt_lazy_data(MT_LIB_UNWIND, LOCAL_ADDR_SPACE);
    /* For unw_step, which unw_backtrace falls back to on frames its fast
     * path cannot trace: a per-thread cache takes no lock. (The fast path
     * keeps its own cache; on the churn bench the policy measured no
     * difference either way.) */
    if (as)
        unw_set_caching_policy(*as, UNW_CACHE_PER_THREAD);
}

void mt_unwind_libunwind_init(void)
{
    /* Before any unw_ call: on load, which the first of them causes. */
    mt_lazy_on_load(MT_LIB_UNWIND, set_caching);
}

unsigned mt_unwind_libunwind(void **buf, unsigned n)
{
    int got = unw_backtrace(buf, (int)n);
    return got > 0 ? (unsigned)got : 0;
}
