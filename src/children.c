/* MEMTRACE_CHILDREN=0: this process only. Before the program's main, the
 * memtrace entries leave LD_PRELOAD in the process's own environment, so
 * that whatever it starts (exec*, posix_spawn, system, popen, a shell that
 * copies its environment into its variables) runs untraced.
 *
 * Why the environment at start-up rather than interposing the exec family:
 * glibc's system and popen start their shell through internal calls that
 * no interposed execve or posix_spawn sees, and a shell (the usual wrapper
 * script) builds each child's environment from its own variables, which it
 * imported from environ before main; editing environ once catches every
 * way out, costs nothing per exec, and interposes nothing more. The price:
 * the program itself no longer sees memtrace in getenv("LD_PRELOAD")
 * (README, MEMTRACE_CHILDREN). The other LD_PRELOAD entries stay, in
 * order; the MEMTRACE_* settings stay too (without the library nothing
 * reads them, and the program's view of its environment changes least). */
#include "children.h"

#include "config.h"

#include <stdbool.h>
#include <string.h>
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

/* Rewrites the list VALUE (entries separated by ':' or ' ', as ld.so reads
 * it) in place without the memtrace entries, the others kept in order
 * with ':' between them; it only gets shorter. */
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
        if (len == 0 || is_memtrace(start, len))
            continue;
        if (out != value)
            *out++ = ':';
        memmove(out, start, len);
        out += len;
    }
    *out = '\0';
}

void mt_children_untrace(void)
{
    if (mt_config_long("MEMTRACE_CHILDREN", 1, 0, 1) != 0 || !environ)
        return;
    size_t i = 0;
    while (environ[i]) {
        char *e = environ[i];
        if (strncmp(e, "LD_PRELOAD=", 11) == 0) {
            drop_entries(e + 11);
            if (e[11] == '\0') { /* nothing left: the variable goes */
                for (size_t j = i; environ[j]; j++)
                    environ[j] = environ[j + 1];
                continue;
            }
        }
        i++;
    }
}
