/* MEMTRACE_* settings. Parsing uses no heap: getenv and strtol only. */
#include "base/config.h"

#include "base/common.h"
#include "base/output.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

mt_config mt_cfg = { .depth = 64, .freed = 65536, .start = 1, .history = 3 };

long mt_config_long(const char *name, long def, long min, long max)
{
    const char *s = getenv(name);
    if (!s)
        return def;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    while (*end == ' ' || *end == '\t')
        end++;
    if (*s == '\0' || *end != '\0' || errno == ERANGE || v < min || v > max) {
        mt_warn("%s=\"%s\" is not a whole number from %ld to %ld; using %ld",
                name, s, min, max, def);
        return def;
    }
    return v;
}

/* Signal number of S, as mt_config_signal takes it; 0 if it is none. */
static int signal_number(const char *s)
{
    if (strncasecmp(s, "SIG", 3) == 0)
        s += 3;
    char *end;
    errno = 0;
    long n = strtol(s, &end, 10);
    if (end != s && *end == '\0')
        return errno == 0 && n > 0 && n < NSIG ? (int)n : 0;
    if (strncasecmp(s, "RTMIN+", 6) == 0 || strncasecmp(s, "RTMAX-", 6) == 0) {
        if (s[6] < '0' || s[6] > '9')
            return 0;
        errno = 0;
        long k = strtol(s + 6, &end, 10);
        if (*end != '\0' || errno != 0 || k > SIGRTMAX - SIGRTMIN)
            return 0;
        return s[5] == '+' ? SIGRTMIN + (int)k : SIGRTMAX - (int)k;
    }
    if (strcasecmp(s, "RTMIN") == 0)
        return SIGRTMIN;
    if (strcasecmp(s, "RTMAX") == 0)
        return SIGRTMAX;
    for (int sig = 1; sig < SIGRTMIN; sig++) {
        const char *abbrev = sigabbrev_np(sig);
        if (abbrev && strcasecmp(s, abbrev) == 0)
            return sig;
    }
    return 0;
}

int mt_config_signal(const char *name, const char *none)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return 0;
    int sig = signal_number(s);
    /* The nameless ones below SIGRTMIN are glibc's own (cancellation,
     * setxid). */
    if (sig == 0 || sig == SIGKILL || sig == SIGSTOP || (sig < SIGRTMIN && !sigabbrev_np(sig))) {
        mt_warn("%s=\"%s\" is not a signal that can be caught; %s", name, s, none);
        return 0;
    }
    if (sig != SIGUSR1 && sig != SIGUSR2 && sig < SIGRTMIN) {
        mt_warn("%s=\"%s\" is SIG%s, which the program and the system rely on; memtrace takes "
                "only USR1, USR2 or a real-time signal (RTMIN+n); %s",
                name, s, sigabbrev_np(sig), none);
        return 0;
    }
    return sig;
}

/* MEMTRACE_UNWIND: "cfi", "libunwind", "fp" or "check". */
static int unwind_setting(void)
{
    static const struct {
        const char *name;
        int value;
    } names[] = {
        { "cfi", MT_UNWIND_CFI },
        { "libunwind", MT_UNWIND_LIBUNWIND },
        { "fp", MT_UNWIND_FP },
        { "check", MT_UNWIND_CHECK },
    };
    const char *s = getenv("MEMTRACE_UNWIND");
    if (!s)
        return MT_UNWIND_CFI;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i].name) == 0)
            return names[i].value;
    mt_warn("MEMTRACE_UNWIND=\"%s\" is not one of cfi, libunwind, fp, check; using cfi", s);
    return MT_UNWIND_CFI;
}

/* MEMTRACE_BAD_FREE: "report" or "quiet". */
static int bad_free_setting(void)
{
    const char *s = getenv("MEMTRACE_BAD_FREE");
    if (!s || strcmp(s, "report") == 0)
        return MT_BAD_FREE_REPORT;
    if (strcmp(s, "quiet") == 0)
        return MT_BAD_FREE_QUIET;
    mt_warn("MEMTRACE_BAD_FREE=\"%s\" is not one of report, quiet; using report", s);
    return MT_BAD_FREE_REPORT;
}

/* MEMTRACE_TOP_BY: "live", "allocs", "temporary" or "peak". */
static int top_by_setting(void)
{
    const char *s = getenv("MEMTRACE_TOP_BY");
    if (!s || strcmp(s, "live") == 0)
        return MT_TOP_BY_LIVE;
    if (strcmp(s, "allocs") == 0)
        return MT_TOP_BY_ALLOCS;
    if (strcmp(s, "temporary") == 0)
        return MT_TOP_BY_TEMPORARY;
    if (strcmp(s, "peak") == 0)
        return MT_TOP_BY_PEAK;
    mt_warn("MEMTRACE_TOP_BY=\"%s\" is not one of live, allocs, temporary, peak; using live", s);
    return MT_TOP_BY_LIVE;
}

/* MEMTRACE_HISTORY: "all" or a count, 0 to 2^26 (the freed history's
 * largest size), default 3 (format.h's MT_HISTORY_DEFAULT, which config.c,
 * a lower layer, does not include). */
static unsigned history_setting(void)
{
    const char *s = getenv("MEMTRACE_HISTORY");
    if (!s)
        return 3;
    if (strcmp(s, "all") == 0)
        return 0xffffffffu;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno == ERANGE || v < 0 || v > 1L << 26) {
        mt_warn("MEMTRACE_HISTORY=\"%s\" is not all or a whole number from 0 to %ld; using 3",
                s, 1L << 26);
        return 3;
    }
    return (unsigned)v;
}

void mt_config_load(void)
{
    mt_cfg.unwind = unwind_setting();
    mt_cfg.depth = (unsigned)mt_config_long("MEMTRACE_DEPTH", 64, 1, MT_MAX_DEPTH);
    mt_cfg.freed = (size_t)mt_config_long("MEMTRACE_FREED", 65536, 0, 1L << 26);
    mt_cfg.bad_free = bad_free_setting();
    mt_cfg.leak_check = (int)mt_config_long("MEMTRACE_LEAK_CHECK", 0, 0, 1);
    mt_cfg.leak_exitcode = (int)mt_config_long("MEMTRACE_LEAK_EXITCODE", 23, 0, 255);
    mt_cfg.start = (int)mt_config_long("MEMTRACE_START", 1, 0, 1);
    mt_cfg.history = history_setting();
}

void mt_config_profiler(mt_profiler_config *out)
{
    out->interval_ms = mt_config_long("MEMTRACE_INTERVAL_MS", 1000, 0, 86400000);
    out->top = mt_config_long("MEMTRACE_TOP", 10, 1, 100000);
    out->exit_top = mt_config_long("MEMTRACE_EXIT_TOP", 1000, 0, 100000000);
    out->top_by = top_by_setting();
}
