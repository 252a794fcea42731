/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The recording line (recording_line.h). */
#include "report/recording_line.h"

#include "base/atomic.h"
#include "report/format.h"
#include "store/recording_words.h"

void mt_recording_say(mt_out *out)
{
    const mt_recording_words *w = &mt_recording_state;
    mt_fmt_recording_state r = {
        .on = mt_atomic_load_acquire(&w->on) != 0,
        .ever_off = mt_atomic_load_relaxed(&w->ever_off) != 0,
        .seq = mt_atomic_load_relaxed(&w->seq),
        .sec = mt_atomic_load_relaxed(&w->sec),
        .attached = (mt_atomic_load_relaxed(&w->ever_off) & MT_REC_ATTACHED) != 0,
        .detached = (mt_atomic_load_relaxed(&w->ever_off) & MT_REC_DETACHED) != 0,
    };
    mt_fmt_recording(out, &r);
}
