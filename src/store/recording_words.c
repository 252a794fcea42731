/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The recording words (recording_words.h): all zero until start-up stamps
 * them (mt_recording_init). */
#include "store/recording_words.h"

mt_recording_words mt_recording_state;
