/* The profiler build's site totals, the exact peak and the per-site
 * snapshot at the peak (see site.h). Built into libmemtrace-profiler.so
 * only. */
#include "store/site.h"

#include "base/atomic.h"
#include "base/os.h"

mt_atomic(uint64_t) mt_site_live_total;
mt_atomic(uint64_t) mt_site_peak_total;
mt_atomic(uint64_t) mt_site_peak_ns;
mt_atomic(uint64_t) mt_site_peak_epoch = 1;
MT_TLS uint64_t mt_site_last_seq = UINT64_MAX;

/* Hot path, out of line: LIVE passed the peak. The epoch is bumped after
 * the peak is raised, by the thread that raised it, before it changes any
 * site again.
 *
 * Single-threaded, the snapshot is exact: the allocation that raised the
 * peak has already counted in its site, no site changes between that and
 * the bump, and every later change to a site saves the site's value first.
 * With other threads, a change that read the old epoch just before the
 * bump and lands in its site just after it is not saved: that site's
 * snapshot then includes the change. So each site's snapshot is its value
 * at the peak give or take the operations on it that were in flight in
 * other threads at that moment (as the peak total itself is: the live total
 * is counted apart from the sites), and a raise of the peak that races
 * with a greater one may leave its epoch after the greater one's (the
 * snapshot is then of the smaller raise's moment). */
MT_COLD void mt_site_new_peak(uint64_t live)
{
    uint64_t p = mt_atomic_load_relaxed(&mt_site_peak_total);
    while (live > p) {
        if (mt_atomic_cas_weak_relaxed(&mt_site_peak_total, &p, live)) {
            mt_atomic_add_relaxed(&mt_site_peak_epoch, 1);
            mt_atomic_store_relaxed(&mt_site_peak_ns, mt_os_now_ns());
            return;
        }
    }
}

/* The epoch a forked child restarted the peak at (0 in the process the
 * program started as): a claim of an older epoch in a child was left half
 * done by a thread gone with the fork, and would keep every later save off
 * the site. */
static mt_atomic(uint64_t) restart_epoch;

void mt_site_restart_peak(uint64_t now)
{
    mt_atomic_store_relaxed(&mt_site_peak_total, mt_atomic_load_relaxed(&mt_site_live_total));
    uint64_t epoch = mt_atomic_add_relaxed(&mt_site_peak_epoch, 1) + 1;
    mt_atomic_store_relaxed(&restart_epoch, epoch);
    mt_atomic_store_relaxed(&mt_site_peak_ns, now);
}

MT_NOINLINE void mt_site_temporary(mt_stack_id id)
{
    mt_site_counters *c = mt_stack_site(id);
    if (c)
        mt_atomic_add_relaxed(&c->temp_blocks, 1);
    mt_site_last_seq = UINT64_MAX;
}

static uint64_t live_of(uint64_t alloc, uint64_t freed)
{
    return alloc > freed ? alloc - freed : 0;
}

/* Hot path, out of line: the first change to C since the peak of EPOCH.
 * The counts are read first, then the site is claimed for EPOCH
 * (compare-and-swap from the tag this thread found stale), then they are
 * stored before the tag (release): a reader that sees the tag sees them.
 * Only the claim's winner stores: a thread that decided to save on a stale
 * tag but lost the race (or came after the save and the changes that
 * followed it) must not overwrite the snapshot with a later value; every
 * change by another thread comes after its own failed claim or after it
 * saw the claim, so after the winner's read. An older epoch's save in
 * progress (a tag with MT_SITE_PEAK_SAVING below EPOCH) is not claimed
 * over, its stores would land on this one's: this change then counts in
 * the snapshot, as one in flight at the peak does; but one from before a
 * fork, in the child, is (see restart_epoch). */
MT_COLD void mt_site_save_peak(mt_site_counters *c, uint64_t epoch)
{
    uint64_t tag = mt_atomic_load_relaxed(&c->peak_epoch);
    uint64_t of = tag & ~MT_SITE_PEAK_SAVING;
    if (of >= epoch)
        return; /* claimed or saved already */
    if ((tag & MT_SITE_PEAK_SAVING) && of >= mt_atomic_load_relaxed(&restart_epoch))
        return; /* an older save in progress, not an orphan of a fork */
    uint64_t fb = mt_atomic_load_relaxed(&c->freed_bytes);
    uint64_t fn = mt_atomic_load_relaxed(&c->freed_blocks);
    uint64_t ab = mt_atomic_load_relaxed(&c->alloc_bytes);
    uint64_t an = mt_atomic_load_relaxed(&c->alloc_blocks);
    /* acq_rel: the reads above stay before the claim. */
    if (!mt_atomic_cas_acq_rel(&c->peak_epoch, &tag, epoch | MT_SITE_PEAK_SAVING))
        return;
    mt_atomic_store_relaxed(&c->peak_bytes, live_of(ab, fb));
    mt_atomic_store_relaxed(&c->peak_blocks, live_of(an, fn));
    mt_atomic_store_release(&c->peak_epoch, epoch);
}

void mt_site_peak_of(const mt_site_counters *c, uint64_t *bytes, uint64_t *blocks)
{
    uint64_t epoch = mt_atomic_load_relaxed(&mt_site_peak_epoch);
    /* Pairs with the release in mt_site_save_peak. */
    if (mt_atomic_load_acquire(&c->peak_epoch) == epoch) {
        *bytes = mt_atomic_load_relaxed(&c->peak_bytes);
        *blocks = mt_atomic_load_relaxed(&c->peak_blocks);
        return;
    }
    uint64_t fb = mt_atomic_load_relaxed(&c->freed_bytes);
    uint64_t fn = mt_atomic_load_relaxed(&c->freed_blocks);
    *bytes = live_of(mt_atomic_load_relaxed(&c->alloc_bytes), fb);
    *blocks = live_of(mt_atomic_load_relaxed(&c->alloc_blocks), fn);
}

struct peak_walk {
    mt_site_peak_fn *fn;
    void *ctx;
};

static void peak_one(mt_stack_id id, const uintptr_t *frames, unsigned depth, void *ctx)
{
    struct peak_walk *w = ctx;
    const mt_site_counters *c = mt_stack_site(id);
    if (!c)
        return;
    uint64_t bytes, blocks;
    mt_site_peak_of(c, &bytes, &blocks);
    if (bytes)
        w->fn(id, frames, depth, bytes, blocks, w->ctx);
}

void mt_site_peak_foreach(mt_site_peak_fn *fn, void *ctx)
{
    struct peak_walk w = { fn, ctx };
    mt_stack_foreach(peak_one, &w);
}
