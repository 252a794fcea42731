/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Pausing memtrace's background threads (pausable.h), and the
 * re-entrancy flag (reentry.h), defined here: in base, below every layer
 * that reads or sets it (the stores' modules.c and threads.c as well as the
 * hot path), so that none of them refers up to the hot path for it; this
 * file is base's one user of it. */
#include "base/pausable.h"

#include "base/reentry.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

MT_TLS mt_hot_thread mt_hot; /* base/hot.h: mt_busy and the hot path's others */

void mt_pausable_pause(mt_pausable *p)
{
    int was = mt_enter();
    pthread_mutex_lock(&p->lock);
    if (p->pauses++ == 0) {
        p->was_running = p->running();
        if (p->was_running)
            p->stop();
    }
    pthread_mutex_unlock(&p->lock);
    mt_leave(was);
}

void mt_pausable_resume(mt_pausable *p, bool may_start)
{
    int was = mt_enter();
    pthread_mutex_lock(&p->lock);
    if (--p->pauses == 0 && p->was_running && may_start)
        p->start();
    pthread_mutex_unlock(&p->lock);
    mt_leave(was);
}

void mt_pausable_forked(mt_pausable *p)
{
    pthread_mutex_init(&p->lock, NULL);
    p->pauses = 0;
}

void mt_pausable_wait_gone(int tid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d", tid);
    for (int ms = 0; ms < 1000 && access(path, F_OK) == 0; ms++) {
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
}
