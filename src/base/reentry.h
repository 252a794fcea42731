/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The re-entrancy flag: set while a thread runs memtrace's own code (an
 * unwind, an intern, a report, symbolization). The hot path reads it on
 * every call: a flagged thread's allocations come from the internal heap,
 * untraced, so nothing recurses and no allocator lock is taken from inside
 * memtrace. Defined in base/pausable.c, in base below everything that reads
 * it. */
#ifndef MT_REENTRY_H
#define MT_REENTRY_H

#include "base/common.h"
#include "base/hot.h" /* mt_busy */

/* Marks the calling thread as inside memtrace until mt_leave; returns the
 * previous state for mt_leave. Nests. */
static inline int mt_enter(void)
{
    int was = mt_busy;
    mt_busy = 1;
    return was;
}

static inline void mt_leave(int previous)
{
    mt_busy = previous;
}

#endif
