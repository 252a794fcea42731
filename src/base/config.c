/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* MEMTRACE_* settings, as settings.def lists them. Parsing uses no heap:
 * getenv and strtol only. */
#include "base/config.h"

#include "base/common.h"
#include "base/output.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

extern char **environ;

enum { COUNT, COUNT_OR_ALL, CHOICE, SIGNAL, PATH };
enum { BOTH, PROFILER };

static const struct {
    const char *name;
    int kind;
    long def, min, max;
    const char *values; /* CHOICE: the names, ", "-separated */
    int builds;
} settings[MT_SETTINGS] = {
#define MT_SETTING(id, kind, def, min, max, values, builds, summary) \
    [MT_SET_##id] = { "MEMTRACE_" #id, kind, def, min, max, values, builds },
#include "base/settings.def"
#undef MT_SETTING
};

_Static_assert(256 == MT_MAX_DEPTH, "settings.def: MEMTRACE_DEPTH's maximum is MT_MAX_DEPTH");

mt_config mt_cfg = { .depth = 64, .freed = 65536, .start = 1, .history = 3, .error_exitcode = 1 };

/* A secure-exec process (setuid, setgid, file capabilities: the kernel
 * sets AT_SECURE) runs with privileges its user lacks, while its
 * environment is the user's: every MEMTRACE_* setting there is ignored,
 * as glibc ignores MALLOC_* (a path setting would otherwise create or
 * truncate files wherever the program's privileges reach). */
static bool secure_exec(void)
{
    return getauxval(AT_SECURE) != 0;
}

const char *mt_setting_env(const char *name)
{
    return secure_exec() ? NULL : getenv(name);
}

const char *mt_setting_name(int id)
{
    return settings[id].name;
}

int mt_setting_profiler_only(int id)
{
    return settings[id].builds == PROFILER;
}

long mt_setting_long(int id)
{
    const char *name = settings[id].name;
    long def = settings[id].def, min = settings[id].min, max = settings[id].max;
    const char *s = mt_setting_env(name);
    if (!s)
        return def;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    while (*end == ' ' || *end == '\t')
        end++;
    if (*s == '\0' || *end != '\0' || errno == ERANGE || v < min || v > max) {
        mt_warn("%s=\"%s\" is not a whole number from %ld to %ld; using %ld", name, s, min, max,
                def);
        return def;
    }
    return v;
}

/* The working directory at start-up (mt_config_load), where a relative
 * path setting is resolved: the program may chdir before memtrace opens
 * the file (at exit, or at a report). Empty when it could not be read; a
 * relative path then stays relative. */
static char start_cwd[4096];
static bool cwd_taken;

static void take_cwd(void)
{
    cwd_taken = true;
    if (!getcwd(start_cwd, sizeof start_cwd) || start_cwd[0] != '/')
        start_cwd[0] = '\0';
}

/* Whether the reader of path setting ID expands % in it (mt_path_expand):
 * a % of the directory prefixed to a relative one is then written %%. */
static bool path_expanded(int id)
{
    return id != MT_SET_SUPPRESSIONS;
}

/* Setting ID's entry in environ pointed at "NAME=PATH" (PATH: the setting
 * resolved): a program this process execs after a chdir finds the path
 * of start-up. In place, as children_env.c edits environ: no heap, environ
 * not grown; the program's own setenv and getenv go on working on it. The
 * entry is mapped for the purpose (kept for the process's life), not a
 * static buffer: a relative path is rare, and a program that fills its
 * address space (ulimit -v) should not lose it to memtrace's data. */
static void put_in_environ(int id, const char *path)
{
    const char *name = settings[id].name;
    size_t len = strlen(name), size = len + 1 + strlen(path) + 1;
    char *entry = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (entry == MAP_FAILED)
        return;
    snprintf(entry, size, "%s=%s", name, path);
    for (char **e = environ; e && *e; e++)
        if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
            *e = entry;
}

const char *mt_setting_path(int id, char *buf, size_t size, const char *fallback)
{
    const char *s = mt_setting_env(settings[id].name);
    if (!s || !*s)
        return NULL;
    if (!cwd_taken)
        take_cwd();
    size_t n = 0, len = strlen(s);
    bool fits = true;
    if (s[0] != '/' && start_cwd[0]) {
        for (const char *c = start_cwd; *c && fits; c++) {
            bool twice = *c == '%' && path_expanded(id);
            fits = n + 1 + twice < size;
            if (fits) {
                buf[n++] = *c;
                if (twice)
                    buf[n++] = '%';
            }
        }
        if (fits && n > 1) /* not after the root's own "/" */
            buf[n++] = '/';
    }
    if (!fits || n + len >= size) {
        mt_warn("%s is %zu bytes long%s, more than a path can be (%zu); %s", settings[id].name, len,
                n ? " with the start-up directory before it" : "", size - 1, fallback);
        return NULL;
    }
    memcpy(buf + n, s, len + 1);
    if (n)
        put_in_environ(id, buf);
    return buf;
}

/* Setting ID, a CHOICE: the index of its value among its names; its
 * default when unset, and after one warning when it is none of them. */
static int setting_choice(int id)
{
    const char *values = settings[id].values;
    int def = (int)settings[id].def;
    const char *s = mt_setting_env(settings[id].name);
    if (!s)
        return def;
    size_t len = strlen(s);
    const char *v = values;
    const char *def_name = values;
    size_t def_len = 0;
    for (int i = 0; *v; i++) {
        size_t n = strcspn(v, ",");
        if (i == def) {
            def_name = v;
            def_len = n;
        }
        if (n == len && len && strncmp(v, s, n) == 0)
            return i;
        v += n;
        while (*v == ',' || *v == ' ')
            v++;
    }
    mt_warn("%s=\"%s\" is not one of %s; using %.*s", settings[id].name, s, values, (int)def_len,
            def_name);
    return def;
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

int mt_config_signal(int id, const char *none)
{
    const char *name = settings[id].name;
    const char *s = mt_setting_env(name);
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

/* Setting ID, a COUNT_OR_ALL: "all" is 0xffffffff. MEMTRACE_HISTORY's
 * default, 3, is format.h's MT_HISTORY_DEFAULT, which config.c, a lower
 * layer, does not include; its maximum, 2^26, the freed history's largest
 * size. */
static unsigned count_or_all_setting(int id)
{
    const char *name = settings[id].name;
    long def = settings[id].def, min = settings[id].min, max = settings[id].max;
    const char *s = mt_setting_env(name);
    if (!s)
        return (unsigned)def;
    if (strcmp(s, "all") == 0)
        return 0xffffffffu;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno == ERANGE || v < min || v > max) {
        mt_warn("%s=\"%s\" is not all or a whole number from %ld to %ld; using %ld", name, s, min,
                max, def);
        return (unsigned)def;
    }
    return (unsigned)v;
}

/* Whether environ names any MEMTRACE_ variable (memtrace's own internal
 * ones start with an underscore). */
static bool any_setting_set(void)
{
    for (char **e = environ; e && *e; e++)
        if (strncmp(*e, "MEMTRACE_", 9) == 0)
            return true;
    return false;
}

void mt_config_load(void)
{
    take_cwd();
    if (secure_exec() && any_setting_set())
        mt_warn("this program runs with privileges its user lacks (setuid, setgid or file "
                "capabilities): every MEMTRACE_* setting is ignored");
    mt_cfg.unwind = setting_choice(MT_SET_UNWIND);
    mt_cfg.depth = (unsigned)mt_setting_long(MT_SET_DEPTH);
    mt_cfg.freed = (size_t)mt_setting_long(MT_SET_FREED);
    mt_cfg.bad_free = setting_choice(MT_SET_BAD_FREE);
    mt_cfg.leak_check = (int)mt_setting_long(MT_SET_LEAK_CHECK);
    mt_cfg.leak_exitcode = (int)mt_setting_long(MT_SET_LEAK_EXITCODE);
    mt_cfg.start = (int)mt_setting_long(MT_SET_START);
    mt_cfg.history = count_or_all_setting(MT_SET_HISTORY);
    mt_cfg.redzone = (size_t)mt_setting_long(MT_SET_REDZONE);
    mt_cfg.quarantine = (size_t)mt_setting_long(MT_SET_QUARANTINE);
    mt_cfg.on_error = setting_choice(MT_SET_ON_ERROR);
    mt_cfg.error_exitcode = (int)mt_setting_long(MT_SET_ERROR_EXITCODE);
    mt_cfg.sample = (size_t)mt_setting_long(MT_SET_SAMPLE);
    mt_cfg.sample_seed = (unsigned long)mt_setting_long(MT_SET_SAMPLE_SEED);
    /* Sampling's default quarantine is none: holding even a few KiB of
     * sampled blocks pins glibc's heap top where the program's frees
     * would have let it shrink (sqlite3's peak, 4 KiB held: 1.2 MB more),
     * which always-on sampling cannot afford. Set, it is as asked. */
    if (mt_cfg.sample && !mt_setting_env(mt_setting_name(MT_SET_QUARANTINE)))
        mt_cfg.quarantine = 0;
    mt_cfg.symbolize = setting_choice(MT_SET_SYMBOLIZE);
}

void mt_config_profiler(mt_profiler_config *out)
{
    out->interval_ms = mt_setting_long(MT_SET_INTERVAL_MS);
    out->top = mt_setting_long(MT_SET_TOP);
    out->exit_top = mt_setting_long(MT_SET_EXIT_TOP);
    out->top_by = setting_choice(MT_SET_TOP_BY);
}
