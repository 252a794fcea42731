/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The recording words: since when memtrace records, kept where every
 * layer that says so can read them. runtime/recording.c turns recording on
 * and off and writes them, runtime/attach.c adds its bits, the recording
 * line (report/describe.h) reads them, and memtrace_state's
 * recording field points here for a debugger (runtime/descriptor.c).
 * Defined in store/threads.c, beside the allocation numbers. */
#ifndef MT_RECORDING_WORDS_H
#define MT_RECORDING_WORDS_H

#include <stdint.h>

/* Since when memtrace records, as a debugger reads it (memtrace_state's
 * recording field points here): 64-bit words, written by whoever turns
 * recording on or off, read without a lock (a reader racing a toggle may
 * see the words of either side of it).
 *   on        1 while recording, 0 while off
 *   ever_off  1 once recording was ever off (MEMTRACE_START=0 included):
 *             until then answers say nothing about it
 *   seq       the allocation number the next recorded block gets, when
 *             recording last changed (blocks numbered below it were
 *             allocated before the change)
 *   sec       the wall-clock time of that change, seconds since 1970 UTC */
typedef struct {
    uint64_t on, ever_off, seq, sec;
} mt_recording_words;

/* Bits of ever_off beside 1 (off once): set by `memtrace attach`
 * (attach.c) once attached, and once detached (cleared on re-attach). */
#define MT_REC_ATTACHED 2u
#define MT_REC_DETACHED 4u

extern mt_recording_words mt_recording_state;

#endif
