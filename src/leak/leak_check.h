/* MEMTRACE_LEAK_CHECK=1: the leak scan (leak_scan.h) of the process itself
 * at exit, its report (grouped by allocation stack, suppressions applied,
 * the summary line) and its exit status. Both builds. */
#ifndef MT_LEAK_CHECK_H
#define MT_LEAK_CHECK_H

/* Registers the check with atexit and keeps a copy of
 * MEMTRACE_SUPPRESSIONS. Called once by mt_start, before the profiler
 * registers its exit report: atexit handlers run in the reverse order of
 * their registration, and memtrace's run before any the program registers
 * from its constructors or main, so the check runs after every handler of
 * the program (C++ static destructors included) and after the profiler's
 * exit report; only handlers registered before memtrace started (there are
 * none in a program memtrace is preloaded into) would run after it. */
void mt_leak_check_register(void);

#endif
