/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Settings from MEMTRACE_* environment variables, read once at start-up.
 * A bad value gets one warning naming the variable and the default used. */
#ifndef MT_CONFIG_H
#define MT_CONFIG_H

#include <stddef.h>

enum { MT_UNWIND_CFI, MT_UNWIND_LIBUNWIND, MT_UNWIND_FP, MT_UNWIND_CHECK };
enum { MT_BAD_FREE_REPORT, MT_BAD_FREE_QUIET };
enum { MT_ON_ERROR_CONTINUE, MT_ON_ERROR_ABORT };
enum { MT_SYMBOLIZE_NOW, MT_SYMBOLIZE_LATER };
enum { MT_TOP_BY_LIVE, MT_TOP_BY_ALLOCS, MT_TOP_BY_TEMPORARY, MT_TOP_BY_PEAK };

typedef struct {
    int unwind;         /* MEMTRACE_UNWIND: cfi (default), libunwind, fp or check */
    unsigned depth;     /* MEMTRACE_DEPTH: frames kept per stack, 1..256 */
    size_t freed;       /* MEMTRACE_FREED: freed-history records, 0 = off */
    int bad_free;       /* MEMTRACE_BAD_FREE: report (default) or quiet */
    int leak_check;     /* MEMTRACE_LEAK_CHECK: 1 = the leak check at exit (leak_check.h) */
    int leak_exitcode;  /* MEMTRACE_LEAK_EXITCODE: exit status when leaks remain, 0..255 */
    int start;          /* MEMTRACE_START: 1 (default) records from start-up, 0 starts off */
    unsigned history;   /* MEMTRACE_HISTORY: a live block's earlier lives print_trace
                           shows (format.h's mt_answer.history); "all" = MT_HISTORY_ALL */
    size_t redzone;     /* MEMTRACE_REDZONE: bytes checked after every block, 0 = off */
    size_t quarantine;  /* MEMTRACE_QUARANTINE: bytes of freed blocks held per thread, 0 = off */
    int on_error;       /* MEMTRACE_ON_ERROR: continue (default) or abort */
    int error_exitcode; /* MEMTRACE_ERROR_EXITCODE: exit status after a heap error, 0..255 */
    size_t sample;      /* MEMTRACE_SAMPLE: mean bytes between samples, 0 = trace every block */
    unsigned long sample_seed; /* MEMTRACE_SAMPLE_SEED: 0 = a new seed each run */
    int symbolize;             /* MEMTRACE_SYMBOLIZE: now (default) or later (raw frames) */
} mt_config;

extern mt_config mt_cfg;

/* Reads the settings, at start-up; says once when they are ignored
 * (mt_setting_env). */
void mt_config_load(void);

/* getenv(NAME) for a MEMTRACE_* variable: NULL in a secure-exec process
 * (AT_SECURE: setuid, setgid or file capabilities), whose environment is
 * its less privileged user's. Every reader of a setting asks here. */
const char *mt_setting_env(const char *name);

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

/* The settings of settings.def, by id: MT_SET_DEPTH for MEMTRACE_DEPTH. */
enum {
#define MT_SETTING(id, kind, def, min, max, values, builds, summary) MT_SET_##id,
#include "base/settings.def"
#undef MT_SETTING
    MT_SETTINGS
};

/* "MEMTRACE_" and setting ID's name. */
const char *mt_setting_name(int id);

/* Whether only libmemtrace-profiler.so acts on setting ID. */
int mt_setting_profiler_only(int id);

/* Setting ID, a COUNT of settings.def, as an integer in its range; its
 * default (after one warning) when it is set but empty, not a number, or
 * out of range. */
long mt_setting_long(int id);

/* Setting ID, a PATH, copied into BUF of SIZE bytes (copied at start-up:
 * a program may rewrite or clear its environment later), a relative one
 * after the working directory of start-up (mt_config_load) and "/", so
 * that a chdir of the program does not move it (a % in that directory is
 * written %% for the settings expanded by mt_path_expand, every one but
 * MEMTRACE_SUPPRESSIONS); the variable in environ then says that path
 * too, for the programs this process execs after a chdir. BUF must live
 * as long as the process. NULL when it is unset or empty, and, after one
 * warning ending in FALLBACK (what then happens), when it does not fit. */
const char *mt_setting_path(int id, char *buf, size_t size, const char *fallback);

/* The signal setting ID (MT_SET_SIGNAL,
 * MT_SET_TOGGLE_SIGNAL) names for a handler of memtrace's: by name with or
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
int mt_config_signal(int id, const char *none);

#endif
