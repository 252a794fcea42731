/* Symbolization of stored stacks with libdw/libdwfl: function (demangled),
 * file:line:column, every inlined frame, or module+offset without debug
 * information. Works on the live process (modules re-reported when an address
 * falls outside the known ones) and, through the same printing code, on any
 * Dwfl the caller reported (a core file, another process). */
#ifndef MT_SYMBOLIZE_H
#define MT_SYMBOLIZE_H

#include "modules.h"
#include "report.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct Dwfl mt_dwfl;

/* The symbolizer of the calling process, created on first use; NULL if
 * libdwfl could not be set up. Caller must hold mt_sym_self_lock. */
mt_dwfl *mt_sym_self(void);
/* Bounded wait (the holder may be a thread stopped by a debugger). */
bool mt_sym_self_lock(void);
void mt_sym_self_unlock(void);

/* Where to look up libraries the process unloaded (mt_modules_find_unloaded
 * in the library; none elsewhere). Frames in them are resolved from their
 * files and marked "(library unloaded since)". GENERATION (may be NULL)
 * changes whenever a library may have been unloaded: mt_sym_self then
 * re-reads the modules and drops the frame texts, so that a library loaded
 * where another was is not named after it. */
void mt_sym_set_unloaded_lookup(bool (*fn)(uintptr_t, mt_unloaded_module *),
                                unsigned long (*generation)(void));

/* Prints FRAMES[0..DEPTH) (return addresses) as "  #N ..." lines. With
 * REFRESH, modules are re-read from /proc/self/maps once when an address is
 * in none of the known ones. */
void mt_sym_print_stack(mt_dwfl *dwfl, bool refresh, const uintptr_t *frames,
                        unsigned depth, mt_out *out);

#endif
