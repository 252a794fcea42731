/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The formatter's profiler rows (src/report/format_profile.c) from made-up
 * numbers: each line to the byte, including those the e2e suites cannot
 * reach (a site table the internal heap had no room for: "no memory left
 * to sort them"), and text longer than one formatted piece kept whole. The
 * e2e suites (tests/e2e/profiler.sh, profiler_ranks.sh) check the real
 * reports. */
#include "base/config.h"
#include "report/format_profile.h"
#include "scan/leak_scan.h"

#include <criterion/criterion.h>
#include <string.h>

static mt_out out;

/* What was written to OUT since the last call. */
static const char *written(void)
{
    static char text[sizeof out.buf + 1];
    cr_assert_lt(out.len, sizeof out.buf, "the test's text fits the buffer");
    memcpy(text, out.buf, out.len);
    text[out.len] = '\0';
    out.len = 0;
    return text;
}

static void setup(void)
{
    mt_out_init(&out, -1);
}

TestSuite(format_profile, .init = setup);

static const mt_fmt_prof_site site = {
    .live_bytes = 300,
    .live_blocks = 3,
    .alloc_bytes = 1000,
    .alloc_blocks = 10,
    .freed_bytes = 700,
    .freed_blocks = 7,
    .temp_blocks = 4,
    .peak_bytes = 900,
    .peak_blocks = 9,
};

Test(format_profile, site_entry)
{
    mt_fmt_prof_site_head(&out, 2, &site, false, NULL);
    mt_fmt_prof_site_tail(&out, &site, false);
    cr_assert_str_eq(written(),
                     "memtrace: [2] 300 bytes live in 3 blocks; since last report: 1000 bytes in "
                     "10 blocks allocated, 700 bytes in 7 blocks freed\n"
                     "  temporary: 4 of 10 blocks allocated\n");
    uint64_t leak[MT_LEAK_CLASSES] = { 0 };
    leak[MT_LEAK_REACHABLE] = 1, leak[MT_LEAK_DEFINITE] = 2, leak[MT_LEAK_INDIRECT] = 3,
    leak[MT_LEAK_POSSIBLE] = 4;
    mt_fmt_prof_site_head(&out, 1, &site, true, leak);
    mt_fmt_prof_site_tail(&out, &site, true);
    cr_assert_str_eq(written(),
                     "memtrace: [1] 300 bytes live in 3 blocks; since start: 1000 bytes in 10 "
                     "blocks allocated, 700 bytes in 7 blocks freed\n"
                     "  leak check: 2 bytes definitely lost, 3 bytes indirectly lost, 4 bytes "
                     "possibly lost, 1 bytes still reachable\n"
                     "  temporary: 4 of 10 blocks allocated\n"
                     "  at the peak: 900 bytes live in 9 blocks\n");
}

Test(format_profile, report_lines)
{
    mt_fmt_prof_running r = { .number = 3,
                              .why = MT_PROF_ON_SIGNAL,
                              .pid = 42,
                              .ms = 1005,
                              .live = 300,
                              .peak = 900,
                              .sites = 5,
                              .shown = 2,
                              .top_by = MT_TOP_BY_TEMPORARY };
    mt_fmt_prof_running_begin(&out, &r);
    mt_fmt_prof_running_end(&out, 3);
    cr_assert_str_eq(written(),
                     "memtrace: report 3 (signal), pid 42, at 1.005 s: 300 bytes live at 5 "
                     "sites, peak 900 bytes; top 2 sites by temporary allocations since last "
                     "report, most last\n"
                     "memtrace: end of report 3\n");
    r.why = MT_PROF_PERIODIC, r.top_by = MT_TOP_BY_LIVE, r.ms = 20;
    mt_fmt_prof_running_begin(&out, &r);
    cr_assert_str_eq(written(),
                     "memtrace: report 3 (periodic), pid 42, at 0.020 s: 300 bytes live at 5 "
                     "sites, peak 900 bytes; top 2 sites, largest last\n");
}

Test(format_profile, exit_lines)
{
    mt_fmt_prof_exit e = { .pid = 42,
                           .parent = 41,
                           .ms = 2500,
                           .peak = 900,
                           .peak_ms = 12,
                           .live = 300,
                           .live_blocks = 3,
                           .sites = 1,
                           .top_by = MT_TOP_BY_PEAK };
    mt_fmt_prof_exit_begin(&out, &e);
    e.parent = 0, e.top_by = MT_TOP_BY_LIVE;
    mt_fmt_prof_exit_begin(&out, &e);
    mt_fmt_prof_exit_end(&out);
    cr_assert_str_eq(written(),
                     "memtrace: exit report, pid 42 (forked from 41), at 2.500 s: peak 900 bytes "
                     "live at 12 ms; 300 bytes still live in 3 blocks at 1 sites; by bytes live "
                     "at the peak, largest last\n"
                     "memtrace: exit report, pid 42, at 2.500 s: peak 900 bytes live at 12 ms; "
                     "300 bytes still live in 3 blocks at 1 sites, largest last\n"
                     "memtrace: end of exit report\n");
}

Test(format_profile, not_shown)
{
    mt_fmt_prof_exit_more(&out, MT_TOP_BY_LIVE, 5, &site, 1000, true);
    mt_fmt_prof_exit_more(&out, MT_TOP_BY_PEAK, 5, &site, 1000, false);
    mt_fmt_prof_exit_more(&out, MT_TOP_BY_ALLOCS, 5, &site, 1, true);
    mt_fmt_prof_peak_more(&out, 2, &site, 10, true);
    mt_fmt_prof_peak_more(&out, 2, &site, 10, false);
    cr_assert_str_eq(written(),
                     "memtrace: 5 more sites not shown, 300 bytes in 3 blocks "
                     "(MEMTRACE_EXIT_TOP=1000)\n"
                     "memtrace: 5 more sites not shown, 900 bytes in 9 blocks at the peak "
                     "(no memory left to sort them)\n"
                     "memtrace: 5 more sites not shown, 10 blocks allocated, 4 temporary "
                     "(MEMTRACE_EXIT_TOP=1)\n"
                     "memtrace: 2 more sites at the peak not shown, 900 bytes in 9 blocks "
                     "(MEMTRACE_TOP=10)\n"
                     "memtrace: 2 more sites at the peak not shown, 900 bytes in 9 blocks "
                     "(no memory left to sort them)\n");
}

Test(format_profile, top_at_the_peak)
{
    mt_fmt_prof_peak_begin(&out, 1, 900, 12);
    mt_fmt_prof_peak_site(&out, 1, &site);
    mt_fmt_text_indented(&out, "  #0 f at a.c:1:2\n  #1 main at a.c:9");
    mt_fmt_prof_peak_end(&out);
    cr_assert_str_eq(written(),
                     "memtrace: top 1 sites at the peak (900 bytes live at 12 ms), largest last\n"
                     "memtrace: at the peak [1] 900 bytes live in 9 blocks; at exit 300 bytes "
                     "in 3 blocks\n"
                     "    #0 f at a.c:1:2\n"
                     "    #1 main at a.c:9"
                     "memtrace: end of top at the peak\n");
}

/* A stack's text is longer than one formatted piece (MT_LINE_MAX) and must
 * not be cut. */
Test(format_profile, long_text_whole)
{
    static char text[3 * MT_LINE_MAX];
    memset(text, 'x', sizeof text - 2);
    text[sizeof text - 2] = '\n';
    mt_fmt_text(&out, text);
    cr_assert_str_eq(written(), text);
    mt_fmt_text_indented(&out, text);
    const char *t = written();
    cr_assert_eq(strncmp(t, "  ", 2), 0);
    cr_assert_str_eq(t + 2, text);
}

Test(format_profile, folded)
{
    const uintptr_t frames[] = { 0x1, 0x2, 0x3 };
    mt_fmt_folded_line(&out, NULL, frames, 3, 42);
    mt_fmt_prof_folded_exit(&out, "/t/f", NULL);
    mt_fmt_prof_folded_peak(&out, "/t/f.peak", NULL, 900, 1234);
    mt_fmt_prof_folded_exit(&out, "/t/f", "No such file or directory");
    mt_fmt_prof_folded_peak(&out, "/t/f.peak", "a symbolic link; not followed", 0, 0);
    mt_fmt_prof_folded_too_long(&out, 4090, 4095);
    cr_assert_str_eq(written(),
                     "0x3;0x2;0x1 42\n"
                     "memtrace: folded stacks: /t/f (at exit), /t/f.peak (900 bytes, peak at "
                     "1.234 s)\n"
                     "memtrace: folded stacks: /t/f not written (No such file or directory), "
                     "/t/f.peak not written (a symbolic link; not followed)\n"
                     "memtrace: folded stacks: not written: the path MEMTRACE_FOLDED expands to "
                     "is longer than 4090 bytes (4095 with .peak)\n");
}
