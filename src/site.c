/* The profiler build's site totals and the exact peak (see site.h). Built
 * into libmemtrace-profiler.so only. */
#include "site.h"

#include "atomic.h"
#include "os.h"

mt_atomic(uint64_t) mt_site_live_total;
mt_atomic(uint64_t) mt_site_peak_total;
mt_atomic(uint64_t) mt_site_peak_ns;

/* Written once by mt_site_set_peak_hook before the profiler's start-up
 * returns, read by any allocating thread afterwards (relaxed: a thread that
 * still sees NULL only skips one sample). */
static mt_atomic(void (*)(uint64_t)) peak_hook;

void mt_site_set_peak_hook(void (*hook)(uint64_t now))
{
    mt_atomic_store_relaxed(&peak_hook, hook);
}

/* Hot path, out of line: LIVE passed the peak. */
MT_COLD void mt_site_new_peak(uint64_t live)
{
    uint64_t p = mt_atomic_load_relaxed(&mt_site_peak_total);
    while (live > p) {
        if (mt_atomic_cas_weak_relaxed(&mt_site_peak_total, &p, live)) {
            uint64_t now = mt_os_now_ns();
            mt_atomic_store_relaxed(&mt_site_peak_ns, now);
            void (*hook)(uint64_t) = mt_atomic_load_relaxed(&peak_hook);
            if (hook)
                hook(now);
            return;
        }
    }
}
