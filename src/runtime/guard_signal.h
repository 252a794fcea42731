/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The guard pages' fault handler (MEMTRACE_GUARD_SAMPLE, capture/guard.h):
 * set up at start-up, and the program's own SIGSEGV handler kept behind
 * it (sigaction and the signal family, interposed). */
#ifndef MT_GUARD_SIGNAL_H
#define MT_GUARD_SIGNAL_H

#include <signal.h>

/* Reads MEMTRACE_GUARD_SAMPLE and MEMTRACE_GUARD_SLOTS; when the sample is
 * not 0, maps the pool and installs the SIGSEGV handler (the action it
 * replaces becomes the program's, called after each report). Once, from
 * mt_start, after the settings. */
void mt_guard_start(void);

/* sigaction and the signal family, interposed. For SIGSEGV while the handler is
 * installed, they set and answer the program's action, which the handler
 * calls (or whose default it takes) after memtrace's report; everything
 * else goes to libc's, with its results and errno. */
int mt_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
__sighandler_t mt_signal(int sig, __sighandler_t handler);
__sighandler_t mt_bsd_signal(int sig, __sighandler_t handler);
__sighandler_t mt_sysv_signal(int sig, __sighandler_t handler);
__sighandler_t mt_sigset(int sig, __sighandler_t disp);
int mt_sigignore(int sig);

#endif
