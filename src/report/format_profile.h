/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The formatter's rows for the profiler's reports and folded files
 * (src/profile/, the profiler build): every line they hold is written here,
 * from numbers the profiler hands over; format.c writes the stacks. The
 * wording is an interface: scripts parse these lines (tests/e2e/profiler.sh
 * and profiler_ranks.sh hold them to the byte). Times are milliseconds
 * since the process started (a forked child: since the fork), written as
 * "S.MMM s" or "N ms" as each line always had them. TOP_BY is the ranking,
 * MEMTRACE_TOP_BY's MT_TOP_BY_* (base/config.h). */
#ifndef MT_FORMAT_PROFILE_H
#define MT_FORMAT_PROFILE_H

#include "base/output.h"
#include "symbolize/symbolize.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------ text */

/* TEXT, of any length, as it is: a stack the formatter wrote before
 * (mt_fmt_stack_frame's "  #N ..." lines), kept as text. */
void mt_fmt_text(mt_out *out, const char *text);
/* The same with two more spaces before each line: the stacks of the exit
 * report's top at the peak, which scripts reading the ranking's
 * "memtrace: [N]" entries and their "  #0" lines must not take for another
 * frame of the entry above. */
void mt_fmt_text_indented(mt_out *out, const char *text);

/* ------------------------------------------------------------ sites */

/* One site's numbers (or a sum of sites'). The alloc, freed and temp counts
 * are since start or since the last report, as the line using them says. */
typedef struct {
    uint64_t live_bytes, live_blocks;
    uint64_t alloc_bytes, alloc_blocks;
    uint64_t freed_bytes, freed_blocks;
    uint64_t temp_blocks;
    uint64_t peak_bytes, peak_blocks; /* at the latest peak */
} mt_fmt_prof_site;

/* The ranking's entry RANK, before its stack: "memtrace: [RANK] L bytes live
 * in K blocks; since start|since last report: A bytes in N blocks
 * allocated, F bytes in M blocks freed" (a line scripts parse), then, with
 * LEAK (bytes indexed by MT_LEAK_*, the leak check's verdict at exit), "  leak
 * check: D bytes definitely lost, I bytes indirectly lost, P bytes
 * possibly lost, R bytes still reachable". */
void mt_fmt_prof_site_head(mt_out *out, size_t rank, const mt_fmt_prof_site *s, bool since_start,
                           const uint64_t *leak);
/* After its stack: "  temporary: T of A blocks allocated" (A as in the first
 * line; after the stack, so that the first frame still follows the first
 * line), and "  at the peak: B bytes live in K blocks" with AT_PEAK. */
void mt_fmt_prof_site_tail(mt_out *out, const mt_fmt_prof_site *s, bool at_peak);

/* ------------------------------------------------------------ running reports */

/* Why a report was made. */
enum { MT_PROF_PERIODIC, MT_PROF_ON_REQUEST, MT_PROF_ON_SIGNAL };

typedef struct {
    unsigned number; /* in this process, from 1 */
    int why;         /* MT_PROF_* */
    int pid;
    uint64_t ms;         /* now */
    uint64_t live, peak; /* bytes over all sites */
    size_t sites;        /* holding memory */
    size_t shown;        /* entries that follow */
    int top_by;
} mt_fmt_prof_running;

/* "memtrace: report N (periodic|on request|signal), pid P, at S.MMM s: L
 * bytes live at K sites, peak B bytes; top N sites[ by ...], largest|most
 * last"; the entries follow, largest last. */
void mt_fmt_prof_running_begin(mt_out *out, const mt_fmt_prof_running *r);
/* "memtrace: end of report N". */
void mt_fmt_prof_running_end(mt_out *out, unsigned number);

/* ------------------------------------------------------------ exit */

typedef struct {
    int pid;
    int parent;  /* a forked child's parent, else 0 */
    uint64_t ms; /* now */
    uint64_t peak, peak_ms;
    uint64_t live, live_blocks; /* over all sites */
    size_t sites;               /* holding memory */
    int top_by;
} mt_fmt_prof_exit;

/* "memtrace: exit report, pid P[ (forked from Q)], at S.MMM s: peak B bytes
 * live at N ms; L bytes still live in K blocks at M sites[; by ...],
 * largest|most last". */
void mt_fmt_prof_exit_begin(mt_out *out, const mt_fmt_prof_exit *e);
/* MORE ranked sites past the MEMTRACE_EXIT_TOP (EXIT_TOP) listed, REST their
 * sum: "memtrace: K more sites not shown, " then what TOP_BY ranks ("B
 * bytes in N blocks ", "... at the peak ", or "N blocks allocated, T
 * temporary "), then "(MEMTRACE_EXIT_TOP=N)", or without SORTED "(no
 * memory left to sort them)". */
void mt_fmt_prof_exit_more(mt_out *out, int top_by, size_t more, const mt_fmt_prof_site *rest,
                           long exit_top, bool sorted);
/* "memtrace: end of exit report". */
void mt_fmt_prof_exit_end(mt_out *out);

/* The exit report's top at the peak (heaptrack's PEAK MEMORY CONSUMERS),
 * lines of its own so that the ranking's stay as they were: "memtrace: top
 * N sites at the peak (B bytes live at T ms), largest last". */
void mt_fmt_prof_peak_begin(mt_out *out, size_t shown, uint64_t peak, uint64_t peak_ms);
/* "memtrace: K more sites at the peak not shown, B bytes in N blocks
 * (MEMTRACE_TOP=TOP)", or without SORTED "(no memory left to sort them)". */
void mt_fmt_prof_peak_more(mt_out *out, size_t more, const mt_fmt_prof_site *rest, long top,
                           bool sorted);
/* "memtrace: at the peak [RANK] B bytes live in K blocks; at exit L bytes in
 * M blocks"; its stack follows, indented (mt_fmt_text_indented). */
void mt_fmt_prof_peak_site(mt_out *out, size_t rank, const mt_fmt_prof_site *s);
/* "memtrace: end of top at the peak". */
void mt_fmt_prof_peak_end(mt_out *out);

/* ------------------------------------------------------------ folded */

/* A line of a folded file (flamegraph.pl's input): "f1;f2;...;fn BYTES",
 * the DEPTH FRAMES outermost first, each named by mt_fmt_folded_frame
 * through DWFL (refreshed), "0xRET" without it (NULL). */
void mt_fmt_folded_line(mt_out *out, mt_sym_state *dwfl, const uintptr_t *frames, unsigned depth,
                        uint64_t bytes);

/* The exit report's line on MEMTRACE_FOLDED's files, "memtrace: folded
 * stacks: PATH (at exit), PATH.peak (B bytes, peak at S.MMM s)", each
 * file's part "PATH not written (WHY)" instead when it was not:
 * mt_fmt_prof_folded_exit writes the start and the first file's part
 * (FAILED: why not, NULL: written), mt_fmt_prof_folded_peak the rest. */
void mt_fmt_prof_folded_exit(mt_out *out, const char *path, const char *failed);
void mt_fmt_prof_folded_peak(mt_out *out, const char *path, const char *failed, uint64_t bytes,
                             uint64_t peak_ms);
/* No folded file: "memtrace: folded stacks: not written: the path
 * MEMTRACE_FOLDED expands to is longer than MAX bytes (MAX_PEAK with
 * .peak)". */
void mt_fmt_prof_folded_too_long(mt_out *out, size_t max, size_t max_peak);

#endif
