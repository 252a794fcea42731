/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The line that ends every answer and report once recording was ever off
 * (format.h's mt_fmt_recording), from the recording words
 * (store/recording_words.h). */
#ifndef MT_RECORDING_LINE_H
#define MT_RECORDING_LINE_H

#include "base/output.h"

/* Writes the recording line if recording was ever off; nothing otherwise.
 * Reads the words without a lock (a toggle racing it shows either side). */
void mt_recording_say(mt_out *out);

#endif
