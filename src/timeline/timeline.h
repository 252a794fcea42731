/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The timeline (MEMTRACE_RECORD): every allocation and free of the run,
 * with its time, thread, stack and address, written to a file for
 * `memtrace export` and `memtrace view` (record_format.h says how).
 *
 * The hot path only appends a fixed-size record to the calling thread's
 * ring (append.c: no lock, no line written by another thread but the
 * writer's read position); a writer thread of memtrace's (writer.c) drains
 * the rings (drain.c), culls the temporary blocks (cull.c), codes the
 * records (emit.c) and writes compressed blocks to the file (file.c). The timeline follows
 * memtrace's own on and off (the phase): mt_record is not called while off, so nothing is appended;
 * frees of recorded blocks still are, so that a block freed while off does not stay live in the
 * timeline.
 *
 * Fork: a forked child records nothing (mt_tl_fork_child): its rings and
 * the writer thread are its parent's; a program it execs records to its
 * own file (MEMTRACE_RECORD passed on as TEMPLATE.%p, as MEMTRACE_PPROF).
 * Exec: the process's timeline is written out first (mt_tl_sync); it
 * ends there without its end record. */
#ifndef MT_TIMELINE_H
#define MT_TIMELINE_H

#include "base/atomic.h"
#include "base/common.h"
#include "store/stack_store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The one flag the hot path tests: 1 while this process records to a
 * file. Set once by mt_tl_arm (before the phase is first READY), cleared
 * for good by the end of the timeline, a write error, or a fork child. */
extern mt_atomic(int) mt_tl_on MT_HIDDEN;

void mt_tl_put_alloc(uintptr_t p, size_t size, mt_stack_id stack);
void mt_tl_put_free(uintptr_t p);
/* Makes the key whose destructor marks an exiting thread's ring done
 * (timeline/ only: from mt_tl_arm, no heap). */
void mt_tl_append_init(void);

/* Block P of SIZE bytes at STACK was recorded (entered the live table). */
static inline void mt_tl_alloc(uintptr_t p, size_t size, mt_stack_id stack)
{
    if (MT_UNLIKELY(mt_atomic_load_relaxed(&mt_tl_on)))
        mt_tl_put_alloc(p, size, stack);
}

/* Recorded block P left the live table: freed, or moved by a resize. */
static inline void mt_tl_free(uintptr_t p)
{
    if (MT_UNLIKELY(mt_atomic_load_relaxed(&mt_tl_on)))
        mt_tl_put_free(p);
}

/* ---- start-up and the end (runtime/record_end.c) */

/* Reads MEMTRACE_RECORD and MEMTRACE_RECORD_CULL_MS; when a timeline is
 * asked for, stamps the start and sets mt_tl_on. From mt_start, after the
 * settings are loaded, before the phase is first READY: no heap, no file. */
void mt_tl_arm(void);

/* Opens the file (the expanded name; one memtrace: line and no timeline
 * when it cannot) and starts the writer thread. From the constructor. */
void mt_tl_start(void);

/* One row of a frame's symbolized address (innermost first). */
typedef struct {
    const char *function, *file; /* NULL: unknown */
    int line;                    /* 0: unknown */
} mt_tl_row;

/* Symbolizes ADDR, calling mt_tl_put_symbol(CTX, ADDR, rows, n) once. */
typedef void mt_tl_symbolize_fn(uintptr_t addr, void *ctx);
void mt_tl_put_symbol(void *ctx, uintptr_t addr, const mt_tl_row *rows, unsigned n);

/* The end of the timeline (at exit, in the process that armed it): the
 * writer stops, the rings are drained, the frames of the recorded stacks
 * are symbolized through SYMBOLIZE (NULL: none, read by address), the end
 * record is written and one line names the file and how to view it. */
void mt_tl_finish(mt_tl_symbolize_fn *symbolize);

/* Before this process execs: what it recorded so far is written out (the
 * file reads as a truncated timeline if the exec succeeds; the timeline
 * goes on if it fails). */
void mt_tl_sync(void);

/* unshare and setns of the calls a multi-threaded process cannot make:
 * the writer thread ends until the matching resume (calls nest; false
 * when there is nothing to resume). Meanwhile a full ring is drained by
 * its own thread. */
bool mt_tl_pause(void);
void mt_tl_resume(void);

/* Whether this process has a timeline to end (started, not ended; its
 * writing may have failed). */
bool mt_tl_to_finish(void);

/* Whether this process writes a timeline (armed, not ended). */
bool mt_tl_armed(void);

/* In a fork child: records nothing. */
void mt_tl_fork_child(void);

#endif
