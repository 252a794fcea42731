/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Start-up and the stop-recording policy (startup.c). */
#ifndef MT_STARTUP_H
#define MT_STARTUP_H

/* True once a metadata mapping failed and recording stopped. */
int mt_recording_stopped(void);

/* unshare and setns, interposed (mt_unshare, mt_setns): base/upcalls.h. */

#endif
