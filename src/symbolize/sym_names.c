/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Names for rows: a function's from its DIE (demangled) or from the symbol
 * table, a module's from its file, and the demangler. */
#include "symbolize/sym_internal.h"

#include <dwarf.h>
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

/* C++, Rust legacy (its hash dropped, as rustc's {:#} prints it) and Rust
 * v0 names, by binutils' demangler (libiberty, linked statically and kept
 * out of the library's exported symbols); NULL when NAME is not a mangled
 * name it knows. The result is malloc'ed. */
static char *demangle(const char *name)
{
    if (name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
        return NULL;
    return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);
}

const char *sym_die_string(Dwarf_Die *die, unsigned attr)
{
    Dwarf_Attribute a;
    return dwarf_attr_integrate(die, attr, &a) ? dwarf_formstring(&a) : NULL;
}

/* A demangled NAME (kept in R) or NAME itself. */
const char *sym_demangled(struct rows *r, const char *name)
{
    char *d = name ? demangle(name) : NULL;
    if (!d)
        return name;
    if (r->nowned == MAX_ROWS) {
        free(d);
        return name;
    }
    return r->owned[r->nowned++] = d;
}

/* The name of a function DIE, demangled; without a name in the DIE, the
 * symbol of ADDR in MOD as the symbol table has it; "??" if none. *MANGLED:
 * the linkage name it was demangled from, NULL when it was not. */
const char *sym_function_name(struct rows *r, Dwarf_Die *die, Dwfl_Module *mod, Dwarf_Addr addr,
                              const char **mangled)
{
    *mangled = NULL;
    const char *linkage = sym_die_string(die, DW_AT_linkage_name);
    if (!linkage)
        linkage = sym_die_string(die, DW_AT_MIPS_linkage_name);
    const char *d = linkage ? sym_demangled(r, linkage) : NULL;
    /* GCC gives no linkage name to constructors, lambdas and many template
     * members, whose DW_AT_name is then unqualified ("_M_invoke",
     * "operator()"); the function that holds ADDR (not an inlined one) has
     * its symbol, whose demangled name is whole. A plain C name is the
     * DIE's: the symbol can be a part ("main.cold"). */
    if (!linkage && dwarf_tag(die) == DW_TAG_subprogram) {
        const char *sym = sym_symbol_name(mod, addr);
        const char *ds = sym ? sym_demangled(r, sym) : NULL;
        if (ds && ds != sym) {
            *mangled = sym;
            return ds;
        }
    }
    const char *name = d && d != linkage ? d : sym_die_string(die, DW_AT_name);
    if (d && d != linkage)
        *mangled = linkage;
    if (!name && !linkage)
        name = sym_symbol_name(mod, addr);
    if (!name)
        name = linkage ? linkage : "??";
    return name;
}

/* MOD's file name without its directory, and in *BIAS the difference
 * between its addresses in memory and in its file (0 for a non-PIE
 * executable, the load address for a library linked at 0). */
const char *sym_module_name(Dwfl_Module *mod, Dwarf_Addr *bias)
{
    Dwarf_Addr symbias = (Dwarf_Addr)-1, start = 0;
    const char *name = dwfl_module_info(mod, NULL, &start, NULL, NULL, &symbias, NULL, NULL);
    if (symbias == (Dwarf_Addr)-1 && !dwfl_module_getelf(mod, &symbias))
        symbias = start; /* no ELF: a library linked at 0 is the likely case */
    *bias = symbias;
    if (!name)
        return "??";
    const char *slash = strrchr(name, '/');
    return slash ? slash + 1 : name;
}

const char *sym_die_linkage_name(Dwarf_Die *die)
{
    const char *name = sym_die_string(die, DW_AT_linkage_name);
    if (!name)
        name = sym_die_string(die, DW_AT_MIPS_linkage_name);
    return name ? name : sym_die_string(die, DW_AT_name);
}
