/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The symbol an address of a module's data or code lies in, as gdb's
 * `info symbol` names it: for the description of an address in no heap
 * block (print_trace, report/describe.c; gdb and cores,
 * tools/target_where.c). */
#include "symbolize/symbolize.h"

#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdio.h>
#include <string.h>

bool mt_sym_data_at(struct Dwfl *dwfl, uintptr_t addr, mt_sym_data *d)
{
    Dwfl_Module *mod = dwfl ? mt_sym_addrmodule(dwfl, addr) : NULL;
    if (!mod)
        return false;
    GElf_Off off = 0;
    GElf_Sym sym;
    const char *name = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);
    /* the nearest symbol below, when none covers ADDR: not its bytes */
    if (!name || !name[0] || (sym.st_size && off >= sym.st_size))
        return false;
    const char *path = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    const char *base = path ? strrchr(path, '/') : NULL;
    *d = (mt_sym_data){
        .name = name,
        .offset = off,
        .function = GELF_ST_TYPE(sym.st_info) == STT_FUNC ||
                    GELF_ST_TYPE(sym.st_info) == STT_GNU_IFUNC,
        .module = base   ? base + 1
                  : path ? path
                         : "?",
    };
    Dwarf_Addr a = addr, bias;
    Elf_Scn *scn = dwfl_module_address_section(mod, &a, &bias);
    Elf *elf = scn ? dwfl_module_getelf(mod, &bias) : NULL;
    GElf_Shdr sh;
    size_t shstrndx;
    if (elf && gelf_getshdr(scn, &sh) && elf_getshdrstrndx(elf, &shstrndx) == 0) {
        const char *s = elf_strptr(elf, shstrndx, sh.sh_name);
        if (s)
            snprintf(d->section, sizeof d->section, "%s", s);
    }
    return true;
}
