/* The profiler's per-site peak snapshot (src/store/site.c), built with
 * -DMEMTRACE_PROFILER (tests/tests.mk). The interleavings are played out
 * in one thread, by calling the cold save as the racing thread would. */
#include "base/atomic.h"
#include "store/site.h"

#include <criterion/criterion.h>
#include <string.h>

static void add(mt_site_counters *c, uint64_t bytes)
{
    mt_atomic_add_relaxed(&c->alloc_bytes, bytes);
    mt_atomic_add_relaxed(&c->alloc_blocks, 1);
}

/* Thread B read the site's stale tag (its change is the first since the
 * peak), then stalled; thread A saved the site and changed it since. B's
 * save must not replace the snapshot with a value that has A's change. */
Test(site, a_stale_save_keeps_the_first_snapshot)
{
    mt_site_counters c;
    memset(&c, 0, sizeof c);
    add(&c, 100); /* the value at the peak of epoch 5 */
    uint64_t epoch = 5;
    mt_site_save_peak(&c, epoch); /* A: first change since the peak */
    add(&c, 1000);                /* A's change, and more */
    mt_site_save_peak(&c, epoch); /* B: decided on the stale tag */
    cr_assert_eq(mt_atomic_load_relaxed(&c.peak_epoch), epoch);
    cr_assert_eq(mt_atomic_load_relaxed(&c.peak_bytes), 100,
                 "the snapshot at the peak says %lu bytes, not 100",
                 (unsigned long)mt_atomic_load_relaxed(&c.peak_bytes));
    cr_assert_eq(mt_atomic_load_relaxed(&c.peak_blocks), 1);
}

/* A later epoch saves the site again. */
Test(site, a_newer_epoch_saves_again)
{
    mt_site_counters c;
    memset(&c, 0, sizeof c);
    add(&c, 10);
    mt_site_save_peak(&c, 2);
    add(&c, 20);
    mt_site_save_peak(&c, 3);
    cr_assert_eq(mt_atomic_load_relaxed(&c.peak_epoch), 3);
    cr_assert_eq(mt_atomic_load_relaxed(&c.peak_bytes), 30);
}

/* A claim left by a thread that did not survive a fork does not keep the
 * child's later saves off the site; one in progress in this process does. */
Test(site, a_claim_left_by_a_fork_is_claimed_over)
{
    mt_site_counters c;
    memset(&c, 0, sizeof c);
    add(&c, 10);
    uint64_t before = mt_atomic_load_relaxed(&mt_site_peak_epoch);
    mt_atomic_store_relaxed(&c.peak_epoch, before | MT_SITE_PEAK_SAVING);
    mt_site_save_peak(&c, before + 1);
    cr_assert_eq(mt_atomic_load_relaxed(&c.peak_epoch), before | MT_SITE_PEAK_SAVING,
                 "claimed over a save in progress");
    mt_site_restart_peak(0); /* the forked child */
    uint64_t now = mt_atomic_load_relaxed(&mt_site_peak_epoch);
    mt_site_save_peak(&c, now);
    cr_assert_eq(mt_atomic_load_relaxed(&c.peak_epoch), now);
    cr_assert_eq(mt_atomic_load_relaxed(&c.peak_bytes), 10);
}
