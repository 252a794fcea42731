/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A loaded module's dynamic tables read in memory, and whether an address
 * a symbol lookup found is its canonical PLT entry rather than a
 * definition (plt_entry.c). */
#ifndef MT_PLT_ENTRY_H
#define MT_PLT_ENTRY_H

#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A d_ptr of the dynamic section made absolute: ld.so has relocated most
 * of them in place (glibc on x86-64), not all ports do. */
static inline uintptr_t mt_dyn_ptr(uintptr_t v, uintptr_t base)
{
    return v < base ? v + base : v;
}

/* The relocation and symbol tables of a module loaded at BASE, from its
 * dynamic section; a table it lacks is NULL with size 0. */
typedef struct {
    const ElfW(Rela) * jmprel, *rela; /* DT_JMPREL (the PLT's), DT_RELA */
    size_t jmprel_size, rela_size;    /* in bytes */
    const ElfW(Sym) * symtab;
    const char *strtab;
} mt_dyn_tables;

/* Reads DYN (the module's PT_DYNAMIC in memory, loaded at BASE) into T:
 * false when it has no symbol or string table, or its PLT relocations
 * are not RELA (the only kind x86-64 and aarch64 use). */
bool mt_dyn_tables_read(const ElfW(Dyn) * dyn, uintptr_t base, mt_dyn_tables *t);

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
