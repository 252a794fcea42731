/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* MEMTRACE_CHILDREN=0: this process only. "This process" is the process
 * the program starts in, across the execs it makes itself (a wrapper
 * script that ends in `exec prog` hands the tracing on to prog); the
 * processes it starts (fork, posix_spawn, system, popen) run untraced.
 *
 * Two halves. Before the program's main, the memtrace entries leave
 * LD_PRELOAD in the process's own environment: whatever starts a child
 * with that environment (glibc's system and popen through internal calls
 * no interposed function sees; a shell, which copies its environment into
 * its variables before main and builds each child's from them) starts it
 * untraced, at no cost per call. And the exec family is interposed (the
 * thin names in interpose.c): an exec made by the process itself (its pid
 * is still the one it started with, so not a forked or vforked child) gets
 * the entries back in front of its LD_PRELOAD, with MEMTRACE_CHILDREN=0.
 * Interposing the exec family alone would miss system, popen and shells;
 * editing the environment alone would lose the program a wrapper execs.
 *
 * The price: the program no longer sees memtrace in getenv("LD_PRELOAD")
 * (README, MEMTRACE_CHILDREN). The other LD_PRELOAD entries stay, in
 * order; the MEMTRACE_* settings stay too (without the library nothing
 * reads them, and the program's view of its environment changes least). */
#include "runtime/children.h"

#include "base/common.h"
#include "base/config.h"
#include "base/os.h"
#include "base/reentry.h"
#include "base/upcalls.h"
#include "timeline/timeline.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

extern char **environ;

/* Whether the LD_PRELOAD entry S (LEN bytes) names a memtrace library. */
static bool is_memtrace(const char *s, size_t len)
{
    const char *base = s;
    for (size_t i = 0; i < len; i++)
        if (s[i] == '/')
            base = s + i + 1;
    size_t blen = len - (size_t)(base - s);
    return (blen == 14 && memcmp(base, "libmemtrace.so", 14) == 0) ||
           (blen == 23 && memcmp(base, "libmemtrace-profiler.so", 23) == 0);
}

/* The memtrace entries taken out of LD_PRELOAD, ':'-separated, and the
 * pid of the process they were taken out in; set once before main. An
 * empty list: MEMTRACE_CHILDREN is not 0, execs are left alone. */
static char kept[4096];
static size_t kept_len;
static pid_t own_pid;

static void keep_entry(const char *s, size_t len)
{
    if (kept_len + len + 1 >= sizeof kept)
        return; /* an absurd LD_PRELOAD: that entry is not handed on */
    if (kept_len)
        kept[kept_len++] = ':';
    memcpy(kept + kept_len, s, len);
    kept_len += len;
    kept[kept_len] = '\0';
}

/* Rewrites the list VALUE (entries separated by ':' or ' ', as ld.so reads
 * it) in place without the memtrace entries (kept), the others kept in
 * order with ':' between them; it only gets shorter. */
static void drop_entries(char *value)
{
    char *out = value;
    const char *p = value;
    while (*p) {
        while (*p == ':' || *p == ' ')
            p++;
        const char *start = p;
        while (*p && *p != ':' && *p != ' ')
            p++;
        size_t len = (size_t)(p - start);
        if (len == 0)
            continue;
        if (is_memtrace(start, len)) {
            keep_entry(start, len);
            continue;
        }
        if (out != value)
            *out++ = ':';
        memmove(out, start, len);
        out += len;
    }
    /* The bytes the list no longer uses are cleared too: /proc/PID/environ
     * shows the whole original area, and would show the tail of the old
     * list as an entry of its own (which a process that re-reads it to
     * start a copy of itself would pass on). */
    memset(out, 0, (size_t)(p - out) + 1);
}

void mt_children_untrace(void)
{
    if (mt_setting_long(MT_SET_CHILDREN) != 0 || !environ)
        return;
    own_pid = getpid();
    size_t i = 0;
    while (environ[i]) {
        char *e = environ[i];
        if (strncmp(e, "LD_PRELOAD=", 11) == 0) {
            drop_entries(e + 11);
            if (e[11] == '\0') { /* nothing left: the variable goes */
                memset(e, 0, 11);
                for (size_t j = i; environ[j]; j++)
                    environ[j] = environ[j + 1];
                continue;
            }
        }
        i++;
    }
}

/* ------------------------------------------------------------ exec */

typedef int (*exec_path_fn)(const char *, char *const[], char *const[]);
typedef int (*exec_fd_fn)(int, char *const[], char *const[]);
#define EXEC_FUNCS(X) X(execve, exec_path_fn) X(execvpe, exec_path_fn) X(fexecve, exec_fd_fn)

#define EXEC_POINTER(name, type) static type real_##name;
EXEC_FUNCS(EXEC_POINTER)
#undef EXEC_POINTER

/* The next definitions, looked up before main (dlsym may allocate: inside
 * memtrace, from the internal heap) or, for an exec made before that, on
 * first use. Racing lookups store the same values. */
void mt_children_lookup(void)
{
    int was = mt_enter();
#define EXEC_LOOKUP(name, type) \
    if (!real_##name)           \
        real_##name = (type)dlsym(RTLD_NEXT, #name);
    EXEC_FUNCS(EXEC_LOOKUP)
#undef EXEC_LOOKUP
    mt_leave(was);
}

/* The environment an exec of this process passes on: ENVP itself, or,
 * when MEMTRACE_CHILDREN=0 took memtrace out and this is still the
 * process that started (not a child: vfork's shares memory, so nothing
 * may be allocated there, and it has another pid), a copy in a mapping
 * of its own (*MAP, *MAP_SIZE, unmapped by the caller if the exec
 * returns) with the kept entries in front of LD_PRELOAD and
 * MEMTRACE_CHILDREN=0. ENVP when the copy cannot be made. */
static char *const *exec_env(char *const envp[], void **map, size_t *map_size)
{
    *map = NULL;
    if (kept_len == 0 || getpid() != own_pid)
        return envp;
    /* ld.so reads the last LD_PRELOAD entry of the environment (a later one
     * replaces an earlier one): that one's list follows the kept entries,
     * the others are left out. Its length is taken once, and the copy is
     * bounded by it, so an entry changed meanwhile cannot overrun it. */
    size_t n = 0, last = SIZE_MAX;
    for (; envp && envp[n]; n++)
        if (strncmp(envp[n], "LD_PRELOAD=", 11) == 0)
            last = n;
    size_t preload_len = last == SIZE_MAX ? 0 : strlen(envp[last] + 11);
    size_t strings = 11 + kept_len + 1 + preload_len + 1 + sizeof "MEMTRACE_CHILDREN=0";
    size_t size = (n + 3) * sizeof(char *) + strings;
    char **env = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (env == MAP_FAILED)
        return envp;
    char *preload = (char *)(env + n + 3);
    char *children = preload + 11 + kept_len + 1 + preload_len + 1;
    char *end = preload;
    memcpy(end, "LD_PRELOAD=", 11);
    end += 11;
    memcpy(end, kept, kept_len);
    end += kept_len;
    if (preload_len) {
        *end++ = ':';
        memcpy(end, envp[last] + 11, preload_len);
        end += preload_len;
    }
    *end = '\0';
    memcpy(children, "MEMTRACE_CHILDREN=0", sizeof "MEMTRACE_CHILDREN=0");
    size_t m = 0;
    env[m++] = preload;
    env[m++] = children;
    for (size_t i = 0; i < n; i++)
        if (strncmp(envp[i], "LD_PRELOAD=", 11) != 0 &&
            strncmp(envp[i], "MEMTRACE_CHILDREN=", 18) != 0)
            env[m++] = envp[i];
    env[m] = NULL;
    *map = env;
    *map_size = size;
    return env;
}

/* Runs EXEC (a call of a real exec function with ENV) with the environment
 * exec_env makes of ENVP; returns what it returns, with its errno. */
#define WITH_EXEC_ENV(envp, env, call)                                                    \
    do {                                                                                  \
        void *map_;                                                                       \
        size_t size_;                                                                     \
        /* NOLINTNEXTLINE(bugprone-macro-parentheses): ENV names the variable declared */ \
        char *const *env = exec_env((envp), &map_, &size_);                               \
        mt_tl_sync();                                                                     \
        int rc_ = (call);                                                                 \
        int err_ = errno;                                                                 \
        if (map_)                                                                         \
            munmap(map_, size_);                                                          \
        errno = err_;                                                                     \
        return rc_;                                                                       \
    } while (0)

int mt_execve(const char *path, char *const argv[], char *const envp[])
{
    if (!real_execve)
        mt_children_lookup();
    if (!real_execve) {
        errno = ENOSYS;
        return -1;
    }
    WITH_EXEC_ENV(envp, env, real_execve(path, argv, env));
}

int mt_execvpe(const char *file, char *const argv[], char *const envp[])
{
    if (!real_execvpe)
        mt_children_lookup();
    if (!real_execvpe) {
        errno = ENOSYS;
        return -1;
    }
    WITH_EXEC_ENV(envp, env, real_execvpe(file, argv, env));
}

int mt_fexecve(int fd, char *const argv[], char *const envp[])
{
    if (!real_fexecve)
        mt_children_lookup();
    if (!real_fexecve) {
        errno = ENOSYS;
        return -1;
    }
    WITH_EXEC_ENV(envp, env, real_fexecve(fd, argv, env));
}
