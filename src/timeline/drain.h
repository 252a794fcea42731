/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The drain of the timeline's rings (timeline/ only): the consumer side
 * of ring.h, shared by the writer thread (writer.c) and by an appender
 * whose ring is full (append.c). One drain at a time, under the drain lock;
 * the emitter (emit.c), the culling (cull.c) and the file (file.c) are
 * used under it. */
#ifndef MT_TL_DRAIN_H
#define MT_TL_DRAIN_H

#include "timeline/ring.h"

#include <stdbool.h>
#include <stdint.h>

/* The start of the timeline, CLOCK_MONOTONIC ns. */
extern uint64_t mt_tl_start_ns MT_HIDDEN;

/* Lists R, the calling thread's new ring (release: its fields are set). */
void mt_tl_rings_add(mt_tl_ring *r);

/* Drains may run from now on (the emitter's buffers exist); CULL_NS:
 * MEMTRACE_RECORD_CULL_MS in ns, 0 when allocations are not held back. */
void mt_tl_drain_begin(uint64_t cull_ns);
bool mt_tl_drain_ready(void);
/* In a fork child: no drain, no writer thread. */
void mt_tl_drain_forget(void);

/* Drains every ring: false when another drain holds the lock (WAIT false)
 * or drains may not run yet. */
bool mt_tl_drain(bool wait);

/* The lock, for the last drain and what the end writes after it. */
void mt_tl_drain_lock(void);
void mt_tl_drain_unlock(void);
/* Under the lock: drains every ring, writes out every allocation held
 * back and the current block. */
void mt_tl_drain_final(void);

/* The writer thread's doorbell: whether it runs (acquire; set with
 * release by its starter and stopper), a wake, and its sleep of at most
 * NS (< 1 s) until one. */
bool mt_tl_writer_running(void);
void mt_tl_writer_set_running(bool running);
void mt_tl_wake_writer(void);
void mt_tl_writer_sleep(uint64_t ns);

#endif
