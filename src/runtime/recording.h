/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Recording on demand: MEMTRACE_START, MEMTRACE_TOGGLE_SIGNAL and
 * memtrace_set_recording turn recording on and off (the phase READY <->
 * PAUSED, state.h), and remember since when it records (the words,
 * store/recording_words.h), for every answer and report to say
 * (report/describe.h). */
#ifndef MT_RECORDING_H
#define MT_RECORDING_H

#include "store/recording_words.h"

#include <stdbool.h>

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

/* Installs the MEMTRACE_TOGGLE_SIGNAL handler, if the setting names a
 * signal memtrace may take (mt_config_signal) that has no handler yet
 * (one warning otherwise). Called once, from the library's constructor,
 * after mt_start. */
void mt_recording_install_signal(void);

#endif
