/* Settings from MEMTRACE_* environment variables, read once at start-up.
 * A bad value gets one warning naming the variable and the default used. */
#ifndef MT_CONFIG_H
#define MT_CONFIG_H

#include <stddef.h>

enum { MT_UNWIND_CFI, MT_UNWIND_LIBUNWIND, MT_UNWIND_FP, MT_UNWIND_CHECK };
enum { MT_BAD_FREE_REPORT, MT_BAD_FREE_QUIET };
enum { MT_TOP_BY_LIVE, MT_TOP_BY_ALLOCS, MT_TOP_BY_TEMPORARY, MT_TOP_BY_PEAK };

typedef struct {
    int unwind;     /* MEMTRACE_UNWIND: cfi (default), libunwind, fp or check */
    unsigned depth; /* MEMTRACE_DEPTH: frames kept per stack, 1..256 */
    size_t freed;   /* MEMTRACE_FREED: freed-history records, 0 = off */
    int bad_free;   /* MEMTRACE_BAD_FREE: report (default) or quiet */
    int leak_check; /* MEMTRACE_LEAK_CHECK: 1 = the leak check at exit (leak_check.h) */
    int leak_exitcode; /* MEMTRACE_LEAK_EXITCODE: exit status when leaks remain, 0..255 */
    int start;      /* MEMTRACE_START: 1 (default) records from start-up, 0 starts off */
    unsigned history; /* MEMTRACE_HISTORY: a live block's earlier lives print_trace
                         shows (format.h's mt_answer.history); "all" = MT_HISTORY_ALL */
} mt_config;

extern mt_config mt_cfg;

void mt_config_load(void);

/* The profiler's numeric settings, read (and checked) by both builds so
 * that a bad value warns whichever library is preloaded; the tracer build
 * ignores them. */
typedef struct {
    long interval_ms; /* MEMTRACE_INTERVAL_MS: 0 = no periodic report */
    long top;         /* MEMTRACE_TOP */
    long exit_top;    /* MEMTRACE_EXIT_TOP */
    int top_by;       /* MEMTRACE_TOP_BY: live (default), allocs, temporary or peak */
} mt_profiler_config;
void mt_config_profiler(mt_profiler_config *out);

/* Parses environment variable NAME as an integer in [MIN, MAX]; returns DEF
 * (and warns) when it is set but empty, not a number, or out of range. */
long mt_config_long(const char *name, long def, long min, long max);

/* The signal environment variable NAME (MEMTRACE_SIGNAL,
 * MEMTRACE_TOGGLE_SIGNAL) names for a handler of memtrace's: by name with or
 * without SIG in any case ("USR2", "SIGUSR2", "usr2"), RTMIN, RTMIN+n, RTMAX,
 * RTMAX-n, or number. 0 when it is unset or empty, and, after one warning
 * ending in NONE (what then happens), when it names no signal that can be
 * caught or one memtrace must not take: only USR1, USR2 and the real-time
 * signals are. Every other one the program or the system relies on: a
 * fault signal (SEGV, BUS, FPE, ILL, TRAP, SYS) whose handler returns
 * re-runs the faulting instruction forever, ABRT would not end an abort,
 * CHLD and PIPE are the program's, job control, timers (ALRM, PROF,
 * VTALRM), resource limits (XCPU, XFSZ) and the requests to end (INT,
 * TERM, HUP, QUIT) would stop doing what they do. */
int mt_config_signal(const char *name, const char *none);

#endif
