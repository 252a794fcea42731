/* Stack capture: the call stack of the program's call into the allocator.
 * Two unwinders sit behind mt_capture, chosen by MEMTRACE_UNWIND at start-up:
 * libunwind (capture_libunwind.c: DWARF call-frame information, works on any
 * code with .eh_frame) and frame pointers (capture_fp.c: a few loads a frame,
 * right only where every frame keeps a frame pointer). */
#ifndef MT_CAPTURE_H
#define MT_CAPTURE_H

#include <stdint.h>

/* Once, before the first mt_capture, after mt_config_load; may allocate
 * (nested, so from the internal heap). */
void mt_capture_init(void);

/* Fills FRAMES with at most MAX return addresses, innermost first, starting
 * at the first frame outside memtrace (the program's call site). Returns the
 * number stored. Must be called with the thread's re-entrancy flag set. */
unsigned mt_capture(uintptr_t *frames, unsigned max);

/* The unwinders: up to N raw return addresses from their caller up,
 * memtrace's own frames included. */
unsigned mt_unwind_libunwind(void **buf, unsigned n);
unsigned mt_unwind_fp(void **buf, unsigned n);
void mt_unwind_libunwind_init(void);

#endif
