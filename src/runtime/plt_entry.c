/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A module's canonical PLT entries told from its definitions (plt_entry.h). */
#include "runtime/plt_entry.h"

#include "base/common.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>

#if UINTPTR_MAX > 0xffffffffu
#define R_SYM ELF64_R_SYM
#else
#define R_SYM ELF32_R_SYM
#endif

/* A d_ptr of the dynamic section: ld.so has relocated most of them in
 * place (glibc on x86-64), not all ports do (as attach.c). */
static uintptr_t dyn_ptr(uintptr_t v, uintptr_t base)
{
    return v < base ? v + base : v;
}

/* The symbol NAME as the relocations RELS (SIZE bytes) of a module name it,
 * or NULL. An undefined symbol a module uses is always named by one: the
 * canonical PLT entry's own GOT slot (JUMP_SLOT) or a GLOB_DAT. */
static const ElfW(Sym) *named_by(const ElfW(Rela) *rels, size_t size, const ElfW(Sym) *symtab,
                                 const char *strtab, const char *name)
{
    if (!rels)
        return NULL;
    for (size_t i = 0; i < size / sizeof *rels; i++) {
        size_t s = R_SYM(rels[i].r_info);
        if (s && strcmp(strtab + symtab[s].st_name, name) == 0)
            return &symtab[s];
    }
    return NULL;
}

bool mt_is_canonical_plt(const void *addr, const char *name)
{
    Dl_info info;
    struct link_map *map = NULL;
    if (!dladdr1(addr, &info, (void **)&map, RTLD_DL_LINKMAP) || !map || !map->l_ld)
        return false;
    uintptr_t base = map->l_addr;
    const ElfW(Rela) *jmprel = NULL, *rela = NULL;
    size_t jmprel_size = 0, rela_size = 0;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    bool is_rela = true;
    for (const ElfW(Dyn) *d = map->l_ld; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_JMPREL: jmprel = (const ElfW(Rela) *)dyn_ptr(d->d_un.d_ptr, base); break;
        case DT_PLTRELSZ: jmprel_size = d->d_un.d_val; break;
        case DT_RELA: rela = (const ElfW(Rela) *)dyn_ptr(d->d_un.d_ptr, base); break;
        case DT_RELASZ: rela_size = d->d_un.d_val; break;
        case DT_SYMTAB: symtab = (const ElfW(Sym) *)dyn_ptr(d->d_un.d_ptr, base); break;
        case DT_STRTAB: strtab = (const char *)dyn_ptr(d->d_un.d_ptr, base); break;
        case DT_PLTREL: is_rela = d->d_un.d_val == DT_RELA; break;
        }
    }
    if (!symtab || !strtab || !is_rela)
        return false;
    const ElfW(Sym) *s = named_by(jmprel, jmprel_size, symtab, strtab, name);
    if (!s)
        s = named_by(rela, rela_size, symtab, strtab, name);
    return s && s->st_shndx == SHN_UNDEF && s->st_value != 0 &&
           s->st_value + base == (uintptr_t)addr;
}
