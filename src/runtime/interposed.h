/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The names memtrace's library defines to stand in for the allocator's
 * (preload.c): one list, for every file that needs them by name. preload.c
 * defines each (their signatures differ, so by hand); attach.c redirects
 * the GOT entries of a running process's modules to them by this list;
 * tests/static/interposed.py fails when preload.c's definitions and this
 * list differ.
 *
 * X(NAME, CLASS), CLASS one of:
 *   MT_IP_ALLOC  hands out a block or answers about one (a new block's
 *                record is made here); attach redirects it while attached
 *   MT_IP_FREE   frees, resizes or measures a block (its record leaves,
 *                changes or is read here); attach keeps it redirected
 *                after a detach too, so that a block recorded while
 *                attached loses its record when it is freed later, and
 *                its usable size stays its size (its redzone is checked
 *                at that free) (attach.c)
 *   MT_IP_OTHER  memtrace's bookkeeping beside the allocator (dlclose,
 *                thread names, namespaces, SIGSEGV's action behind the
 *                guard pages); redirected while attached
 *   MT_IP_EXEC   the exec family (MEMTRACE_CHILDREN): never redirected by
 *                attach (children of an attached process are not traced) */
#ifndef MT_INTERPOSED_H
#define MT_INTERPOSED_H

enum { MT_IP_ALLOC, MT_IP_FREE, MT_IP_OTHER, MT_IP_EXEC };

#define MT_INTERPOSED(X)                                                      \
    X(malloc, MT_IP_ALLOC)                                                    \
    X(free, MT_IP_FREE)                                                       \
    X(calloc, MT_IP_ALLOC)                                                    \
    X(realloc, MT_IP_FREE)                                                    \
    X(reallocarray, MT_IP_FREE)                                               \
    X(posix_memalign, MT_IP_ALLOC)                                            \
    X(aligned_alloc, MT_IP_ALLOC)                                             \
    X(memalign, MT_IP_ALLOC)                                                  \
    X(valloc, MT_IP_ALLOC)                                                    \
    X(pvalloc, MT_IP_ALLOC)                                                   \
    X(malloc_usable_size, MT_IP_FREE)                                         \
    X(__libc_malloc, MT_IP_ALLOC)                                             \
    X(__libc_free, MT_IP_FREE)                                                \
    X(__libc_calloc, MT_IP_ALLOC)                                             \
    X(__libc_realloc, MT_IP_FREE)                                             \
    X(__libc_memalign, MT_IP_ALLOC)                                           \
    X(__libc_valloc, MT_IP_ALLOC)                                             \
    X(__libc_pvalloc, MT_IP_ALLOC)                                            \
    X(dlclose, MT_IP_OTHER)                                                   \
    X(pthread_setname_np, MT_IP_OTHER)                                        \
    X(unshare, MT_IP_OTHER)                                                   \
    X(setns, MT_IP_OTHER)                                                     \
    X(prctl, MT_IP_OTHER)                                                     \
    X(sigaction, MT_IP_OTHER)                                                 \
    X(signal, MT_IP_OTHER)                                                    \
    X(bsd_signal, MT_IP_OTHER)                                                \
    X(sysv_signal, MT_IP_OTHER)                                               \
    X(__sysv_signal, MT_IP_OTHER)                                             \
    X(sigset, MT_IP_OTHER)                                                    \
    X(sigignore, MT_IP_OTHER)                                                 \
    X(execve, MT_IP_EXEC)                                                     \
    X(execv, MT_IP_EXEC)                                                      \
    X(execvpe, MT_IP_EXEC)                                                    \
    X(execvp, MT_IP_EXEC)                                                     \
    X(fexecve, MT_IP_EXEC)                                                    \
    X(execl, MT_IP_EXEC)                                                      \
    X(execlp, MT_IP_EXEC)                                                     \
    X(execle, MT_IP_EXEC)                                                     \
    X(_Znwm, MT_IP_ALLOC)                                                     \
    X(_ZnwmRKSt9nothrow_t, MT_IP_ALLOC)                                       \
    X(_ZnwmSt11align_val_t, MT_IP_ALLOC)                                      \
    X(_ZnwmSt11align_val_tRKSt9nothrow_t, MT_IP_ALLOC)                        \
    X(_Znam, MT_IP_ALLOC)                                                     \
    X(_ZnamRKSt9nothrow_t, MT_IP_ALLOC)                                       \
    X(_ZnamSt11align_val_t, MT_IP_ALLOC)                                      \
    X(_ZnamSt11align_val_tRKSt9nothrow_t, MT_IP_ALLOC)                        \
    X(_ZdlPv, MT_IP_FREE)                                                     \
    X(_ZdlPvm, MT_IP_FREE)                                                    \
    X(_ZdlPvSt11align_val_t, MT_IP_FREE)                                      \
    X(_ZdlPvmSt11align_val_t, MT_IP_FREE)                                     \
    X(_ZdlPvRKSt9nothrow_t, MT_IP_FREE)                                       \
    X(_ZdlPvSt11align_val_tRKSt9nothrow_t, MT_IP_FREE)                        \
    X(_ZdaPv, MT_IP_FREE)                                                     \
    X(_ZdaPvm, MT_IP_FREE)                                                    \
    X(_ZdaPvSt11align_val_t, MT_IP_FREE)                                      \
    X(_ZdaPvmSt11align_val_t, MT_IP_FREE)                                     \
    X(_ZdaPvRKSt9nothrow_t, MT_IP_FREE)                                       \
    X(_ZdaPvSt11align_val_tRKSt9nothrow_t, MT_IP_FREE)                        \
    X(mallocx, MT_IP_ALLOC)                                                   \
    X(rallocx, MT_IP_FREE)                                                    \
    X(xallocx, MT_IP_FREE)                                                    \
    X(sallocx, MT_IP_FREE)                                                    \
    X(nallocx, MT_IP_ALLOC)                                                   \
    X(dallocx, MT_IP_FREE)                                                    \
    X(sdallocx, MT_IP_FREE)                                                   \
    X(free_sized, MT_IP_FREE)                                                 \
    X(free_aligned_sized, MT_IP_FREE)                                         \
    X(tc_malloc, MT_IP_ALLOC)                                                 \
    X(tc_free, MT_IP_FREE)                                                    \
    X(tc_cfree, MT_IP_FREE)                                                   \
    X(tc_free_sized, MT_IP_FREE)                                              \
    X(tc_calloc, MT_IP_ALLOC)                                                 \
    X(tc_realloc, MT_IP_FREE)                                                 \
    X(tc_memalign, MT_IP_ALLOC)                                               \
    X(tc_posix_memalign, MT_IP_ALLOC)                                         \
    X(tc_valloc, MT_IP_ALLOC)                                                 \
    X(tc_pvalloc, MT_IP_ALLOC)                                                \
    X(tc_new, MT_IP_ALLOC)                                                    \
    X(tc_new_nothrow, MT_IP_ALLOC)                                            \
    X(tc_new_aligned, MT_IP_ALLOC)                                            \
    X(tc_new_aligned_nothrow, MT_IP_ALLOC)                                    \
    X(tc_newarray, MT_IP_ALLOC)                                               \
    X(tc_newarray_nothrow, MT_IP_ALLOC)                                       \
    X(tc_newarray_aligned, MT_IP_ALLOC)                                       \
    X(tc_newarray_aligned_nothrow, MT_IP_ALLOC)                               \
    X(tc_delete, MT_IP_FREE)                                                  \
    X(tc_delete_sized, MT_IP_FREE)                                            \
    X(tc_delete_aligned, MT_IP_FREE)                                          \
    X(tc_delete_sized_aligned, MT_IP_FREE)                                    \
    X(tc_delete_nothrow, MT_IP_FREE)                                          \
    X(tc_delete_aligned_nothrow, MT_IP_FREE)                                  \
    X(tc_deletearray, MT_IP_FREE)                                             \
    X(tc_deletearray_sized, MT_IP_FREE)                                       \
    X(tc_deletearray_aligned, MT_IP_FREE)                                     \
    X(tc_deletearray_sized_aligned, MT_IP_FREE)                               \
    X(tc_deletearray_nothrow, MT_IP_FREE)                                     \
    X(tc_deletearray_aligned_nothrow, MT_IP_FREE)

#endif
