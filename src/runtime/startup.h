/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Start-up and the stop-recording policy (startup.c). */
#ifndef MT_STARTUP_H
#define MT_STARTUP_H

/* True once a metadata mapping failed and recording stopped. */
int mt_recording_stopped(void);

/* unshare and setns, interposed: the kernel refuses unshare(CLONE_NEWUSER)
 * (and the other flags that unshare the thread group) and every setns but
 * to a single-threaded process, so memtrace's own threads are stopped
 * around the real call (mt_profiler_pause). Results and errno are the real
 * call's. */
int mt_unshare(int flags);
int mt_setns(int fd, int nstype);

#endif
