/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the profiler's files share (the profiler build's src/profile/, all
 * but profiler_off.c), and nothing outside the folder includes:
 *
 *   prof_state.c       the settings and the state the others share
 *   profiler.c         start-up, fork handlers, exit handler, memtrace_report
 *   reporter_thread.c  the thread that makes the running reports on time
 *                      and on MEMTRACE_SIGNAL; pause and resume
 *   sites.c            the site table, its walk and the ranking; report_lock
 *   site_text.c        the sites' symbolized stacks
 *   running_report.c   the running reports ("report N": periodic, on
 *                      request, on signal), the ranking's entries
 *   exit_report.c      the exit report, its top at the peak
 *   site_files.c       the folded files and the pprof profiles from the sites
 *   output_file.c      MEMTRACE_OUTPUT: where every report goes
 *
 * Every line they print is written by the formatter
 * (report/format_profile.h, report/format.h). Not profile/profiler.h, the
 * folder's interface to the others: profiler.c includes this. */
#ifndef MT_PROF_INTERNAL_H
#define MT_PROF_INTERNAL_H

#include "base/lock.h"
#include "base/output.h"
#include "report/format_profile.h"
#include "report/pprof_out.h"
#include "store/live_bytes.h"
#include "store/sample_weight.h"
#include "store/site.h"
#include "store/stack_store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <ucontext.h>

/* Paths, expanded or not, are at most MT_PROF_PATH_BYTES - 1 bytes. */
#define MT_PROF_PATH_BYTES 4096

/* ------------------------------------------------------------ prof_state.c */

/* The settings, read once at start-up (mt_prof_load_settings); the templates are copies
 * (the program may rewrite its environment and argv later). */
typedef struct {
    long interval_ms;   /* MEMTRACE_INTERVAL_MS, 0 = no periodic report */
    long top;           /* MEMTRACE_TOP */
    long exit_top;      /* MEMTRACE_EXIT_TOP */
    int top_by;         /* MEMTRACE_TOP_BY, an MT_TOP_BY_* */
    int signal;         /* MEMTRACE_SIGNAL, 0 = none */
    const char *output; /* MEMTRACE_OUTPUT, NULL = stderr (also once the file failed) */
    const char *folded; /* MEMTRACE_FOLDED, NULL = none (a forked child's: its own) */
    char program[256];  /* for %e: program_invocation_short_name */
} mt_prof_settings;
extern mt_prof_settings mt_prof_set;

extern uint64_t mt_prof_start_ns;      /* this process's start (a forked child's: the fork) */
extern uint32_t mt_prof_report_number; /* of the last running report in this process */
extern pid_t mt_prof_parent;           /* of a forked child, else 0 */
extern int mt_prof_exiting;            /* the exit report is done: print nothing more */
/* The leak check's verdict for the blocks of stack ID (bytes by MT_LEAK_*
 * in CLS), false when there is none (mt_profiler_set_leak_hooks). */
bool mt_prof_leak_classes(mt_stack_id id, uint64_t cls[4]);
/* The leak check's run at exit, if it registered its hooks (profiler.h's
 * mt_leak_hooks: UC and STACK_FROM are the exit handler's). */
void mt_prof_leak_run(const ucontext_t *uc, uintptr_t stack_from);

/* Reads the settings into mt_prof_set (warning once on a bad value), and
 * MEMTRACE_FOLDED's template for the processes this one starts. */
void mt_prof_load_settings(void);
/* In a forked child: PARENT's child, started at NOW_NS; its report count
 * starts over and its folded files are its own. */
void mt_prof_state_forked(pid_t parent, uint64_t now_ns);

/* Milliseconds from the process's start to NS (0 before it). */
static inline uint64_t mt_prof_ms(uint64_t ns)
{
    return ns > mt_prof_start_ns ? (ns - mt_prof_start_ns) / 1000000 : 0;
}

/* ------------------------------------------------------------ sites.c */

/* Serialises reports, walks and the site table. An mt_lock, not a pthread
 * mutex: its word names its holder in the same atomic step that takes it
 * (lock.h), so a fork from a signal handler that interrupted this thread
 * inside a report (memtrace_report) can tell that its own interrupted code
 * holds it (profiler.c's fork_prepare) without a window where it cannot.
 * Only ever taken before the internal heap's lock. */
extern mt_lock mt_prof_report_lock;
/* A report holds it for as long as symbolizing takes, so a waiter sleeps a
 * millisecond at a time rather than spinning. */
void mt_prof_lock(void);
void mt_prof_unlock(void);

/* What the reporter keeps per stored stack. Only touched under the lock. */
struct mt_prof_site {
    mt_stack_id id;
    unsigned depth;
    uint32_t number;         /* the stack's site number (mt_stack_site_number) */
    const uintptr_t *frames; /* in the stack store: never freed */
    mt_site_counters last;   /* counters at the last printed report */
    mt_site_counters now;    /* counters read by the current walk; its
                                peak_bytes and peak_blocks: the site's at
                                the latest global peak (mt_site_peak_of) */
    char *text;              /* symbolized stack, NULL until first printed */
};
extern struct mt_prof_site *mt_prof_sites;
extern size_t mt_prof_nsites;

/* The site table's first capacity, allocated at start-up: libdw may later
 * exhaust the internal heap, and the exit report must still list the
 * sites. */
void mt_prof_reserve_sites(void);

static inline uint64_t mt_prof_live_bytes(const mt_site_counters *c)
{
    return c->alloc_bytes > c->freed_bytes ? c->alloc_bytes - c->freed_bytes : 0;
}

static inline uint64_t mt_prof_live_blocks(const mt_site_counters *c)
{
    return c->alloc_blocks > c->freed_blocks ? c->alloc_blocks - c->freed_blocks : 0;
}

struct mt_prof_walk {
    uint64_t sum_live; /* over all sites */
    uint64_t sum_blocks;
    uint64_t events; /* alloc + free blocks since start, over all sites */
    size_t nlive;    /* sites holding memory */
};
/* Reads every stored stack's counters into its site (added if new: only
 * the stacks stored since the last walk are read from the store). */
void mt_prof_walk_sites(struct mt_prof_walk *w);

/* S's numbers for the formatter: live and at the peak after the last walk,
 * the counts since start (SINCE_START) or since the last report. */
void mt_prof_row(const struct mt_prof_site *s, bool since_start, mt_fmt_prof_site *row);

/* What S is ranked by, BY (an MT_TOP_BY_*), after the last walk: live
 * bytes, bytes at the peak, or its allocations or temporary allocations
 * since start (SINCE_START) or since the last report. */
uint64_t mt_prof_rank_key(int by, const struct mt_prof_site *s, bool since_start);
/* Sites whose mt_prof_rank_key(BY) is not 0 after the last walk, greatest
 * first, at most MAX; *N gets the count. Valid until the next call (under
 * the lock); NULL (and *N 0) if there is no site table. */
struct mt_prof_site **mt_prof_largest(int by, size_t max, bool since_start, size_t *n);

/* ------------------------------------------------------------ site_text.c */

/* With little internal-heap headroom left, stops the symbolizer's use of
 * libdw (said once). */
void mt_prof_heap_check(void);
/* Text of S's stack ("  #N ..." lines): symbolized, and kept in S while the
 * kept texts stay under a bound, else also returned in *MADE for the
 * caller to free after use; raw addresses in RAW (RAW_SIZE bytes) when it
 * cannot be symbolized. */
const char *mt_prof_site_text(struct mt_prof_site *s, char **made, char *raw, size_t raw_size);

/* In sample mode (MEMTRACE_SAMPLE), loads from the reporter thread what
 * symbolizing the stacks stored since the last call costs once per module
 * (mt_sym_warm), so that the exit report, which the program's exit waits
 * for, pays for its own addresses only: the same work, done earlier and
 * off the program's threads. Skipped while a report is being made or the
 * symbolizer is busy (the next call takes up the stacks left). */
void mt_prof_warm(void);

/* Whether mt_prof_warm can do anything in this process: sample mode and
 * symbolizing in the process (not MEMTRACE_SYMBOLIZE=later). Fixed once
 * the settings are read. */
bool mt_prof_warms(void);

/* ------------------------------------------------------------ running_report.c */

/* A running report (WHY: MT_PROF_*), unless the exit report was made; a periodic
 * one only if a block was allocated or freed since the last. Takes the
 * lock, with cancellation disabled throughout. */
void mt_prof_running_report(int why);
/* The ranking's entry RANK: its lines, stack and all. Under the lock. */
void mt_prof_print_entry(mt_out *o, size_t rank, struct mt_prof_site *s, bool since_start);

/* ------------------------------------------------------------ exit_report.c */

/* Runs once per process (atexit, in whichever thread called exit), on
 * mt_own_stack. */
void mt_prof_exit_report(void *unused);

/* ------------------------------------------------------------ site_files.c */

/* Writes one folded file, a line for every stack whose bytes are not zero:
 * at the peak (site.c's snapshot; *PEAK_SUM gets their sum) when PEAK_SUM
 * is not NULL, else after the last walk. NULL when written, else why
 * not. */
const char *mt_prof_write_folded(const char *path, uint64_t *peak_sum);
/* The MEMTRACE_PPROF profile of WHEN, named in SAY. Under the lock. */
void mt_prof_write_pprof(enum mt_pprof_when when, mt_out *say);

/* ------------------------------------------------------------ output_file.c */

/* PATTERN with %p, %e, %t, %% expanded (mt_path_expand), into OUT (SIZE
 * bytes); false, and OUT unusable, when the result does not fit. */
bool mt_prof_expand(const char *pattern, char *out, size_t size);
/* Opens a report or folded file: created 0600, the last component never
 * followed if it is a symbolic link. */
int mt_prof_open_file(const char *path, int flags);
/* Whether an open of PATH failed because it is a symbolic link. */
bool mt_prof_is_link(const char *path);

/* ------------------------------------------------------------ reporter_thread.c */

/* At start-up: the main thread watched, the reporter thread started if a
 * setting needs it, MEMTRACE_SIGNAL's handler installed. */
void mt_prof_reporter_init(void);
/* In a forked child (the parent's reporter does not exist there): its own,
 * started again if needed; the calling thread is the child's main one. */
void mt_prof_reporter_forked(void);

#endif
