/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The calling thread's stack mapping, for the unwinders: every word they
 * read lies in [mt_stack_low, mt_stack_base). */
#ifndef MT_STACK_BOUNDS_H
#define MT_STACK_BOUNDS_H

#include "base/common.h"

#include <stdint.h>

/* Per thread: 0 until mt_stack_find ran, then 1 (bounds known) or -1 (the
 * maps could not be read: unwinders that need bounds give up). */
extern MT_TLS int mt_stack_known MT_HIDDEN;
extern MT_TLS uintptr_t mt_stack_low MT_HIDDEN;  /* lowest address */
extern MT_TLS uintptr_t mt_stack_base MT_HIDDEN; /* one past the highest */

/* Sets the three above from the /proc/self/maps line holding SP, the
 * thread's current stack pointer. The main thread's "[stack]" may still
 * grow down: its low bound is the end of the mapping below it. */
void mt_stack_find(uintptr_t sp);

#endif
