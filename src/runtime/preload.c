/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The names memtrace interposes when preloaded: libc's allocator, the C++
 * operators (by their mangled names), jemalloc's and tcmalloc's extended
 * APIs, C23's sized frees. Only forwarding lives here; the logic is in
 * tracer.c. strdup and the rest of libc reach these through the PLT. This
 * file is built with -fexceptions: std::bad_alloc may pass through it.
 * interposed.h lists every name defined here, with its class, for
 * `memtrace attach` (attach.c): a name added here goes there too
 * (tests/static/interposed.py checks). */
#include "base/common.h"
#include "capture/state.h"
#include "capture/sample_fast.h"
#include "capture/entry_points.h"
#include "runtime/children.h"
#include "runtime/guard_signal.h"
#include "runtime/startup.h"
#include "store/live_table.h"
#include "store/modules.h"
#include "store/threads.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

/* Sample mode's fast path first (capture/sample_fast.h), then the general one. */
MT_EXPORT void *malloc(size_t size)
{
    if (MT_LIKELY(mt_fast_alloc_ok(size)))
        return mt_fast_malloc(size);
    return mt_malloc(size);
}
MT_EXPORT void free(void *ptr)
{
    if (MT_LIKELY(mt_fast_free(ptr)))
        return;
    mt_free(ptr);
}
MT_EXPORT void *calloc(size_t n, size_t size)
{
    size_t total;
    if (MT_LIKELY(!__builtin_mul_overflow(n, size, &total) && mt_fast_alloc_ok(total)))
        return mt_fast_calloc(total);
    return mt_calloc(n, size);
}
MT_EXPORT void *realloc(void *ptr, size_t size) { return mt_realloc(ptr, size); }
MT_EXPORT void *reallocarray(void *ptr, size_t n, size_t size) { return mt_reallocarray(ptr, n, size); }
MT_EXPORT int posix_memalign(void **out, size_t align, size_t size) { return mt_posix_memalign(out, align, size); }
MT_EXPORT void *aligned_alloc(size_t align, size_t size) { return mt_aligned_alloc(align, size); }
MT_EXPORT void *memalign(size_t align, size_t size) { return mt_memalign(align, size); }
MT_EXPORT void *valloc(size_t size) { return mt_valloc(size); }
MT_EXPORT void *pvalloc(size_t size) { return mt_pvalloc(size); }
MT_EXPORT size_t malloc_usable_size(void *ptr) { return mt_malloc_usable_size(ptr); }
/* glibc's exported aliases of its allocator, which programs and libraries
 * call by these names (as ASan and valgrind, memtrace takes them too): a
 * block from __libc_malloc is any malloc's, freed by free and the reverse.
 * glibc's own calls inside libc do not come through here. */
void *__libc_malloc(size_t size);
void __libc_free(void *ptr);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *ptr, size_t size);
void *__libc_memalign(size_t align, size_t size);
void *__libc_valloc(size_t size);
void *__libc_pvalloc(size_t size);
MT_EXPORT void *__libc_malloc(size_t size) { return mt_malloc(size); }
MT_EXPORT void __libc_free(void *ptr) { mt_free(ptr); }
MT_EXPORT void *__libc_calloc(size_t n, size_t size) { return mt_calloc(n, size); }
MT_EXPORT void *__libc_realloc(void *ptr, size_t size) { return mt_realloc(ptr, size); }
MT_EXPORT void *__libc_memalign(size_t align, size_t size) { return mt_memalign(align, size); }
MT_EXPORT void *__libc_valloc(size_t size) { return mt_valloc(size); }
MT_EXPORT void *__libc_pvalloc(size_t size) { return mt_pvalloc(size); }
MT_EXPORT int dlclose(void *handle) { return mt_dlclose(handle); }
MT_EXPORT int pthread_setname_np(pthread_t thread, const char *name) { return mt_pthread_setname(thread, name); }
MT_EXPORT int unshare(int flags) { return mt_unshare(flags); }
MT_EXPORT int setns(int fd, int nstype) { return mt_setns(fd, nstype); }
/* SIGSEGV's action is the program's behind the guard pages' handler (guard_signal.c). */
MT_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) { return mt_sigaction(sig, act, old); }
MT_EXPORT __sighandler_t signal(int sig, __sighandler_t handler) { return mt_signal(sig, handler); }
/* signal.h declares bsd_signal only for old X/Open levels. */
__sighandler_t bsd_signal(int sig, __sighandler_t handler);
MT_EXPORT __sighandler_t bsd_signal(int sig, __sighandler_t handler) { return mt_bsd_signal(sig, handler); }
MT_EXPORT __sighandler_t sysv_signal(int sig, __sighandler_t handler) { return mt_sysv_signal(sig, handler); }
MT_EXPORT __sighandler_t __sysv_signal(int sig, __sighandler_t handler) { return mt_sysv_signal(sig, handler); }
/* signal.h declares these for X/Open only (and as deprecated). */
__sighandler_t sigset(int sig, __sighandler_t disp);
int sigignore(int sig);
MT_EXPORT __sighandler_t sigset(int sig, __sighandler_t disp) { return mt_sigset(sig, disp); }
MT_EXPORT int sigignore(int sig) { return mt_sigignore(sig); }
/* Variadic as libc declares it; glibc's own reads four more words the same way. */
MT_EXPORT int prctl(int option, ...)
{
    va_list ap;
    va_start(ap, option);
    unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
    unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
    va_end(ap);
    return mt_prctl(option, a2, a3, a4, a5);
}

/* The exec family (MEMTRACE_CHILDREN, children.c). glibc's execv, execvp
 * and execl* call its execve internally, out of reach: each is here. */
extern char **environ;
MT_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) { return mt_execve(path, argv, envp); }
MT_EXPORT int execv(const char *path, char *const argv[]) { return mt_execve(path, argv, environ); }
MT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) { return mt_execvpe(file, argv, envp); }
MT_EXPORT int execvp(const char *file, char *const argv[]) { return mt_execvpe(file, argv, environ); }
MT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) { return mt_fexecve(fd, argv, envp); }

/* The execl forms: ARG0 and the arguments up to the NULL (then, for
 * execle, the environment) into an array on the stack. */
#define EXECL_ARGV(argv, arg0, last)                                        \
    va_list ap;                                                             \
    size_t n_ = 1;                                                          \
    va_start(ap, last);                                                     \
    while (va_arg(ap, const char *))                                        \
        n_++;                                                               \
    va_end(ap);                                                             \
    const char *argv[n_ + 1]; /* NOLINT(bugprone-macro-parentheses): the arguments name variables */ \
    argv[0] = arg0; /* NOLINT(bugprone-macro-parentheses): the arguments name variables */ \
    va_start(ap, last);                                                     \
    for (size_t i_ = 1; i_ <= n_; i_++)                                     \
        argv[i_] = va_arg(ap, const char *) /* NOLINT(bugprone-macro-parentheses): the arguments name variables */

MT_EXPORT int execl(const char *path, const char *arg, ...)
{
    EXECL_ARGV(argv, arg, arg);
    va_end(ap);
    return mt_execve(path, (char *const *)argv, environ);
}

MT_EXPORT int execlp(const char *file, const char *arg, ...)
{
    EXECL_ARGV(argv, arg, arg);
    va_end(ap);
    return mt_execvpe(file, (char *const *)argv, environ);
}

MT_EXPORT int execle(const char *path, const char *arg, ...)
{
    EXECL_ARGV(argv, arg, arg);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return mt_execve(path, (char *const *)argv, envp);
}

/* Prototypes for the names no system header declares here (-Wmissing-prototypes). */
void *_Znwm(size_t n);
void *_ZnwmRKSt9nothrow_t(size_t n, const void *nt);
void *_ZnwmSt11align_val_t(size_t n, size_t al);
void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *nt);
void *_Znam(size_t n);
void *_ZnamRKSt9nothrow_t(size_t n, const void *nt);
void *_ZnamSt11align_val_t(size_t n, size_t al);
void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *nt);
void _ZdlPv(void *p);
void _ZdlPvm(void *p, size_t n);
void _ZdlPvSt11align_val_t(void *p, size_t al);
void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t al);
void _ZdlPvRKSt9nothrow_t(void *p, const void *nt);
void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *nt);
void _ZdaPv(void *p);
void _ZdaPvm(void *p, size_t n);
void _ZdaPvSt11align_val_t(void *p, size_t al);
void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t al);
void _ZdaPvRKSt9nothrow_t(void *p, const void *nt);
void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *nt);
void *mallocx(size_t n, int flags);
void *rallocx(void *p, size_t n, int flags);
size_t xallocx(void *p, size_t n, size_t extra, int flags);
size_t sallocx(const void *p, int flags);
size_t nallocx(size_t n, int flags);
void dallocx(void *p, int flags);
void sdallocx(void *p, size_t n, int flags);
void free_sized(void *p, size_t n);
void free_aligned_sized(void *p, size_t al, size_t n);
void *tc_malloc(size_t n);
void tc_free(void *p);
void tc_cfree(void *p);
void tc_free_sized(void *p, size_t n);
void *tc_calloc(size_t n, size_t size);
void *tc_realloc(void *p, size_t n);
void *tc_memalign(size_t al, size_t n);
int tc_posix_memalign(void **out, size_t al, size_t n);
void *tc_valloc(size_t n);
void *tc_pvalloc(size_t n);
void *tc_new(size_t n);
void *tc_new_nothrow(size_t n, const void *nt);
void *tc_new_aligned(size_t n, size_t al);
void *tc_new_aligned_nothrow(size_t n, size_t al, const void *nt);
void *tc_newarray(size_t n);
void *tc_newarray_nothrow(size_t n, const void *nt);
void *tc_newarray_aligned(size_t n, size_t al);
void *tc_newarray_aligned_nothrow(size_t n, size_t al, const void *nt);
void tc_delete(void *p);
void tc_delete_sized(void *p, size_t n);
void tc_delete_aligned(void *p, size_t al);
void tc_delete_sized_aligned(void *p, size_t n, size_t al);
void tc_delete_nothrow(void *p, const void *nt);
void tc_delete_aligned_nothrow(void *p, size_t al, const void *nt);
void tc_deletearray(void *p);
void tc_deletearray_sized(void *p, size_t n);
void tc_deletearray_aligned(void *p, size_t al);
void tc_deletearray_sized_aligned(void *p, size_t n, size_t al);
void tc_deletearray_nothrow(void *p, const void *nt);
void tc_deletearray_aligned_nothrow(void *p, size_t al, const void *nt);

/* C++ operator new, new[], delete, delete[]: std::align_val_t is passed as
 * a size_t, const std::nothrow_t & as a pointer. The forms that are
 * libstdc++'s malloc and free take sample mode's fast path first. */
MT_EXPORT void *_Znwm(size_t n) { void *p = mt_fast_new(n, MT_KIND_NEW); return p ? p : mt_new(n, 0, NULL, MT_OP(MT_X_NEW, 0, MT_KIND_NEW)); }
MT_EXPORT void *_ZnwmRKSt9nothrow_t(size_t n, const void *nt) { void *p = mt_fast_new(n, MT_KIND_NEW); return p ? p : mt_new(n, 0, nt, MT_OP(MT_X_NEW_NT, MT_FORM_NOTHROW, MT_KIND_NEW)); }
MT_EXPORT void *_ZnwmSt11align_val_t(size_t n, size_t al) { return mt_new(n, al, NULL, MT_OP(MT_X_NEW_AL, MT_FORM_ALIGNED, MT_KIND_NEW)); }
MT_EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *nt) { return mt_new(n, al, nt, MT_OP(MT_X_NEW_AL_NT, MT_FORM_ALIGNED | MT_FORM_NOTHROW, MT_KIND_NEW)); }
MT_EXPORT void *_Znam(size_t n) { void *p = mt_fast_new(n, MT_KIND_NEW_ARRAY); return p ? p : mt_new(n, 0, NULL, MT_OP(MT_X_NEWA, 0, MT_KIND_NEW_ARRAY)); }
MT_EXPORT void *_ZnamRKSt9nothrow_t(size_t n, const void *nt) { void *p = mt_fast_new(n, MT_KIND_NEW_ARRAY); return p ? p : mt_new(n, 0, nt, MT_OP(MT_X_NEWA_NT, MT_FORM_NOTHROW, MT_KIND_NEW_ARRAY)); }
MT_EXPORT void *_ZnamSt11align_val_t(size_t n, size_t al) { return mt_new(n, al, NULL, MT_OP(MT_X_NEWA_AL, MT_FORM_ALIGNED, MT_KIND_NEW_ARRAY)); }
MT_EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *nt) { return mt_new(n, al, nt, MT_OP(MT_X_NEWA_AL_NT, MT_FORM_ALIGNED | MT_FORM_NOTHROW, MT_KIND_NEW_ARRAY)); }
MT_EXPORT void _ZdlPv(void *p) { if (!mt_fast_delete(p)) mt_delete(p, 0, 0, NULL, MT_OP(MT_X_DEL, 0, MT_KIND_NEW)); }
MT_EXPORT void _ZdlPvm(void *p, size_t n) { if (!mt_fast_delete(p)) mt_delete(p, n, 0, NULL, MT_OP(MT_X_DEL_SZ, MT_FORM_SIZED, MT_KIND_NEW)); }
MT_EXPORT void _ZdlPvSt11align_val_t(void *p, size_t al) { mt_delete(p, 0, al, NULL, MT_OP(MT_X_DEL_AL, MT_FORM_ALIGNED, MT_KIND_NEW)); }
MT_EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t al) { mt_delete(p, n, al, NULL, MT_OP(MT_X_DEL_SZ_AL, MT_FORM_SIZED | MT_FORM_ALIGNED, MT_KIND_NEW)); }
MT_EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const void *nt) { if (!mt_fast_delete(p)) mt_delete(p, 0, 0, nt, MT_OP(MT_X_DEL_NT, MT_FORM_NOTHROW, MT_KIND_NEW)); }
MT_EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *nt) { mt_delete(p, 0, al, nt, MT_OP(MT_X_DEL_AL_NT, MT_FORM_ALIGNED | MT_FORM_NOTHROW, MT_KIND_NEW)); }
MT_EXPORT void _ZdaPv(void *p) { if (!mt_fast_delete(p)) mt_delete(p, 0, 0, NULL, MT_OP(MT_X_DELA, 0, MT_KIND_NEW_ARRAY)); }
MT_EXPORT void _ZdaPvm(void *p, size_t n) { if (!mt_fast_delete(p)) mt_delete(p, n, 0, NULL, MT_OP(MT_X_DELA_SZ, MT_FORM_SIZED, MT_KIND_NEW_ARRAY)); }
MT_EXPORT void _ZdaPvSt11align_val_t(void *p, size_t al) { mt_delete(p, 0, al, NULL, MT_OP(MT_X_DELA_AL, MT_FORM_ALIGNED, MT_KIND_NEW_ARRAY)); }
MT_EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t al) { mt_delete(p, n, al, NULL, MT_OP(MT_X_DELA_SZ_AL, MT_FORM_SIZED | MT_FORM_ALIGNED, MT_KIND_NEW_ARRAY)); }
MT_EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const void *nt) { if (!mt_fast_delete(p)) mt_delete(p, 0, 0, nt, MT_OP(MT_X_DELA_NT, MT_FORM_NOTHROW, MT_KIND_NEW_ARRAY)); }
MT_EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *nt) { mt_delete(p, 0, al, nt, MT_OP(MT_X_DELA_AL_NT, MT_FORM_ALIGNED | MT_FORM_NOTHROW, MT_KIND_NEW_ARRAY)); }

/* jemalloc */
MT_EXPORT void *mallocx(size_t n, int flags) { return mt_mallocx(n, flags); }
MT_EXPORT void *rallocx(void *p, size_t n, int flags) { return mt_rallocx(p, n, flags); }
MT_EXPORT size_t xallocx(void *p, size_t n, size_t extra, int flags) { return mt_xallocx(p, n, extra, flags); }
MT_EXPORT size_t sallocx(const void *p, int flags) { return mt_sallocx(p, flags); }
MT_EXPORT size_t nallocx(size_t n, int flags) { return mt_nallocx(n, flags); }
MT_EXPORT void dallocx(void *p, int flags) { mt_dallocx(p, flags); }
MT_EXPORT void sdallocx(void *p, size_t n, int flags) { mt_sdallocx(p, n, flags); }

/* C23 */
MT_EXPORT void free_sized(void *p, size_t n) { mt_free_sized(p, n); }
MT_EXPORT void free_aligned_sized(void *p, size_t al, size_t n) { mt_free_aligned_sized(p, al, n); }

/* tcmalloc (gperftools) */
MT_EXPORT void *tc_malloc(size_t n) { return mt_tc_malloc(n); }
MT_EXPORT void tc_free(void *p) { mt_tc_free(p); }
MT_EXPORT void tc_cfree(void *p) { mt_tc_cfree(p); }
MT_EXPORT void tc_free_sized(void *p, size_t n) { mt_tc_free_sized(p, n); }
MT_EXPORT void *tc_calloc(size_t n, size_t size) { return mt_tc_calloc(n, size); }
MT_EXPORT void *tc_realloc(void *p, size_t n) { return mt_tc_realloc(p, n); }
MT_EXPORT void *tc_memalign(size_t al, size_t n) { return mt_tc_memalign(al, n); }
MT_EXPORT int tc_posix_memalign(void **out, size_t al, size_t n) { return mt_tc_posix_memalign(out, al, n); }
MT_EXPORT void *tc_valloc(size_t n) { return mt_tc_valloc(n); }
MT_EXPORT void *tc_pvalloc(size_t n) { return mt_tc_pvalloc(n); }
MT_EXPORT void *tc_new(size_t n) { return mt_new(n, 0, NULL, MT_OP(MT_X_TC_NEW, 0, MT_KIND_NEW)); }
MT_EXPORT void *tc_new_nothrow(size_t n, const void *nt) { return mt_new(n, 0, nt, MT_OP(MT_X_TC_NEW_NT, MT_FORM_NOTHROW, MT_KIND_NEW)); }
MT_EXPORT void *tc_new_aligned(size_t n, size_t al) { return mt_new(n, al, NULL, MT_OP(MT_X_TC_NEW_AL, MT_FORM_ALIGNED, MT_KIND_NEW)); }
MT_EXPORT void *tc_new_aligned_nothrow(size_t n, size_t al, const void *nt) { return mt_new(n, al, nt, MT_OP(MT_X_TC_NEW_AL_NT, MT_FORM_ALIGNED | MT_FORM_NOTHROW, MT_KIND_NEW)); }
MT_EXPORT void *tc_newarray(size_t n) { return mt_new(n, 0, NULL, MT_OP(MT_X_TC_NEWA, 0, MT_KIND_NEW_ARRAY)); }
MT_EXPORT void *tc_newarray_nothrow(size_t n, const void *nt) { return mt_new(n, 0, nt, MT_OP(MT_X_TC_NEWA_NT, MT_FORM_NOTHROW, MT_KIND_NEW_ARRAY)); }
MT_EXPORT void *tc_newarray_aligned(size_t n, size_t al) { return mt_new(n, al, NULL, MT_OP(MT_X_TC_NEWA_AL, MT_FORM_ALIGNED, MT_KIND_NEW_ARRAY)); }
MT_EXPORT void *tc_newarray_aligned_nothrow(size_t n, size_t al, const void *nt) { return mt_new(n, al, nt, MT_OP(MT_X_TC_NEWA_AL_NT, MT_FORM_ALIGNED | MT_FORM_NOTHROW, MT_KIND_NEW_ARRAY)); }
MT_EXPORT void tc_delete(void *p) { mt_delete(p, 0, 0, NULL, MT_OP(MT_X_TC_DEL, 0, MT_KIND_NEW)); }
MT_EXPORT void tc_delete_sized(void *p, size_t n) { mt_delete(p, n, 0, NULL, MT_OP(MT_X_TC_DEL_SZ, MT_FORM_SIZED, MT_KIND_NEW)); }
MT_EXPORT void tc_delete_aligned(void *p, size_t al) { mt_delete(p, 0, al, NULL, MT_OP(MT_X_TC_DEL_AL, MT_FORM_ALIGNED, MT_KIND_NEW)); }
MT_EXPORT void tc_delete_sized_aligned(void *p, size_t n, size_t al) { mt_delete(p, n, al, NULL, MT_OP(MT_X_TC_DEL_SZ_AL, MT_FORM_SIZED | MT_FORM_ALIGNED, MT_KIND_NEW)); }
MT_EXPORT void tc_delete_nothrow(void *p, const void *nt) { mt_delete(p, 0, 0, nt, MT_OP(MT_X_TC_DEL_NT, MT_FORM_NOTHROW, MT_KIND_NEW)); }
MT_EXPORT void tc_delete_aligned_nothrow(void *p, size_t al, const void *nt) { mt_delete(p, 0, al, nt, MT_OP(MT_X_TC_DEL_AL_NT, MT_FORM_ALIGNED | MT_FORM_NOTHROW, MT_KIND_NEW)); }
MT_EXPORT void tc_deletearray(void *p) { mt_delete(p, 0, 0, NULL, MT_OP(MT_X_TC_DELA, 0, MT_KIND_NEW_ARRAY)); }
MT_EXPORT void tc_deletearray_sized(void *p, size_t n) { mt_delete(p, n, 0, NULL, MT_OP(MT_X_TC_DELA_SZ, MT_FORM_SIZED, MT_KIND_NEW_ARRAY)); }
MT_EXPORT void tc_deletearray_aligned(void *p, size_t al) { mt_delete(p, 0, al, NULL, MT_OP(MT_X_TC_DELA_AL, MT_FORM_ALIGNED, MT_KIND_NEW_ARRAY)); }
MT_EXPORT void tc_deletearray_sized_aligned(void *p, size_t n, size_t al) { mt_delete(p, n, al, NULL, MT_OP(MT_X_TC_DELA_SZ_AL, MT_FORM_SIZED | MT_FORM_ALIGNED, MT_KIND_NEW_ARRAY)); }
MT_EXPORT void tc_deletearray_nothrow(void *p, const void *nt) { mt_delete(p, 0, 0, nt, MT_OP(MT_X_TC_DELA_NT, MT_FORM_NOTHROW, MT_KIND_NEW_ARRAY)); }
MT_EXPORT void tc_deletearray_aligned_nothrow(void *p, size_t al, const void *nt) { mt_delete(p, 0, al, nt, MT_OP(MT_X_TC_DELA_AL_NT, MT_FORM_ALIGNED | MT_FORM_NOTHROW, MT_KIND_NEW_ARRAY)); }
