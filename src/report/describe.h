/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* print_trace's answers (include/memtrace.h) and the other text memtrace
 * writes from inside the process about its own records. */
#ifndef MT_DESCRIBE_H
#define MT_DESCRIBE_H

#include "base/output.h"
#include "report/format.h"
#include "store/stack_store.h"

#include <stdint.h>

/* MEMTRACE_UNWIND=check, at exit (each process for itself): one line that
 * scripts parse, "memtrace: unwind check: N captures, M mismatches, F
 * fallbacks", then the first mismatches with both stacks, on memtrace's
 * stderr (mt_err_fd). */
void mt_describe_check_report(void);

/* mt_stack_writer for the process itself: FRAMES symbolized under the
 * symbolizer's lock, taken with a bounded wait (raw frames and a note when
 * it cannot be had). Call inside memtrace (mt_enter). */
void mt_describe_stack(void *ctx, mt_out *out, const uintptr_t *frames, unsigned depth);

/* The recording line: since when memtrace records, or since when it has
 * been off (format.h's mt_fmt_recording), from the recording words
 * (store/recording_words.h), if recording was ever off; nothing otherwise.
 * Ends every answer and report made in the process. Reads the words
 * without a lock (a toggle racing it shows either side). */
void mt_describe_recording(mt_out *out);

/* Thread NUMBER with its name, and the frames of stack ID, as the
 * formatter takes them. */
mt_fmt_thread mt_describe_thread(uint32_t number);
mt_fmt_stack_ref mt_describe_stack_ref(mt_stack_id id);

#endif
