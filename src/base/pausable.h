/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A background thread of memtrace's (the profiler's reporter, the
 * recording's writer) that must not exist while the program calls
 * unshare or setns, which refuse a process with more than one thread:
 * pauses nest; the first stops the thread if it runs, the last starts it
 * again if it ran at the first. */
#ifndef MT_PAUSABLE_H
#define MT_PAUSABLE_H

#include <pthread.h>
#include <stdbool.h>

typedef struct {
    pthread_mutex_t lock;
    unsigned pauses;       /* pauses not resumed yet, under lock */
    bool was_running;      /* the thread ran when the first of them came */
    bool (*running)(void); /* each called under lock, inside memtrace */
    void (*stop)(void);    /* returns when the kernel no longer lists it */
    void (*start)(void);
} mt_pausable;

#define MT_PAUSABLE(running, stop, start)                               \
    {                                                                   \
        PTHREAD_MUTEX_INITIALIZER, 0, false, (running), (stop), (start) \
    }

void mt_pausable_pause(mt_pausable *p);
/* The last resume starts the thread again if it ran and MAY_START. */
void mt_pausable_resume(mt_pausable *p, bool may_start);
/* In a forked child (one thread, the lock possibly held by a thread that
 * is not there): no pause. */
void mt_pausable_forked(mt_pausable *p);

/* Waits (a second at most) until the kernel no longer lists thread TID of
 * this process: pthread_join returns when the thread has cleared its id,
 * a little before. */
void mt_pausable_wait_gone(int tid);

#endif
