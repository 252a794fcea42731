/* libdwfl symbolizer. Every stored frame is a return address, so lookups use
 * pc - 1: the call instruction, whose line and inline scopes are the ones the
 * user wrote (pc itself can belong to the next statement or scope). */
#include "symbolize.h"

#include "common.h"
#include "lock.h"
#include "modules.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *debuginfo_path;
static const Dwfl_Callbacks self_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .debuginfo_path = &debuginfo_path,
};

static mt_lock self_lock = MT_LOCK_INIT;
static Dwfl *self_dwfl;

/* Unloaded libraries, reported from their files at their old addresses. */
static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};
static Dwfl *unloaded_dwfl;
static bool (*unloaded_lookup)(uintptr_t, mt_unloaded_module *);

void mt_sym_set_unloaded_lookup(bool (*fn)(uintptr_t, mt_unloaded_module *))
{
    unloaded_lookup = fn;
}

/* The module of an unloaded library holding PC, from its file on disk. */
static Dwfl_Module *unloaded_module(Dwarf_Addr pc)
{
    mt_unloaded_module m;
    if (!unloaded_lookup || !unloaded_lookup(pc, &m))
        return NULL;
    if (!unloaded_dwfl && !(unloaded_dwfl = dwfl_begin(&offline_callbacks)))
        return NULL;
    Dwfl_Module *mod = dwfl_addrmodule(unloaded_dwfl, pc);
    if (mod)
        return mod;
    dwfl_report_begin_add(unloaded_dwfl);
    dwfl_report_elf(unloaded_dwfl, m.path, m.path, -1, m.bias, false);
    dwfl_report_end(unloaded_dwfl, NULL, NULL);
    return dwfl_addrmodule(unloaded_dwfl, pc);
}

static bool report_self(Dwfl *dwfl)
{
    dwfl_report_begin(dwfl);
    int rc = dwfl_linux_proc_report(dwfl, getpid());
    return dwfl_report_end(dwfl, NULL, NULL) == 0 && rc == 0;
}

bool mt_sym_self_lock(void)
{
    return mt_lock_try_for(&self_lock, 20000000);
}

void mt_sym_self_unlock(void)
{
    mt_lock_release(&self_lock);
}

mt_dwfl *mt_sym_self(void)
{
    if (!self_dwfl) {
        Dwfl *d = dwfl_begin(&self_callbacks);
        if (d && !report_self(d)) {
            dwfl_end(d);
            d = NULL;
        }
        self_dwfl = d;
    }
    return self_dwfl;
}

/* __cxa_demangle if a C++ runtime is loaded in this process; looked up once
 * (C programs have no mangled names to show). */
typedef char *demangle_fn(const char *, char *, size_t *, int *);

static char *demangle(const char *name)
{
    static demangle_fn *fn;
    static int looked;
    if (name[0] != '_' || name[1] != 'Z')
        return NULL;
    if (!looked) {
        fn = (demangle_fn *)dlsym(RTLD_DEFAULT, "__cxa_demangle");
        looked = 1;
    }
    int status = -1;
    char *d = fn ? fn(name, NULL, NULL, &status) : NULL;
    if (status != 0) {
        free(d);
        return NULL;
    }
    return d;
}

static const char *die_string(Dwarf_Die *die, unsigned attr)
{
    Dwarf_Attribute a;
    return dwarf_attr_integrate(die, attr, &a) ? dwarf_formstring(&a) : NULL;
}

/* Writes "NAME" of a function DIE, demangled, to OUT. */
static void put_function(mt_out *out, Dwarf_Die *die, const char *fallback)
{
    const char *linkage = die_string(die, DW_AT_linkage_name);
    if (!linkage)
        linkage = die_string(die, DW_AT_MIPS_linkage_name);
    char *d = linkage ? demangle(linkage) : NULL;
    const char *name = d ? d : die_string(die, DW_AT_name);
    if (!name)
        name = linkage ? linkage : fallback ? fallback : "??";
    mt_out_printf(out, "%s", name);
    free(d);
}

static void put_symbol(mt_out *out, const char *sym)
{
    char *d = sym ? demangle(sym) : NULL;
    mt_out_printf(out, "%s", d ? d : sym ? sym : "??");
    free(d);
}

static void put_location(mt_out *out, const char *file, int line, int col)
{
    if (!file || line <= 0)
        return;
    if (col > 0)
        mt_out_printf(out, " at %s:%d:%d", file, line, col);
    else
        mt_out_printf(out, " at %s:%d", file, line);
}

static const char *module_name(Dwfl_Module *mod, Dwarf_Addr *start)
{
    const char *name = dwfl_module_info(mod, NULL, start, NULL, NULL, NULL, NULL, NULL);
    if (!name)
        return "??";
    const char *slash = strrchr(name, '/');
    return slash ? slash + 1 : name;
}

/* Call site of an inlined-subroutine DIE, from DW_AT_call_{file,line,column}. */
static void call_site(Dwarf_Die *cu, Dwarf_Die *inl, const char **file, int *line, int *col)
{
    Dwarf_Attribute a;
    Dwarf_Word w;
    Dwarf_Files *files;
    size_t nfiles;
    *file = NULL;
    *line = *col = 0;
    if (dwarf_attr(inl, DW_AT_call_file, &a) && dwarf_formudata(&a, &w) == 0 &&
        dwarf_getsrcfiles(cu, &files, &nfiles) == 0 && w < nfiles)
        *file = dwarf_filesrc(files, w, NULL, NULL);
    if (dwarf_attr(inl, DW_AT_call_line, &a) && dwarf_formudata(&a, &w) == 0)
        *line = (int)w;
    if (dwarf_attr(inl, DW_AT_call_column, &a) && dwarf_formudata(&a, &w) == 0)
        *col = (int)w;
}

static void print_frame(Dwfl *dwfl, bool refresh, unsigned n, uintptr_t ret, mt_out *out)
{
    Dwarf_Addr pc = ret - 1;
    Dwfl_Module *mod = dwfl_addrmodule(dwfl, pc);
    if (!mod && refresh && report_self(dwfl))
        mod = dwfl_addrmodule(dwfl, pc);
    const char *note = "";
    if (!mod && (mod = unloaded_module(pc)) != NULL)
        note = " (library unloaded since)";
    if (!mod) {
        mt_out_printf(out, "  #%u 0x%lx in a module that is no longer mapped\n",
                      n, (unsigned long)ret);
        return;
    }
    Dwarf_Addr start = 0;
    const char *modname = module_name(mod, &start);
    const char *file = NULL;
    int line = 0, col = 0;
    Dwfl_Line *dl = dwfl_module_getsrc(mod, pc);
    if (dl)
        file = dwfl_lineinfo(dl, NULL, &line, &col, NULL, NULL);

    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = dwfl_module_addrdie(mod, pc, &bias);
    /* dwarf_getscopes continues past an inlined subroutine into its
     * abstract origin; the chain of callers is the concrete nesting of the
     * innermost scope, which dwarf_getscopes_die gives. */
    Dwarf_Die *scopes = NULL;
    int nscopes = cu ? dwarf_getscopes(cu, pc - bias, &scopes) : 0;
    if (nscopes > 0) {
        Dwarf_Die innermost = scopes[0];
        free(scopes);
        scopes = NULL;
        nscopes = dwarf_getscopes_die(&innermost, &scopes);
    }
    bool printed = false;
    for (int i = 0; i < nscopes; i++) {
        int tag = dwarf_tag(&scopes[i]);
        if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
            continue;
        if (!printed)
            mt_out_printf(out, "  #%u ", n);
        else
            mt_out_printf(out, "     inlined into ");
        put_function(out, &scopes[i], dwfl_module_addrname(mod, pc));
        put_location(out, file, line, col);
        mt_out_printf(out, "%s\n", printed ? "" : note);
        printed = true;
        if (tag == DW_TAG_subprogram)
            break;
        call_site(cu, &scopes[i], &file, &line, &col);
    }
    free(scopes);
    if (printed)
        return;

    const char *sym = dwfl_module_addrname(mod, pc);
    mt_out_printf(out, "  #%u ", n);
    if (sym)
        put_symbol(out, sym);
    else
        mt_out_printf(out, "0x%lx", (unsigned long)ret);
    if (file && line > 0)
        put_location(out, file, line, col);
    else
        mt_out_printf(out, " in %s+0x%lx", modname, (unsigned long)(pc - start));
    mt_out_printf(out, "%s\n", note);
}

void mt_sym_print_stack(mt_dwfl *dwfl, bool refresh, const uintptr_t *frames,
                        unsigned depth, mt_out *out)
{
    for (unsigned i = 0; i < depth; i++)
        print_frame(dwfl, refresh, i, frames[i], out);
}
