/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The formatter's profiler rows (see format_profile.h). Each line is written
 * in the same pieces as it always was (one mt_out_printf each, text of any
 * length in 1024-byte pieces): a piece longer than MT_LINE_MAX - 1 bytes is
 * cut, so the pieces are part of the output's contract. */
#include "report/format_profile.h"
#include "report/format.h"
#include "scan/leak_scan.h"

#include "base/config.h"
#include "store/live_bytes.h"
#include "store/sample_weight.h"

#include <string.h>

/* ------------------------------------------------------------ text */

/* LEN bytes of TEXT, in pieces that mt_out_printf never cuts. */
static void put_text(mt_out *out, const char *text, size_t len)
{
    for (size_t at = 0; at < len; at += 1024)
        mt_out_printf(out, "%.*s", (int)(len - at < 1024 ? len - at : 1024), text + at);
}

void mt_fmt_text(mt_out *out, const char *text)
{
    put_text(out, text, strlen(text));
}

void mt_fmt_text_indented(mt_out *out, const char *text)
{
    while (*text) {
        const char *nl = strchr(text, '\n');
        size_t len = nl ? (size_t)(nl - text) + 1 : strlen(text);
        mt_out_write(out, "  ", 2);
        put_text(out, text, len);
        text += len;
    }
}

/* MS as "S.MMM s". */
static void put_seconds(mt_out *out, uint64_t ms)
{
    mt_out_printf(out, "%lu.%03lu s", (unsigned long)(ms / 1000), (unsigned long)(ms % 1000));
}

/* ------------------------------------------------------------ sites */

void mt_fmt_prof_site_head(mt_out *out, size_t rank, const mt_fmt_prof_site *s, bool since_start,
                           const uint64_t *leak)
{
    mt_out_printf(out,
                  "memtrace: [%zu] %lu bytes live in %lu blocks; %s: %lu bytes in %lu "
                  "blocks allocated, %lu bytes in %lu blocks freed\n",
                  rank, (unsigned long)s->live_bytes, (unsigned long)s->live_blocks,
                  since_start ? "since start" : "since last report", (unsigned long)s->alloc_bytes,
                  (unsigned long)s->alloc_blocks, (unsigned long)s->freed_bytes,
                  (unsigned long)s->freed_blocks);
    if (leak)
        mt_out_printf(out,
                      "  leak check: %lu bytes definitely lost, %lu bytes indirectly lost, "
                      "%lu bytes possibly lost, %lu bytes still reachable\n",
                      (unsigned long)leak[MT_LEAK_DEFINITE], (unsigned long)leak[MT_LEAK_INDIRECT],
                      (unsigned long)leak[MT_LEAK_POSSIBLE],
                      (unsigned long)leak[MT_LEAK_REACHABLE]);
}

void mt_fmt_prof_site_tail(mt_out *out, const mt_fmt_prof_site *s, bool at_peak)
{
    mt_out_printf(out, "  temporary: %lu of %lu blocks allocated\n", (unsigned long)s->temp_blocks,
                  (unsigned long)s->alloc_blocks);
    if (at_peak)
        mt_out_printf(out, "  at the peak: %lu bytes live in %lu blocks\n",
                      (unsigned long)s->peak_bytes, (unsigned long)s->peak_blocks);
}

/* ------------------------------------------------------------ running reports */

/* How the sites are ordered, for the headers; "" for live bytes, whose
 * headers stay as they always were. */
static const char *rank_name(int top_by, bool since_start)
{
    switch (top_by) {
    case MT_TOP_BY_ALLOCS:
        return since_start ? " by allocations since start" : " by allocations since last report";
    case MT_TOP_BY_TEMPORARY:
        return since_start ? " by temporary allocations since start"
                           : " by temporary allocations since last report";
    case MT_TOP_BY_PEAK: return " by bytes live at the peak";
    default: return "";
    }
}

/* Which end of the ranking comes last: bytes are "largest", counts "most". */
static const char *rank_end(int top_by)
{
    return top_by == MT_TOP_BY_LIVE || top_by == MT_TOP_BY_PEAK ? "largest" : "most";
}

/* In sample mode, the line after a report's first: its figures are
 * estimates (store/sample_weight.h). */
static void put_sampled(mt_out *out)
{
    if (mt_sample_rate)
        mt_out_printf(out,
                      "memtrace: sampled (MEMTRACE_SAMPLE=%lu): bytes and blocks are "
                      "estimates\n"
                      "memtrace: sampled, but exact, every block counted: the total bytes live and "
                      "the peak above (the peak within %lu bytes per thread; its time an "
                      "estimate)\n",
                      (unsigned long)mt_sample_rate, (unsigned long)MT_LIVE_FLUSH);
}

void mt_fmt_prof_running_begin(mt_out *out, const mt_fmt_prof_running *r)
{
    static const char *const why_name[] = { "periodic", "on request", "signal" };
    mt_out_printf(out, "memtrace: report %u (%s), pid %d, at ", r->number, why_name[r->why],
                  r->pid);
    put_seconds(out, r->ms);
    mt_out_printf(out, ": %lu bytes live at %zu sites, peak %lu bytes; top %zu sites%s, %s last\n",
                  (unsigned long)r->live, r->sites, (unsigned long)r->peak, r->shown,
                  rank_name(r->top_by, false), rank_end(r->top_by));
    put_sampled(out);
}

void mt_fmt_prof_running_end(mt_out *out, unsigned number)
{
    mt_out_printf(out, "memtrace: end of report %u\n", number);
}

/* ------------------------------------------------------------ exit */

void mt_fmt_prof_exit_begin(mt_out *out, const mt_fmt_prof_exit *e)
{
    mt_out_printf(out, "memtrace: exit report, pid %d", e->pid);
    if (e->parent)
        mt_out_printf(out, " (forked from %d)", e->parent);
    mt_out_printf(out, ", at ");
    put_seconds(out, e->ms);
    mt_out_printf(out,
                  ": peak %lu bytes live at %lu ms; %lu bytes still live in %lu blocks "
                  "at %zu sites%s%s, %s last\n",
                  (unsigned long)e->peak, (unsigned long)e->peak_ms, (unsigned long)e->live,
                  (unsigned long)e->live_blocks, e->sites, e->top_by == MT_TOP_BY_LIVE ? "" : ";",
                  rank_name(e->top_by, true), rank_end(e->top_by));
    put_sampled(out);
}

/* The end of a "not shown" line: the setting that limits the list, or why
 * nothing was listed. */
static void put_limit(mt_out *out, const char *setting, long value, bool sorted)
{
    if (sorted)
        mt_out_printf(out, "(%s=%ld)\n", setting, value);
    else
        mt_out_printf(out, "(no memory left to sort them)\n");
}

void mt_fmt_prof_exit_more(mt_out *out, int top_by, size_t more, const mt_fmt_prof_site *rest,
                           long exit_top, bool sorted)
{
    mt_out_printf(out, "memtrace: %zu more sites not shown, ", more);
    if (top_by == MT_TOP_BY_LIVE)
        mt_out_printf(out, "%lu bytes in %lu blocks ", (unsigned long)rest->live_bytes,
                      (unsigned long)rest->live_blocks);
    else if (top_by == MT_TOP_BY_PEAK)
        mt_out_printf(out, "%lu bytes in %lu blocks at the peak ", (unsigned long)rest->peak_bytes,
                      (unsigned long)rest->peak_blocks);
    else
        mt_out_printf(out, "%lu blocks allocated, %lu temporary ",
                      (unsigned long)rest->alloc_blocks, (unsigned long)rest->temp_blocks);
    put_limit(out, "MEMTRACE_EXIT_TOP", exit_top, sorted);
}

void mt_fmt_prof_exit_end(mt_out *out)
{
    mt_out_printf(out, "memtrace: end of exit report\n");
}

void mt_fmt_prof_peak_begin(mt_out *out, size_t shown, uint64_t peak, uint64_t peak_ms)
{
    mt_out_printf(out,
                  "memtrace: top %zu sites at the peak (%lu bytes live at %lu ms), largest "
                  "last\n",
                  shown, (unsigned long)peak, (unsigned long)peak_ms);
}

void mt_fmt_prof_peak_more(mt_out *out, size_t more, const mt_fmt_prof_site *rest, long top,
                           bool sorted)
{
    mt_out_printf(out,
                  "memtrace: %zu more sites at the peak not shown, %lu bytes in %lu "
                  "blocks ",
                  more, (unsigned long)rest->peak_bytes, (unsigned long)rest->peak_blocks);
    put_limit(out, "MEMTRACE_TOP", top, sorted);
}

void mt_fmt_prof_peak_site(mt_out *out, size_t rank, const mt_fmt_prof_site *s)
{
    mt_out_printf(out,
                  "memtrace: at the peak [%zu] %lu bytes live in %lu blocks; at exit %lu "
                  "bytes in %lu blocks\n",
                  rank, (unsigned long)s->peak_bytes, (unsigned long)s->peak_blocks,
                  (unsigned long)s->live_bytes, (unsigned long)s->live_blocks);
}

void mt_fmt_prof_peak_end(mt_out *out)
{
    mt_out_printf(out, "memtrace: end of top at the peak\n");
}

/* ------------------------------------------------------------ folded */

void mt_fmt_folded_line(mt_out *out, mt_sym_state *dwfl, const uintptr_t *frames, unsigned depth,
                        uint64_t bytes)
{
    for (unsigned i = depth; i-- > 0;) {
        if (dwfl)
            mt_fmt_folded_frame(out, dwfl, true, frames, i);
        else
            mt_out_printf(out, "0x%lx", (unsigned long)frames[i]);
        if (i)
            mt_out_write(out, ";", 1);
    }
    mt_out_printf(out, " %lu\n", (unsigned long)bytes);
}

void mt_fmt_prof_folded_exit(mt_out *out, const char *path, const char *failed)
{
    mt_out_printf(out, "memtrace: folded stacks: ");
    mt_fmt_text(out, path);
    if (failed)
        mt_out_printf(out, " not written (%s), ", failed);
    else
        mt_out_printf(out, " (at exit), ");
}

void mt_fmt_prof_folded_peak(mt_out *out, const char *path, const char *failed, uint64_t bytes,
                             uint64_t peak_ms)
{
    mt_fmt_text(out, path);
    if (failed) {
        mt_out_printf(out, " not written (%s)\n", failed);
    } else {
        mt_out_printf(out, " (%lu bytes, peak at ", (unsigned long)bytes);
        put_seconds(out, peak_ms);
        mt_out_printf(out, ")\n");
    }
}

void mt_fmt_prof_folded_too_long(mt_out *out, size_t max, size_t max_peak)
{
    mt_out_printf(out,
                  "memtrace: folded stacks: not written: the path MEMTRACE_FOLDED "
                  "expands to is longer than %d bytes (%d with .peak)\n",
                  (int)max, (int)max_peak);
}
