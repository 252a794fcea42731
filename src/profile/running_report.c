/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The running reports, "memtrace: report N", made while the program runs
 * (every MEMTRACE_INTERVAL_MS, on memtrace_report, on MEMTRACE_SIGNAL): the
 * top MEMTRACE_TOP sites by MEMTRACE_TOP_BY since the last report, largest
 * last; and the ranking's entries, which the exit report shares. */
#include "profile/prof_internal.h"
#include "profile/profiler.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/config.h"
#include "base/os.h"
#include "base/reentry.h"
#include "report/describe.h"
#include "tags/tags_out.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

/* The leak check's line (at exit only), the stack, then the counts: with
 * SINCE_START the allocated/freed/temporary counts are since start, else
 * since the last report. */
void mt_prof_print_entry(mt_out *o, size_t rank, struct mt_prof_site *s, bool since_start)
{
    static char raw[MT_MAX_DEPTH * 32];
    mt_fmt_prof_site row;
    mt_prof_row(s, since_start, &row);
    uint64_t cls[4];
    bool leak = mt_prof_exiting && mt_prof_leak_classes(s->id, cls);
    mt_fmt_prof_site_head(o, rank, &row, since_start, leak ? cls : NULL);
    char *made;
    mt_fmt_text(o, mt_prof_site_text(s, &made, raw, sizeof raw));
    free(made);
    mt_fmt_prof_site_tail(o, &row, mt_prof_set.top_by == MT_TOP_BY_PEAK);
}

static uint64_t events_at_last_report;

/* Under the lock. A periodic report in an interval where no block was
 * allocated or freed prints nothing. */
static void report_locked(int why)
{
    if (mt_prof_exiting)
        return;
    uint64_t total = mt_atomic_load_relaxed(&mt_site_live_total);
    uint64_t peak = mt_atomic_load_relaxed(&mt_site_peak_total);
    struct mt_prof_walk w;
    mt_prof_walk_sites(&w);
    if (why == MT_PROF_PERIODIC && w.events == events_at_last_report)
        return;
    size_t n;
    struct mt_prof_site **top =
        mt_prof_largest(mt_prof_set.top_by, (size_t)mt_prof_set.top, false, &n);
    mt_out o;
    bool own;
    mt_profiler_output_open(&o, &own);
    mt_fmt_prof_running head = { .number = ++mt_prof_report_number,
                                 .why = why,
                                 .pid = (int)getpid(),
                                 .ms = mt_prof_ms(mt_os_now_ns()),
                                 .live = total,
                                 .peak = peak,
                                 .sites = w.nlive,
                                 .shown = n,
                                 .top_by = mt_prof_set.top_by };
    if (mt_sample_rate) /* the totals exact, not the records' estimates */
        mt_live_read(&head.live, &head.peak);
    mt_fmt_prof_running_begin(&o, &head);
    mt_describe_recording(&o);
    for (size_t i = n; i-- > 0;)
        mt_prof_print_entry(&o, i + 1, top[i], false);
    if (mt_pprof_out_every_report())
        mt_prof_write_pprof(MT_PPROF_AT_REPORT, &o);
    if (why != MT_PROF_PERIODIC && mt_tags_out_enabled())
        mt_tags_out_write(mt_prof_report_number);
    mt_fmt_prof_running_end(&o, mt_prof_report_number);
    mt_profiler_output_close(&o, own);
    for (size_t i = 0; i < mt_prof_nsites; i++)
        mt_prof_sites[i].last = mt_prof_sites[i].now;
    events_at_last_report = w.events;
}

/* Cancellation stays disabled from before the lock is taken until after
 * it is released (and the symbolizer's lock with it): open and write are
 * cancellation points, and a thread cancelled inside a report would leave
 * the locks held for good. A cancel that arrives meanwhile stays pending and
 * acts at the thread's next cancellation point in the program. */
void mt_prof_running_report(int why)
{
    int cancel;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    int was = mt_enter();
    mt_prof_lock();
    report_locked(why);
    mt_prof_unlock();
    mt_leave(was);
    pthread_setcancelstate(cancel, NULL);
}
