/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Symbol tables sorted once per module: the name libdwfl's
 * dwfl_module_addrname gives an address (libdwfl scans the whole table for
 * every address, which makes reports of large programs slow), and the
 * address of a function by name (the tail calls' targets). */
#include "symbolize/sym_internal.h"

#include <stdlib.h>
#include <string.h>

/* The symbols of one module that dwfl_module_addrname would consider, in
 * two ranges searched as it searches them: the globals first, the locals
 * only if no global symbol matches. Each range is sorted by (address, index
 * in the module's table); end[i] is the largest address + size among
 * sym[0..i], so no symbol at or below i covers an address >= end[i]. Built
 * on the first lookup in a module, kept in the module's userdata and freed
 * when libdwfl drops the module (sym_read_modules, sym_end_dwfl). */
struct sym {
    GElf_Addr value;
    GElf_Xword size;
    const char *name; /* in the module's string table: lives as long as it */
    int index;
    int bind; /* higher is preferred, as libdwfl ranks bindings */
};

struct sym_range {
    struct sym *sym;
    GElf_Addr *end;
    size_t n;
};

struct symtab {
    struct sym_range global, local;
    /* The symbols of both ranges sorted by (name, address), for the tail
     * calls' targets named by declarations; built on the first such lookup. */
    struct sym *by_name;
    size_t nnames;
};

static int bind_rank(unsigned char info)
{
    switch (GELF_ST_BIND(info)) {
    case STB_GLOBAL: return 3;
    case STB_WEAK: return 2;
    case STB_LOCAL: return 1;
    default: return 0;
    }
}

static int by_value(const void *a, const void *b)
{
    const struct sym *x = a, *y = b;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static void symtab_free(struct symtab *t)
{
    if (!t)
        return;
    free(t->global.sym);
    free(t->global.end);
    free(t->local.sym);
    free(t->local.end);
    free(t->by_name);
    free(t);
}

/* Symbols [FIRST, LAST) of MOD that libdwfl's address search looks at. */
static bool range_load(Dwfl_Module *mod, int first, int last, struct sym_range *r)
{
    r->n = 0;
    r->sym = NULL;
    r->end = NULL;
    if (last <= first)
        return true;
    r->sym = malloc((size_t)(last - first) * sizeof *r->sym);
    if (!r->sym)
        return false;
    for (int i = first; i < last; i++) {
        GElf_Sym sym;
        GElf_Addr value;
        const char *name = dwfl_module_getsym_info(mod, i, &sym, &value, NULL, NULL, NULL);
        int type = GELF_ST_TYPE(sym.st_info);
        /* An absolute symbol without a size (a version name such as
         * libLLVM's LLVM_14, at 0) is an answer of libdwfl's only for an
         * address equal to its value: left out, it does not send every
         * address below the module's first symbol (static constructors)
         * to libdwfl's scan of the whole table. */
        if (!name || !name[0] || sym.st_shndx == SHN_UNDEF || type == STT_SECTION ||
            type == STT_FILE || type == STT_TLS || (sym.st_shndx == SHN_ABS && sym.st_size == 0))
            continue;
        r->sym[r->n++] = (struct sym){ value, sym.st_size, name, i, bind_rank(sym.st_info) };
    }
    qsort(r->sym, r->n, sizeof *r->sym, by_value);
    r->end = malloc((r->n ? r->n : 1) * sizeof *r->end);
    if (!r->end)
        return false;
    for (size_t i = 0; i < r->n; i++) {
        GElf_Addr e = r->sym[i].value + r->sym[i].size;
        r->end[i] = i && r->end[i - 1] > e ? r->end[i - 1] : e;
    }
    return true;
}

/* MOD's table, built on first use; NULL if it cannot be built. */
static struct symtab *symtab_of(Dwfl_Module *mod)
{
    void **userdata;
    if (!dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL))
        return NULL;
    if (*userdata)
        /* cppcheck-suppress identicalInnerCondition ; dwfl_module_info set USERDATA */
        return *userdata;
    struct symtab *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    /* libdwfl's ranges: globals from first_global (1 when the table has
     * no locals), locals [1, first_global) only when there are some. */
    int n = dwfl_module_getsymtab(mod);
    int first_global = n > 0 ? dwfl_module_getsymtab_first_global(mod) : 0;
    if (n > 0 && first_global >= 0 &&
        (!range_load(mod, first_global == 0 ? 1 : first_global, n, &t->global) ||
         (first_global > 1 && !range_load(mod, 1, first_global, &t->local)))) {
        symtab_free(t);
        return NULL;
    }
    *userdata = t;
    return t;
}

/* Symbols of R at or below ADDR: their count. */
static size_t range_upto(const struct sym_range *r, GElf_Addr addr)
{
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->sym[mid].value <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Whether R has a sizeless symbol at exactly VALUE. */
static bool range_sizeless_at(const struct sym_range *r, GElf_Addr value)
{
    for (size_t i = range_upto(r, value); i-- > 0 && r->sym[i].value == value;)
        if (r->sym[i].size == 0)
            return true;
    return false;
}

/* The symbol of R with a size that covers ADDR, chosen as libdwfl chooses:
 * the highest address, then the strongest binding, then the smallest size,
 * then the first in the table. *MAX_END gets the largest address + size of
 * the symbols at or below ADDR (0 if none). *GAVE_UP is set when the search
 * would take long (symbols spanning many others). */
static const struct sym *range_find(const struct sym_range *r, GElf_Addr addr, GElf_Addr *max_end,
                                    bool *gave_up)
{
    size_t k = range_upto(r, addr);
    /* NOLINTNEXTLINE(clang-analyzer-core.NullDereference): END has N entries, and K <= N */
    *max_end = k ? r->end[k - 1] : 0;
    const struct sym *best = NULL;
    unsigned steps = 0;
    for (size_t i = k; i-- > 0 && r->end[i] > addr;) {
        const struct sym *s = &r->sym[i];
        if (best && s->value < best->value)
            break;
        if (++steps > 64) {
            *gave_up = true;
            return NULL;
        }
        if (s->size == 0 || addr - s->value >= s->size)
            continue;
        if (!best || s->value > best->value || s->bind > best->bind ||
            (s->bind == best->bind && s->size < best->size) ||
            (s->bind == best->bind && s->size == best->size && s->index < best->index))
            best = s;
    }
    return best;
}

/* libdwfl's own answer, where the sorted table does not give one: the
 * name, and the symbol's address in *VALUE when asked. */
static const char *libdwfl_symbol(Dwfl_Module *mod, GElf_Addr addr, GElf_Addr *value)
{
    if (!value)
        return dwfl_module_addrname(mod, addr);
    GElf_Off offset;
    GElf_Sym sym;
    const char *name = dwfl_module_addrinfo(mod, addr, &offset, &sym, NULL, NULL, NULL);
    if (name)
        *value = addr - offset;
    return name;
}

/* The name dwfl_module_addrname(MOD, ADDR) gives, from MOD's sorted table,
 * and when VALUE is not NULL the address of that symbol (ADDR less the
 * offset dwfl_module_addrinfo gives). Where libdwfl would fall back on a
 * symbol without a size (labels in assembly, whose choice depends on
 * sections and table order), and where the table cannot be built, it asks
 * libdwfl itself: same answer, rare. Assumes a symbol's address is its
 * st_value adjusted (no function descriptors). */
const char *sym_symbol_at(Dwfl_Module *mod, GElf_Addr addr, GElf_Addr *value)
{
    struct symtab *t = symtab_of(mod);
    if (!t)
        return libdwfl_symbol(mod, addr, value);
    bool gave_up = false;
    GElf_Addr end_g, end_l;
    const struct sym *s = range_find(&t->global, addr, &end_g, &gave_up);
    if (!s && (gave_up || range_sizeless_at(&t->global, end_g)))
        return libdwfl_symbol(mod, addr, value);
    if (!s && !t->local.n)
        return NULL;
    if (!s) {
        s = range_find(&t->local, addr, &end_l, &gave_up);
        GElf_Addr end = end_g > end_l ? end_g : end_l;
        if (!s &&
            (gave_up || range_sizeless_at(&t->global, end) || range_sizeless_at(&t->local, end)))
            return libdwfl_symbol(mod, addr, value);
        if (!s)
            return NULL;
    }
    if (value)
        *value = s->value;
    return s->name;
}

const char *sym_symbol_name(Dwfl_Module *mod, GElf_Addr addr)
{
    return sym_symbol_at(mod, addr, NULL);
}

/* Frees the symbol table kept in a module's userdata slot. Serves as
 * dwfl_getmodules' callback and as dwfl_report_end's "removed" callback,
 * whose second argument is that slot too (void **, declared void *), not
 * the userdata itself. */
int sym_drop_symtab(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
                    void *arg)
{
    (void)mod, (void)name, (void)start, (void)arg;
    symtab_free(*userdata);
    *userdata = NULL;
    return DWARF_CB_OK;
}

int sym_free_symtab(Dwfl_Module *mod, void *userdata_slot, const char *name, Dwarf_Addr base,
                    void *arg)
{
    return sym_drop_symtab(mod, userdata_slot, name, base, arg);
}

static int by_name(const void *a, const void *b)
{
    const struct sym *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->value > y->value) - (x->value < y->value);
}

/* The address of the function NAME defined in MOD: the one value of its
 * strongest binding (LOCAL_OK: local symbols count). 0 when MOD defines no
 * such symbol or several functions carry the name (static functions of
 * different files): nothing is guessed. */
uintptr_t sym_module_symbol(Dwfl_Module *mod, const char *name, bool local_ok)
{
    struct symtab *t = symtab_of(mod);
    if (!t)
        return 0;
    if (!t->by_name) {
        size_t n = t->global.n + t->local.n;
        t->by_name = malloc((n ? n : 1) * sizeof *t->by_name);
        if (!t->by_name)
            return 0;
        if (t->global.n)
            memcpy(t->by_name, t->global.sym, t->global.n * sizeof *t->by_name);
        if (t->local.n)
            memcpy(t->by_name + t->global.n, t->local.sym, t->local.n * sizeof *t->by_name);
        qsort(t->by_name, n, sizeof *t->by_name, by_name);
        t->nnames = n;
    }
    size_t lo = 0, hi = t->nnames;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(t->by_name[mid].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    GElf_Addr value = 0;
    int best = 0;
    bool unique = true;
    for (size_t i = lo; i < t->nnames && strcmp(t->by_name[i].name, name) == 0; i++) {
        const struct sym *s = &t->by_name[i];
        if (s->bind < 2 && !local_ok)
            continue;
        if (s->bind > best) {
            best = s->bind;
            value = s->value;
            unique = true;
        } else if (s->bind == best && s->value != value) {
            unique = false;
        }
    }
    return best && unique ? (uintptr_t)value : 0;
}
