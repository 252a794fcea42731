/* SPDX-License-Identifier: LGPL-2.1-or-later */
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

/* ------------------------------------------------------------ the ranking
 * src/profile/sites.c, linked in: a report's top N (a bounded heap) are the
 * N first of the whole ranking, in its order, ties by store order. */
#include "base/config.h"
#include "profile/prof_internal.h"

Test(site, the_top_n_are_the_ranking_s_first)
{
    enum { STACKS = 3000, TOP = 10 };
    for (uintptr_t i = 0; i < STACKS; i++) {
        uintptr_t f[2] = { 0x5000, i };
        mt_stack_id id = mt_stack_intern(f, 2);
        /* Many equal keys: their order is the order stored. */
        mt_site_alloc(id, (size_t)((i * 7919) % 61) * 8);
    }
    mt_prof_reserve_sites();
    struct mt_prof_walk w;
    mt_prof_walk_sites(&w);
    cr_assert_eq(mt_prof_nsites, STACKS);
    for (size_t top = 1; top <= 300; top += top < TOP ? 1 : 37) {
        size_t n, all;
        struct mt_prof_site *got[300];
        struct mt_prof_site **v = mt_prof_largest(MT_TOP_BY_LIVE, top, true, &n);
        cr_assert_eq(n, top);
        memcpy(got, v, n * sizeof *v);
        v = mt_prof_largest(MT_TOP_BY_LIVE, SIZE_MAX, true, &all);
        cr_assert_gt(all, top);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(got[i], v[i], "top %zu: entry %zu is not the ranking's", top, i);
    }
}
