/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The rows of a return address (mt_sym_frames): its file:line and the
 * functions inlined there from the debug information, else its name from
 * the symbol table, else its module and offset. Every stored frame is a
 * return address, so lookups use pc - 1: the call instruction, whose line
 * and inline scopes are the ones the user wrote (pc itself can belong to
 * the next statement or scope). The rows of every address asked for are
 * kept in the state's frame cache (sym_state.c) until the modules change. */
#include "symbolize/sym_internal.h"

#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

static void rows_free(struct rows *r)
{
    for (unsigned i = 0; i < r->nowned; i++)
        free(r->owned[i]);
    r->nowned = 0;
}

/* Call site of an inlined-subroutine DIE, from DW_AT_call_{file,line,column}. */
static void call_site(struct mt_sym_state *st, Dwarf_Die *cu, Dwarf_Die *inl, const char **file,
                      int *line, int *col)
{
    Dwarf_Attribute a;
    Dwarf_Word w;
    Dwarf_Files *files;
    size_t nfiles;
    *file = NULL;
    *line = *col = 0;
    if (dwarf_attr(inl, DW_AT_call_file, &a) && dwarf_formudata(&a, &w) == 0 &&
        dwarf_getsrcfiles(cu, &files, &nfiles) == 0 && w < nfiles)
        *file = sym_file_name(st, cu, dwarf_filesrc(files, w, NULL, NULL));
    if (dwarf_attr(inl, DW_AT_call_line, &a) && dwarf_formudata(&a, &w) == 0)
        *line = (int)w;
    if (dwarf_attr(inl, DW_AT_call_column, &a) && dwarf_formudata(&a, &w) == 0)
        *col = (int)w;
}

/* The rows of the frame at PC (RET - 1) in MOD: one per function of the
 * debug information's inline chain, innermost first, each with the line
 * its inner row was called from; without debug information scopes, one row
 * named from the symbol table. An address outside the code ranges of the
 * CU that libdwfl finds for it (the padding after a function, code of an
 * object without debug information) has neither scopes nor a line: libdwfl picks that CU
 * from a table that keeps only where each CU's ranges start, and its line
 * lookup returns the last row at or below the address whatever lies
 * between, so it would pair the address with a line of the code before.
 * Where libdwfl has no CU holding the address (no .debug_aranges: clang),
 * sym_module_cu finds it in the module's CU ranges, and the line comes
 * from libdw by the same search as libdwfl's (dwarf_getsrc_die). */
static void module_rows(struct mt_sym_state *st, Dwfl_Module *mod, Dwarf_Addr pc, uintptr_t ret,
                        bool unloaded)
{
    struct rows *r = &st->rows;
    Dwarf_Addr file_bias = 0;
    const char *modname = sym_module_name(mod, &file_bias);
    mt_frame base = {
        .ret = ret,
        .module = modname,
        .offset = (uintptr_t)(pc - file_bias),
        .unloaded = unloaded,
    };

    Dwarf_Addr bias = 0;
    Dwarf_Die cu_mem;
    bool indexed;
    Dwarf_Die *cu = sym_module_cu(st, mod, pc, &cu_mem, &bias, &indexed);
    const char *file = NULL;
    int line = 0, col = 0;
    if (cu && !indexed) {
        Dwfl_Line *dl = dwfl_module_getsrc(mod, pc);
        if (dl)
            file = sym_file_name(st, dwfl_linecu(dl),
                                 dwfl_lineinfo(dl, NULL, &line, &col, NULL, NULL));
    } else if (cu) {
        Dwarf_Line *dl = dwarf_getsrc_die(cu, pc - bias);
        if (dl && (file = dwarf_linesrc(dl, NULL, NULL)) != NULL &&
            (dwarf_lineno(dl, &line) != 0 || dwarf_linecol(dl, &col) != 0))
            file = NULL;
        file = sym_file_name(st, cu, file);
    }

    /* The chain of callers is the concrete nesting of the innermost scope
     * (not its abstract origin's), innermost first. */
    struct scope_walk *w = &st->scopes;
    w->pc = pc - bias;
    w->n = 0;
    if (cu && sym_cu_function_at(st, cu, w->pc, &w->chain[0])) {
        w->n = 1;
        sym_fn_inline_walk(st, w);
    }
    for (unsigned k = w->n; k-- > 0 && r->n < MAX_ROWS;) {
        Dwarf_Die *scope = &w->chain[k];
        int tag = dwarf_tag(scope);
        mt_frame *f = &r->row[r->n];
        *f = base;
        f->inline_depth = r->n++;
        f->function = sym_function_name(r, scope, mod, pc, &f->mangled);
        f->file = file && line > 0 ? file : NULL;
        f->line = f->file ? line : 0;
        f->column = f->file && col > 0 ? col : 0;
        if (tag == DW_TAG_subprogram)
            break;
        call_site(st, cu, scope, &file, &line, &col);
    }
    if (r->n)
        return;

    mt_frame *f = &r->row[r->n++];
    *f = base;
    f->from_symtab = true;
    const char *sym = sym_symbol_name(mod, pc);
    f->function = sym_demangled(r, sym);
    f->mangled = f->function != sym ? sym : NULL;
    f->file = file && line > 0 ? file : NULL;
    f->line = f->file ? line : 0;
    f->column = f->file && col > 0 ? col : 0;
}

/* R's rows and their strings copied into one malloc'ed block; NULL when
 * out of memory. */
static mt_frame *rows_pack(const struct rows *r)
{
    size_t bytes = r->n * sizeof(mt_frame);
    for (unsigned i = 0; i < r->n; i++) {
        const mt_frame *f = &r->row[i];
        bytes += (f->function ? strlen(f->function) + 1 : 0) + (f->file ? strlen(f->file) + 1 : 0) +
                 (f->module ? strlen(f->module) + 1 : 0) +
                 (f->mangled ? strlen(f->mangled) + 1 : 0) +
                 (f->build_id ? strlen(f->build_id) + 1 : 0);
    }
    mt_frame *rows = malloc(bytes);
    if (!rows)
        return NULL;
    char *s = (char *)(rows + r->n);
    for (unsigned i = 0; i < r->n; i++) {
        rows[i] = r->row[i];
        const char **fields[] = { &rows[i].function, &rows[i].file, &rows[i].module,
                                  &rows[i].mangled, &rows[i].build_id };
        for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
            if (!*fields[k])
                continue;
            size_t len = strlen(*fields[k]) + 1;
            memcpy(s, *fields[k], len);
            *fields[k] = s;
            s += len;
        }
    }
    return rows;
}

/* module_rows with libdw guarded (sym_libdw_call). */
struct module_rows_call {
    struct mt_sym_state *st;
    Dwfl_Module *mod;
    Dwarf_Addr pc;
    uintptr_t ret;
    bool unloaded;
};

static void guarded_module_rows(void *arg)
{
    struct module_rows_call *c = arg;
    sym_guard_module(c->mod);
    module_rows(c->st, c->mod, c->pc, c->ret, c->unloaded);
}

void mt_sym_frames(mt_sym_state *st, bool refresh, uintptr_t ret, mt_frames_fn *fn, void *ctx)
{
    const struct frames_entry *cached = sym_cache_find(st, ret);
    if (cached) {
        fn(cached->rows, cached->n, ctx);
        return;
    }
    struct rows *r = &st->rows;
    r->n = 0;
    if (st->raw) {
        sym_raw_rows(st, ret);
        fn(r->row, r->n, ctx);
        mt_frame *packed = rows_pack(r);
        if (packed)
            sym_cache_add(st, ret, packed, r->n);
        return;
    }
    Dwarf_Addr pc = ret - 1;
    Dwfl_Module *mod = mt_sym_addrmodule(st->dwfl, pc);
    if (!mod && refresh && sym_read_modules(st))
        mod = mt_sym_addrmodule(st->dwfl, pc);
    bool unloaded = false;
    if (!mod && (mod = sym_unloaded_module(st, pc)) != NULL)
        unloaded = true;
    if (mod && !sym_libdw_spent()) {
        struct module_rows_call c = { st, mod, pc, ret, unloaded };
        if (!sym_libdw_call(guarded_module_rows, &c)) {
            rows_free(r);
            r->n = 0;
        }
    }
    if (mod && r->n == 0) {
        Dwarf_Addr file_bias = 0;
        const char *modname = sym_module_name(mod, &file_bias);
        r->row[r->n++] = (mt_frame){ .ret = ret,
                                     .module = modname,
                                     .offset = (uintptr_t)(pc - file_bias),
                                     .unloaded = unloaded,
                                     .from_symtab = true };
    } else if (!mod) {
        r->row[r->n++] = (mt_frame){ .ret = ret, .offset = (uintptr_t)pc };
    }
    fn(r->row, r->n, ctx);
    /* Kept whatever was found: the cache goes when the modules change. */
    mt_frame *packed = rows_pack(r);
    if (packed)
        sym_cache_add(st, ret, packed, r->n); /* frees it if it cannot keep it */
    rows_free(r);
}
