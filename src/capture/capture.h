/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Stack capture: the call stack of the program's call into the allocator.
 * Three unwinders sit behind mt_capture, chosen by MEMTRACE_UNWIND at
 * start-up:
 *   cfi (the default, capture_cfi.c): memtrace's own, one pre-decoded rule
 *     per return address from the modules' .eh_frame (cfi.h); a capture it
 *     cannot finish falls back to libunwind, and is counted;
 *   libunwind (capture_libunwind.c): DWARF call-frame information, any code;
 *   fp (capture_fp.c): a few loads a frame, right only where every frame
 *     keeps a frame pointer.
 * check runs cfi and libunwind on every capture, compares them and keeps
 * libunwind's answer (mt_check_*). */
#ifndef MT_CAPTURE_H
#define MT_CAPTURE_H

#include "base/atomic.h"
#include "base/common.h"
#include "base/config.h"
#include "store/stack_store.h"

#include <stdbool.h>
#include <stdint.h>

/* Once, before the first mt_capture, after mt_config_load; may allocate
 * (nested, so from the internal heap). */
void mt_capture_init(void);

/* Fills FRAMES with at most MAX return addresses, innermost first, starting
 * at the first frame outside memtrace (the program's call site). Returns the
 * number stored. Must be called with the thread's re-entrancy flag set. */
unsigned mt_capture(uintptr_t *frames, unsigned max);

/* Which of the thread's unwind memos a capture uses (capture_cfi.c): a
 * block's allocation's, or its free's. */
enum { MT_MEMO_ALLOC, MT_MEMO_FREE, MT_MEMOS };

/* mt_capture's stack, interned (mt_stack_intern): its id, 0 if the store
 * could not grow. The cfi unwinder interns without reading the frames its
 * thread's last captures of the same kind WHICH (MT_MEMO_*) share with
 * this one (capture_cfi.c). Same conditions as mt_capture. */
static inline mt_stack_id mt_capture_stack(unsigned max, unsigned which);
/* mt_capture_stack but for a cfi walk that succeeded: after one that
 * failed (CFI_FAILED), or with another unwinder. */
mt_stack_id mt_capture_stack_slow(unsigned max, unsigned which, bool cfi_failed);

/* The unwinders. libunwind and fp: up to N raw return addresses from their
 * caller up, memtrace's own frames included. cfi: up to MAX return
 * addresses from the program's call site up, or -1 when it cannot unwind
 * this stack. */
unsigned mt_unwind_libunwind(void **buf, unsigned n);
unsigned mt_unwind_fp(void **buf, unsigned n, bool *broken);
int mt_unwind_cfi(uintptr_t *frames, unsigned max);
/* cfi's walk and interning in one (mt_capture_stack), with the thread's
 * memo WHICH (MT_MEMO_*): the stack's depth, its id in *ID and, when
 * FRAMES is not NULL, its frames there; or -1 when it cannot unwind this
 * stack. */
int mt_unwind_cfi_stack(unsigned max, unsigned which, mt_stack_id *id, uintptr_t *frames);
void mt_unwind_libunwind_init(void);
/* memtrace's executable segment [LO, HI): where the cfi walk leaves
 * memtrace's own frames. */
void mt_unwind_cfi_init(uintptr_t lo, uintptr_t hi);

/* Captures the cfi unwinder handed to libunwind since start-up. */
void mt_unwind_cfi_fell_back(void);
unsigned long mt_unwind_fallbacks(void);
const mt_atomic(unsigned long) * mt_unwind_fallback_counter(void);

/* Held across fork (see mt_lock_acquire_unless_mine). */
bool mt_unwind_cfi_lock(void);
void mt_unwind_cfi_unlock(void);

/* Inline: a call level less for the cfi walk to climb, on every capture. */
static inline mt_stack_id mt_capture_stack(unsigned max, unsigned which)
{
    mt_stack_id id;
    if (MT_LIKELY(mt_cfg.unwind == MT_UNWIND_CFI) &&
        MT_LIKELY(mt_unwind_cfi_stack(max, which, &id, NULL) >= 0))
        return id;
    return mt_capture_stack_slow(max, which, mt_cfg.unwind == MT_UNWIND_CFI);
}

/* MEMTRACE_UNWIND=check: the counts so far, and the first mismatches
 * (both stacks, as captured). */
typedef struct {
    unsigned long captures, mismatches, fallbacks;
} mt_check_counts;
void mt_check_get(mt_check_counts *out);
enum { MT_CHECK_KEPT = 4, MT_CHECK_DEPTH = 64 };
typedef struct {
    unsigned cfi_depth, libunwind_depth;
    uintptr_t cfi[MT_CHECK_DEPTH], libunwind[MT_CHECK_DEPTH];
} mt_check_mismatch;
/* Copies mismatch I (0 = first) to *OUT; false if there is none. */
bool mt_check_mismatch_get(unsigned i, mt_check_mismatch *out);

#endif
