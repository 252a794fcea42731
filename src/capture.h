/* Stack capture: the call stack of the program's call into the allocator.
 * One implementation is linked per build (capture_libunwind.c today). */
#ifndef MT_CAPTURE_H
#define MT_CAPTURE_H

#include <stdint.h>

/* Once, before the first mt_capture; may allocate (nested, so from the
 * internal heap). */
void mt_capture_init(void);

/* Fills FRAMES with at most MAX return addresses, innermost first, starting
 * at the first frame outside memtrace (the program's call site). Returns the
 * number stored. Must be called with the thread's re-entrancy flag set. */
unsigned mt_capture(uintptr_t *frames, unsigned max);

#endif
