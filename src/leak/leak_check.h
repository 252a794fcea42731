/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* MEMTRACE_LEAK_CHECK=1: the leak scan (leak_scan.h) of the process itself
 * at exit, its report (grouped by allocation stack, suppressions applied,
 * the summary line) and its exit status. Both builds. */
#ifndef MT_LEAK_CHECK_H
#define MT_LEAK_CHECK_H

#include <stdint.h>
#include <ucontext.h>

/* Registers the check with atexit and keeps a copy of
 * MEMTRACE_SUPPRESSIONS. Called once by mt_start, before the profiler
 * registers its exit report: atexit handlers run in the reverse order of
 * their registration, and memtrace's run before any the program registers
 * from its constructors or main, so the check runs after every handler of
 * the program (C++ static destructors included) and after the profiler's
 * exit report; only handlers registered before memtrace started (there are
 * none in a program memtrace is preloaded into) would run after it. */
void mt_leak_check_register(void);

/* memtrace_leak_check: the check now, its report written as at exit, the
 * program going on; returns the bytes definitely and indirectly lost
 * that no suppression covers (0 after one "memtrace:" line when it could
 * not run). UC and STACK_FROM as the exit handler passes them: the
 * caller's registers and the frame its stack is scanned from. Not from a
 * signal handler. The check at exit, when on, makes its own verdict. */
uint64_t mt_leak_check_now(const ucontext_t *uc, uintptr_t stack_from);

#endif
