/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Libraries the program unloaded: their path and address range, noted at
 * dlclose so that stacks captured while they were mapped can still be
 * resolved (from the file on disk) and named as unloaded. */
#ifndef MT_MODULES_H
#define MT_MODULES_H

#include <stdbool.h>
#include <stdint.h>

#include "base/atomic.h"

typedef struct {
    uintptr_t lo, hi; /* mapped address range [lo, hi) */
    uintptr_t bias;   /* load bias (link_map l_addr) */
    char path[1000];  /* absolute */
} mt_unloaded_module;

/* dlclose, interposed: notes the library's path and range (the newest 256
 * are kept), calls the real dlclose, then counts a generation: a library
 * may be gone, and another may be loaded at its address from now on. */
int mt_dlclose(void *handle);

/* Changes whenever a library may have been unloaded since the last call:
 * the symbolizer re-reads the modules and drops what it cached of them.
 * Counts dlcloses completed. */
unsigned long mt_modules_generation(void);

/* Counts dlcloses begun: ahead of mt_modules_generation while one is in
 * progress, when a library's mappings may be going away and another may
 * take its addresses before the generation moves. A cache of what modules
 * hold must be dropped when this changes, and must not keep anything it
 * learnt while the two differ. */
extern mt_atomic(unsigned long) mt_modules_unloads_begun_count;
/* Inline: the unwinder asks on every capture. */
static inline unsigned long mt_modules_unloads_begun(void)
{
    return mt_atomic_load_acquire(&mt_modules_unloads_begun_count);
}

/* In a fork child: a dlclose another thread had in progress will never
 * complete here; counts it as done, so that caches may keep what they
 * learn again. */
void mt_modules_child_forget_unloads_in_progress(void);

/* Held across fork: returns whether it took the lock (false: this thread
 * holds it already, see mt_lock_acquire_unless_mine). */
bool mt_modules_lock(void);
void mt_modules_unlock(void);

/* The newest noted module whose range holds ADDR; false if none. */
bool mt_modules_find_unloaded(uintptr_t addr, mt_unloaded_module *out);

#endif
