/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The profiler's exit report, once per process: the peak, the sites still
 * holding memory (with the leak check's verdict when it ran), the top at
 * the peak, and the folded files and pprof profiles of the end and of the
 * peak. After it nothing more is reported (mt_prof_exiting). */
#include "profile/prof_internal.h"
#include "profile/profiler.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/config.h"
#include "base/os.h"
#include "base/reentry.h"
#include "report/describe.h"

#include <pthread.h>
#include <stdio.h> /* snprintf only: no stdio streams */
#include <stdlib.h>
#include <unistd.h>

/* ------------------------------------------------------------ top at the peak */

/* Whether the top at the peak would repeat the ranking: it is by the peak
 * already, or by live bytes with every site's bytes and blocks of the peak
 * still live at exit. */
static bool peak_is_ranking(uint64_t peak)
{
    int by = mt_prof_set.top_by;
    if (by == MT_TOP_BY_PEAK || peak == 0)
        return true;
    bool same = by == MT_TOP_BY_LIVE;
    for (size_t i = 0; same && i < mt_prof_nsites; i++) {
        const mt_site_counters *c = &mt_prof_sites[i].now;
        same = c->peak_bytes == mt_prof_live_bytes(c) && c->peak_blocks == mt_prof_live_blocks(c);
    }
    return same;
}

/* The exit report's "top at the peak" (heaptrack's PEAK MEMORY CONSUMERS):
 * the MEMTRACE_TOP sites with the most bytes live at the peak (site.c's
 * snapshot, as in the .peak folded file), largest last as in the ranking,
 * each with its stack, indented; the others summed up in one line. Left
 * out when it would repeat the ranking (then the report is as it always
 * was). Under the lock, after a walk. */
static void print_top_at_peak(mt_out *o, uint64_t peak, uint64_t at)
{
    if (peak_is_ranking(peak))
        return;
    size_t n, held = 0;
    struct mt_prof_site **top = mt_prof_largest(MT_TOP_BY_PEAK, (size_t)mt_prof_set.top, true, &n);
    mt_fmt_prof_site rest = { 0 };
    for (size_t i = 0; i < mt_prof_nsites; i++) {
        held += mt_prof_sites[i].now.peak_bytes > 0;
        rest.peak_bytes += mt_prof_sites[i].now.peak_bytes;
        rest.peak_blocks += mt_prof_sites[i].now.peak_blocks;
    }
    for (size_t i = 0; i < n; i++) {
        rest.peak_bytes -= top[i]->now.peak_bytes;
        rest.peak_blocks -= top[i]->now.peak_blocks;
    }
    mt_fmt_prof_peak_begin(o, n, peak, mt_prof_ms(at));
    if (held > n)
        mt_fmt_prof_peak_more(o, held - n, &rest, mt_prof_set.top, top != NULL);
    static char raw[MT_MAX_DEPTH * 32];
    for (size_t i = n; i-- > 0;) {
        struct mt_prof_site *s = top[i];
        mt_fmt_prof_site row;
        mt_prof_row(s, true, &row);
        mt_fmt_prof_peak_site(o, i + 1, &row);
        char *made;
        mt_fmt_text_indented(o, mt_prof_site_text(s, &made, raw, sizeof raw));
        free(made);
    }
    mt_fmt_prof_peak_end(o);
}

/* ------------------------------------------------------------ the files */

/* MEMTRACE_FOLDED's two files, at exit and at the peak (AT), and their
 * line in the report. */
static void write_folded_files(mt_out *o, uint64_t at)
{
    /* Room for ".peak" after the path. */
    char path[MT_PROF_PATH_BYTES - 5], peak_path[MT_PROF_PATH_BYTES];
    if (!mt_prof_expand(mt_prof_set.folded, path, sizeof path)) {
        mt_fmt_prof_folded_too_long(o, sizeof path - 1, MT_PROF_PATH_BYTES - 1);
        return;
    }
    snprintf(peak_path, sizeof peak_path, "%s.peak", path);
    /* Each file named as written only if it was. */
    mt_fmt_prof_folded_exit(o, path, mt_prof_write_folded(path, NULL));
    uint64_t peak_sum = 0;
    const char *failed = mt_prof_write_folded(peak_path, &peak_sum);
    mt_fmt_prof_folded_peak(o, peak_path, failed, peak_sum, mt_prof_ms(at));
}

/* ------------------------------------------------------------ the ranking */

/* The sites the ranking holds (their key is not 0) and their sum past the
 * SHOWN first of RANKED (in *REST); returns how many there are. */
static size_t ranked_rest(struct mt_prof_site **ranked, size_t shown, mt_fmt_prof_site *rest)
{
    size_t count = 0;
    *rest = (mt_fmt_prof_site){ 0 };
    for (size_t i = 0; i < mt_prof_nsites; i++) {
        const mt_site_counters *c = &mt_prof_sites[i].now;
        if (mt_prof_rank_key(mt_prof_set.top_by, &mt_prof_sites[i], true) == 0)
            continue;
        count++;
        rest->peak_bytes += c->peak_bytes;
        rest->peak_blocks += c->peak_blocks;
        rest->live_bytes += mt_prof_live_bytes(c);
        rest->live_blocks += mt_prof_live_blocks(c);
        rest->alloc_blocks += c->alloc_blocks;
        rest->temp_blocks += c->temp_blocks;
    }
    for (size_t i = 0; i < shown; i++) {
        const mt_site_counters *c = &ranked[i]->now;
        rest->peak_bytes -= c->peak_bytes;
        rest->peak_blocks -= c->peak_blocks;
        rest->live_bytes -= mt_prof_live_bytes(c);
        rest->live_blocks -= mt_prof_live_blocks(c);
        rest->alloc_blocks -= c->alloc_blocks;
        rest->temp_blocks -= c->temp_blocks;
    }
    return count;
}

/* The report itself, under the lock. The MEMTRACE_EXIT_TOP first sites by
 * MEMTRACE_TOP_BY are listed, the rest summed up in one line: a million
 * symbolized stacks would be gigabytes of text. */
static void exit_report_locked(pid_t pid)
{
    struct mt_prof_walk w;
    mt_prof_walk_sites(&w);
    mt_prof_exiting = 1;
    size_t n;
    struct mt_prof_site **ranked =
        mt_prof_largest(mt_prof_set.top_by, (size_t)mt_prof_set.exit_top, true, &n);
    size_t shown = n < (size_t)mt_prof_set.exit_top ? n : (size_t)mt_prof_set.exit_top;
    mt_fmt_prof_site rest;
    size_t count = ranked_rest(ranked, shown, &rest);
    uint64_t peak = mt_atomic_load_relaxed(&mt_site_peak_total);
    uint64_t at = mt_atomic_load_relaxed(&mt_site_peak_ns);
    mt_out o;
    bool own;
    mt_profiler_output_open(&o, &own);
    mt_fmt_prof_exit head = { .pid = (int)pid,
                              .parent = (int)mt_prof_parent,
                              .ms = mt_prof_ms(mt_os_now_ns()),
                              .peak = peak,
                              .peak_ms = mt_prof_ms(at),
                              .live = mt_atomic_load_relaxed(&mt_site_live_total),
                              .live_blocks = w.sum_blocks,
                              .sites = w.nlive,
                              .top_by = mt_prof_set.top_by };
    if (mt_sample_rate) /* the totals exact, not the records' estimates; the time the latter's */
        mt_live_read(&head.live, &head.peak);
    mt_fmt_prof_exit_begin(&o, &head);
    mt_describe_recording(&o);
    if (count > shown)
        mt_fmt_prof_exit_more(&o, mt_prof_set.top_by, count - shown, &rest, mt_prof_set.exit_top,
                              ranked != NULL);
    for (size_t i = shown; i-- > 0;)
        mt_prof_print_entry(&o, i + 1, ranked[i], true);
    print_top_at_peak(&o, peak, at);
    if (mt_prof_set.folded)
        write_folded_files(&o, at);
    if (mt_pprof_out_enabled()) {
        mt_prof_write_pprof(MT_PPROF_AT_EXIT, &o);
        mt_prof_write_pprof(MT_PPROF_AT_PEAK, &o);
    }
    mt_fmt_prof_exit_end(&o);
    mt_profiler_output_close(&o, own);
}

static mt_atomic(pid_t) exit_reported_by;

void mt_prof_exit_report(void *unused)
{
    (void)unused;
    pid_t pid = getpid();
    if (mt_atomic_exchange_acq_rel(&exit_reported_by, pid) == pid)
        return;
    int cancel; /* as in mt_prof_running_report */
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    int was = mt_enter();
    mt_prof_lock();
    exit_report_locked(pid);
    mt_prof_unlock();
    mt_leave(was);
    pthread_setcancelstate(cancel, NULL);
}
