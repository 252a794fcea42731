/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the interposed names' bodies (capture/interposed.def) need beyond a
 * call: the variadic forms' arguments unpacked (prctl's words, the execl
 * forms' list), and the list's classes. Inline, used by interpose.c
 * alone but for the classes (runtime/attach.c). */
#ifndef MT_INTERPOSE_H
#define MT_INTERPOSE_H

#include "base/upcalls.h"
#include "store/threads.h"

#include <stdarg.h>
#include <stddef.h>

/* interpose.def's CLASS column as values (MT_IP_##CLASS). */
enum { MT_IP_ALLOC, MT_IP_FREE, MT_IP_OTHER, MT_IP_EXEC };

/* A variadic row's BODY: AP is the arguments after LAST, for CALL (an int). */
#define MT_INTERPOSE_VA(last, call) \
    va_list ap;                     \
    va_start(ap, last);             \
    int mt_va_ret = (call);         \
    va_end(ap);                     \
    return mt_va_ret

/* prctl's four more words, read as glibc's own prctl reads them. */
static inline int mt_prctl_va(int option, va_list ap)
{
    unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
    unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
    return mt_prctl(option, a2, a3, a4, a5);
}

/* Which execl form: execl (a path), execlp (a file searched in PATH),
 * execle (a path, and the environment after the list's NULL). */
enum { MT_EXECL_PATH, MT_EXECL_SEARCH, MT_EXECL_ENV };

/* An execl form: ARG0 and the arguments in AP up to the NULL into an
 * array on the stack, then execve or execvpe of FILE with it (FORM). */
static inline int mt_execl_va(const char *file, const char *arg0, va_list ap, int form)
{
    extern char **environ;
    va_list count;
    size_t n = 1;
    va_copy(count, ap);
    while (va_arg(count, const char *))
        n++;
    va_end(count);
    const char *argv[n + 1];
    argv[0] = arg0;
    for (size_t i = 1; i <= n; i++)
        argv[i] = va_arg(ap, const char *); /* the last is the NULL */
    char *const *envp = form == MT_EXECL_ENV ? va_arg(ap, char *const *) : environ;
    if (form == MT_EXECL_SEARCH)
        return mt_execvpe(file, (char *const *)argv, envp);
    return mt_execve(file, (char *const *)argv, envp);
}

#endif
