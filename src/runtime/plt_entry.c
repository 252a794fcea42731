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

bool mt_dyn_tables_read(const ElfW(Dyn) * dyn, uintptr_t base, mt_dyn_tables *t)
{
    *t = (mt_dyn_tables){ 0 };
    bool is_rela = true;
    for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_JMPREL: t->jmprel = (const ElfW(Rela) *)mt_dyn_ptr(d->d_un.d_ptr, base); break;
        case DT_PLTRELSZ: t->jmprel_size = d->d_un.d_val; break;
        case DT_RELA: t->rela = (const ElfW(Rela) *)mt_dyn_ptr(d->d_un.d_ptr, base); break;
        case DT_RELASZ: t->rela_size = d->d_un.d_val; break;
        case DT_SYMTAB: t->symtab = (const ElfW(Sym) *)mt_dyn_ptr(d->d_un.d_ptr, base); break;
        case DT_STRTAB: t->strtab = (const char *)mt_dyn_ptr(d->d_un.d_ptr, base); break;
        case DT_PLTREL: is_rela = d->d_un.d_val == DT_RELA; break;
        }
    }
    return t->symtab && t->strtab && is_rela;
}

/* The symbol NAME as the relocations RELS (SIZE bytes) of a module name it,
 * or NULL. An undefined symbol a module uses is always named by one: the
 * canonical PLT entry's own GOT slot (JUMP_SLOT) or a GLOB_DAT. */
static const ElfW(Sym) * named_by(const ElfW(Rela) * rels, size_t size, const ElfW(Sym) * symtab,
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
    mt_dyn_tables t;
    if (!mt_dyn_tables_read(map->l_ld, base, &t))
        return false;
    const ElfW(Sym) *s = named_by(t.jmprel, t.jmprel_size, t.symtab, t.strtab, name);
    if (!s)
        s = named_by(t.rela, t.rela_size, t.symtab, t.strtab, name);
    return s && s->st_shndx == SHN_UNDEF && s->st_value != 0 &&
           s->st_value + base == (uintptr_t)addr;
}
