/* Recording on demand: MEMTRACE_START, MEMTRACE_TOGGLE_SIGNAL and
 * memtrace_set_recording turn recording on and off (the phase READY <->
 * PAUSED, real.h), and remember since when it records, for every answer
 * and report to say (mt_fmt_recording in format.h). */
#ifndef MT_RECORDING_H
#define MT_RECORDING_H

#include "base/output.h"

#include <stdbool.h>
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

/* Whether settings say to start with recording on (MEMTRACE_START, read
 * by mt_config_load into mt_cfg.start); stamps the start time. Called by
 * mt_start before the phase leaves INITIALIZING. */
void mt_recording_init(bool on);

/* Turns recording on or off. Returns what it was (1 on, 0 off), or -1
 * when it cannot change: recording stopped for good (a metadata mapping
 * failed) or memtrace is not set up. Async-signal-safe: atomics and
 * clock_gettime only, no lock, no heap. */
int mt_set_recording(bool on);

/* 1 while recording, else 0. */
int mt_recording_now(void);

/* Writes the recording line (format.h's mt_fmt_recording) if recording
 * was ever off; nothing otherwise. */
void mt_recording_say(mt_out *out);

/* Installs the MEMTRACE_TOGGLE_SIGNAL handler, if the setting names a
 * signal memtrace may take (mt_config_signal) that has no handler yet
 * (one warning otherwise). Called once, from the library's constructor,
 * after mt_start. */
void mt_recording_install_signal(void);

#endif
