/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The appender (timeline/ only): the hot path's side of the rings
 * (ring.h). Its appends, mt_tl_put_alloc and mt_tl_put_free, are
 * timeline.h's. */
#ifndef MT_TL_APPEND_H
#define MT_TL_APPEND_H

/* Makes the key whose destructor marks an exiting thread's ring done
 * (from mt_tl_arm; no heap). */
void mt_tl_append_init(void);

#endif
