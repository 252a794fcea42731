/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Stop-the-world for a scan of the process's own memory (the leak check
 * at exit, src/leak/leak_check.c): every other thread is held in a signal
 * handler that saved its registers, stack pointer and thread pointer.
 *
 * Each task in /proc/self/task (registered with memtrace or not) gets a
 * real-time signal, with tgkill, whose handler saves the registers and
 * then waits on a futex until mt_world_resume. A thread blocked in a
 * system call (read, poll, a lock) runs the handler all the same;
 * SA_RESTART restarts the call afterwards, and the handler rewinds one the
 * kernel never restarts (nanosleep, pause, epoll_wait), so the program sees
 * nothing and no thread runs on because of the stop (main leaving its sleep
 * while another thread is in exit). Chosen over LeakSanitizer's ptrace-ing
 * child because ptrace is often refused (Yama, containers, a process
 * already being debugged), and over a forked copy because a fork has the
 * other threads' memory but not their registers. A thread that does not
 * arrive within half a second (it blocks the signal, or is exiting) stays
 * MT_WORLD_SENT: mt_world_syscall_sp may still give its stack pointer.
 *
 * Between mt_world_stop and mt_world_resume the caller must not wait for
 * anything a stopped thread may hold: no allocation, no loader lock
 * (dl_iterate_phdr, dlsym), no lock without a bound. Memory is mmap'ed,
 * once; one caller at a time (the exiting thread). */
#ifndef MT_STOP_WORLD_H
#define MT_STOP_WORLD_H

#include "base/atomic.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum {
    MT_WORLD_SENT,    /* signalled, not (yet) stopped */
    MT_WORLD_STOPPED, /* in the handler: the fields below are set */
    MT_WORLD_GONE,    /* gone on, gone, or nothing to scan (main after pthread_exit) */
};

typedef struct {
    pid_t tid;
    mt_atomic(int) state; /* MT_WORLD_* */
    /* The system call it waited in when signalled (see restart_call). */
    bool in_call;
    long nr;
    uintptr_t arg0, call_pc;
    uintptr_t sp, tp;
    unsigned nregs;
    uintptr_t regs[32]; /* the general registers as the handler's context has them */
} mt_world_thread;

/* Stops every thread of the process but the caller and those SKIP(TID)
 * is true for (memtrace's own, which hold no pointer of the program), and
 * waits up to half a second for them. False if the task list could not be
 * read or no signal was free: the threads listed are then not all of them.
 * Call mt_world_resume afterwards in any case. */
bool mt_world_stop(bool (*skip)(pid_t tid));

/* The threads signalled by the last mt_world_stop, and thread I's state
 * (MT_WORLD_*, read with acquire: its fields are set when STOPPED). */
size_t mt_world_count(void);
const mt_world_thread *mt_world_thread_at(size_t i, int *state);

/* Lets the stopped threads go on. */
void mt_world_resume(void);

/* The stack pointer of thread TID of this process if it waits in a system
 * call (/proc/self/task/TID/syscall), else 0. */
uintptr_t mt_world_syscall_sp(pid_t tid);

#endif
