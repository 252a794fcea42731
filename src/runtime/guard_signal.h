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

/* sigaction and the signal family, interposed: base/upcalls.h. */

#endif
