/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "base/pausable.h"

#include "base/reentry.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

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
