/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Which function holds a pc, and the functions inlined into it there. */
#include "symbolize/sym_internal.h"

#include <dwarf.h>
#include <stdlib.h>

/* Which function holds a pc, by an index of each CU's functions built once
 * per CU, then the inline chain by a walk of that function alone, its
 * first level by an index of its children built once per function.
 *
 * libdw's dwarf_getscopes is not enough: its visitor prunes every DIE for
 * which dwarf_haspc is false, and a namespace or a type has no code
 * ranges, so it never looks inside one. GCC puts function definitions at CU
 * level (a C++ method refers to its class with DW_AT_specification), but
 * LLVM nests them in their namespaces and types: for rustc's code (and
 * clang's) dwarf_getscopes finds no scope at all. It also walks the CU
 * from its start for every pc, which on a large C++ CU costs milliseconds.
 *
 * The index holds every code range of every subprogram DIE that has code,
 * wherever it is nested (namespaces, types, other functions), sorted by
 * start. Code ranges of different functions do not overlap, so the one
 * range starting at or below a pc either holds it or no function does.
 * Nesting deeper than MAX_SCOPE_DEPTH DIEs is not searched. Indexes are
 * kept in the state (cu_indexes), by the CU DIE's address in the debug
 * data, until its caches are cleared (the modules changed). */

struct fn_range {
    Dwarf_Addr low, high; /* CU-relative, as dwarf_haspc takes a pc */
    Dwarf_Die fn;
};

struct cu_index {
    size_t n, cap;
    struct fn_range *range;
};

static void cu_index_free(void *value)
{
    struct cu_index *x = value;
    free(x->range);
    free(x);
}

static bool holds_code(int tag)
{
    switch (tag) {
    case DW_TAG_subprogram:
    case DW_TAG_inlined_subroutine:
    case DW_TAG_entry_point:
    case DW_TAG_lexical_block:
    case DW_TAG_try_block:
    case DW_TAG_catch_block:
    case DW_TAG_with_stmt: return true;
    }
    return false;
}

/* DIEs under which a function definition can be nested. */
static bool may_hold_definitions(int tag)
{
    switch (tag) {
    case DW_TAG_namespace:
    case DW_TAG_module:
    case DW_TAG_structure_type:
    case DW_TAG_class_type:
    case DW_TAG_union_type:
    case DW_TAG_interface_type:
    case DW_TAG_imported_unit:
    case DW_TAG_subprogram: /* nested functions (GNU C) */
    case DW_TAG_lexical_block: return true;
    }
    return false;
}

/* Appends the code ranges of FN to X; false when out of memory. */
static bool index_ranges(struct cu_index *x, Dwarf_Die *fn)
{
    Dwarf_Addr base, low, high;
    ptrdiff_t at = 0;
    while ((at = dwarf_ranges(fn, at, &base, &low, &high)) > 0) {
        if (low >= high)
            continue;
        if (x->n == x->cap) {
            size_t cap = x->cap ? x->cap * 2 : 64;
            struct fn_range *r = realloc(x->range, cap * sizeof *r);
            if (!r)
                return false;
            x->range = r;
            x->cap = cap;
        }
        x->range[x->n++] = (struct fn_range){ low, high, *fn };
    }
    return true;
}

static bool index_walk(struct cu_index *x, Dwarf_Die *parent, unsigned depth)
{
    Dwarf_Die die;
    if (depth >= MAX_SCOPE_DEPTH || dwarf_child(parent, &die) != 0)
        return true;
    do {
        int tag = dwarf_tag(&die);
        if (tag == DW_TAG_subprogram && !index_ranges(x, &die))
            return false;
        if (!may_hold_definitions(tag))
            continue;
        Dwarf_Die inner = die;
        if (tag == DW_TAG_imported_unit) {
            Dwarf_Attribute a;
            if (!dwarf_attr(&die, DW_AT_import, &a) || !dwarf_formref_die(&a, &inner))
                continue;
        }
        if (!index_walk(x, &inner, depth + 1))
            return false;
    } while (dwarf_siblingof(&die, &die) == 0);
    return true;
}

static int by_low(const void *a, const void *b)
{
    const struct fn_range *x = a, *y = b;
    return (x->low > y->low) - (x->low < y->low);
}

/* The index of CU, built on first use; NULL when out of memory. */
static const struct cu_index *cu_index_of(struct mt_sym_state *st, Dwarf_Die *cu)
{
    struct cu_index *x = sym_memo_find(&st->cu_indexes, (uintptr_t)cu->addr, 0);
    if (x)
        return x;
    x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    bool ok = index_walk(x, cu, 0);
    if (ok && x->n)
        qsort(x->range, x->n, sizeof *x->range, by_low);
    if (!ok || !sym_memo_add(&st->cu_indexes, (uintptr_t)cu->addr, 0, x, cu_index_free)) {
        cu_index_free(x);
        return NULL;
    }
    return x;
}

/* The subprogram DIE of CU whose code holds PC (CU-relative). */
bool sym_cu_function_at(struct mt_sym_state *st, Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *fn)
{
    const struct cu_index *x = cu_index_of(st, cu);
    if (!x)
        return false;
    size_t lo = 0, hi = x->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->range[mid].low <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || pc >= x->range[lo - 1].high)
        return false;
    *fn = x->range[lo - 1].fn;
    return true;
}

/* Appends to W->chain the inlined functions under PARENT (a function that
 * holds W->pc) whose code holds it; a code DIE's children are searched
 * only when it holds the pc, and only one sibling can. */
void sym_inline_walk(struct scope_walk *w, Dwarf_Die *parent, unsigned depth)
{
    Dwarf_Die die;
    if (depth >= MAX_SCOPE_DEPTH || dwarf_child(parent, &die) != 0)
        return;
    do {
        int tag = dwarf_tag(&die);
        if (!holds_code(tag) || tag == DW_TAG_subprogram || dwarf_haspc(&die, w->pc) <= 0)
            continue;
        if (tag == DW_TAG_inlined_subroutine && w->n < MAX_ROWS)
            w->chain[w->n++] = die;
        sym_inline_walk(w, &die, depth + 1);
        return;
    } while (dwarf_siblingof(&die, &die) == 0);
}

/* The children of a function that hold code (inlined calls, lexical
 * blocks), by their ranges, sorted: only one holds a pc, as in
 * sym_inline_walk, and a binary search finds it. A function with many
 * inlined calls has thousands of DIEs, and where the producer writes no
 * DW_AT_sibling (clang) every dwarf_siblingof reads through a whole
 * subtree: walking them for every frame cost clang's builds a third more
 * than gcc's. Built once per function, kept in fn_children. */
static const struct cu_index *children_of(struct mt_sym_state *st, Dwarf_Die *fn)
{
    struct cu_index *x = sym_memo_find(&st->fn_children, (uintptr_t)fn->addr, 0);
    if (x)
        return x;
    if (!(x = calloc(1, sizeof *x)))
        return NULL;
    Dwarf_Die die;
    bool ok = true;
    if (dwarf_child(fn, &die) == 0)
        do {
            int tag = dwarf_tag(&die);
            if (holds_code(tag) && tag != DW_TAG_subprogram)
                ok = index_ranges(x, &die);
        } while (ok && dwarf_siblingof(&die, &die) == 0);
    if (ok && x->n) /* (no ranges: x->range is NULL) */
        qsort(x->range, x->n, sizeof *x->range, by_low);
    if (!ok || !sym_memo_add(&st->fn_children, (uintptr_t)fn->addr, 0, x, cu_index_free)) {
        cu_index_free(x);
        return NULL;
    }
    return x;
}

void sym_fn_inline_walk(struct mt_sym_state *st, struct scope_walk *w)
{
    const struct cu_index *x = children_of(st, &w->chain[0]);
    if (!x) {
        sym_inline_walk(w, &w->chain[0], 0);
        return;
    }
    size_t lo = 0, hi = x->n;
    while (lo < hi) { /* past the last range starting at or below the pc */
        size_t mid = lo + (hi - lo) / 2;
        if (x->range[mid].low <= w->pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || w->pc >= x->range[lo - 1].high)
        return;
    Dwarf_Die die = x->range[lo - 1].fn;
    if (dwarf_tag(&die) == DW_TAG_inlined_subroutine && w->n < MAX_ROWS)
        w->chain[w->n++] = die;
    sym_inline_walk(w, &die, 1);
}
