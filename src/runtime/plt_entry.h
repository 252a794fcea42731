/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Whether an address a symbol lookup found is a module's canonical PLT
 * entry rather than a definition (plt_entry.c). */
#ifndef MT_PLT_ENTRY_H
#define MT_PLT_ENTRY_H

#include <stdbool.h>

/* True when ADDR, which dlsym(RTLD_DEFAULT, NAME) answered, is the
 * canonical PLT entry of the module it lies in: a non-PIE executable that
 * takes NAME's address has NAME in its dynamic symbols undefined
 * (SHN_UNDEF) with the PLT entry's address as its value, and the lookup
 * answers that; the calls through it still reach the definition the
 * entry's GOT slot binds to. False for a definition, or when it cannot be
 * told (the module's relocations do not name NAME). Reads only the
 * module's dynamic section, symbols and relocations in memory; allocates
 * nothing. */
bool mt_is_canonical_plt(const void *addr, const char *name);

#endif
