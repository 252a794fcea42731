/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Which compile unit holds a pc when libdwfl cannot say: a module's index
 * of CU code ranges, built from the CUs themselves. */
#include "store/internal_heap.h"
#include "symbolize/sym_internal.h"

#include "base/output.h"

#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

/* libdwfl (0.188) finds the CU of an address only through .debug_aranges
 * (dwfl_module_addrdie, dwfl_module_getsrc). clang emits none, and a module
 * linked from objects of several compilers may have them for some CUs
 * only; there libdwfl finds no CU, or the one whose arange starts below
 * the pc, which does not hold it. Then the CU comes from this index, as
 * libbacktrace's build_address_map and LLVM's DWARFDebugAranges make
 * theirs when the section is missing: every code range of every compile
 * (or skeleton) unit, from its DW_AT_low_pc/high_pc or DW_AT_ranges
 * (dwarf_ranges reads DWARF 4's .debug_ranges and DWARF 5's rnglists),
 * sorted by start.
 *
 * Built once per Dwarf, on the first pc libdwfl could not place (a module
 * whose aranges answer every lookup never builds one), and kept in the
 * state's cu_maps memo until its caches are cleared, as the function
 * indexes are. Only the unit headers and CU DIEs are read, not the DIEs
 * below them. At most CU_RANGES_MAX ranges (24 bytes each) are kept: a
 * module with more gets an empty index, and its frames stay as libdwfl
 * leaves them. Ranges starting at 0 are code the linker dropped
 * (-ffunction-sections, COMDAT): no module has code at its address 0.
 * Ranges of different CUs do not overlap in a sane module; where they do
 * (tombstoned or damaged data) the one starting last below the pc is
 * taken, and checked to hold it. */

#define CU_RANGES_MAX ((size_t)1 << 20)

struct cu_range {
    Dwarf_Addr low, high; /* [low, high) in the module's debug addresses */
    Dwarf_Off cu;         /* the unit's DIE offset in .debug_info */
};

struct cu_map {
    size_t n;
    struct cu_range range[];
};

static int by_low(const void *a, const void *b)
{
    const struct cu_range *x = a, *y = b;
    if (x->low != y->low)
        return x->low < y->low ? -1 : 1;
    return (x->high > y->high) - (x->high < y->high);
}

/* The ranges of every unit of DW with code, sorted, adjacent ranges of one
 * unit merged; NULL when out of memory. Over CU_RANGES_MAX: an empty map.
 * The ranges grow in ST's cu_scratch, which libdw may leave there when it
 * runs out of memory (freed with the state's caches). */
static struct cu_map *cu_map_build(struct mt_sym_state *st, Dwarf *dw)
{
    /* Walking every unit makes libdw allocate where a failure asserts
     * (its abbreviation tables' hash) rather than calling the
     * out-of-memory handler sym_oom.c sets: with little of memtrace's
     * internal heap left (a program under ulimit -v), no index, and the
     * frame is module+offset. */
    if (mt_iheap_headroom() < mt_iheap_capacity() / 4)
        return NULL;
    size_t n = 0, cap = 0;
    free(st->cu_scratch);
    st->cu_scratch = NULL;
    struct cu_range *r = NULL;
    Dwarf_CU *cu = NULL;
    Dwarf_Die cudie;
    uint8_t unit_type;
    bool over = false;
    while (!over && dwarf_get_units(dw, cu, &cu, NULL, &unit_type, &cudie, NULL) == 0) {
        if (unit_type != DW_UT_compile && unit_type != DW_UT_skeleton && unit_type != DW_UT_partial)
            continue;
        Dwarf_Off off = dwarf_dieoffset(&cudie);
        Dwarf_Addr base, low, high;
        ptrdiff_t at = 0;
        while ((at = dwarf_ranges(&cudie, at, &base, &low, &high)) > 0) {
            if (low == 0 || low >= high)
                continue;
            if (n == CU_RANGES_MAX) {
                over = true;
                break;
            }
            if (n == cap) {
                size_t ncap = cap ? cap * 2 : 64;
                struct cu_range *t = realloc(r, ncap * sizeof *t);
                if (!t) {
                    free(r);
                    st->cu_scratch = NULL;
                    return NULL;
                }
                st->cu_scratch = r = t;
                cap = ncap;
            }
            r[n++] = (struct cu_range){ low, high, off };
        }
    }
    if (over)
        n = 0;
    if (n)
        qsort(r, n, sizeof *r, by_low);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (kept && r[kept - 1].cu == r[i].cu && r[i].low <= r[kept - 1].high) {
            if (r[i].high > r[kept - 1].high)
                r[kept - 1].high = r[i].high;
            continue;
        }
        r[kept++] = r[i];
    }
    struct cu_map *m = malloc(sizeof *m + kept * sizeof m->range[0]);
    if (m) {
        m->n = kept;
        for (size_t i = 0; i < kept; i++)
            m->range[i] = r[i];
    }
    free(r);
    st->cu_scratch = NULL;
    return m;
}

static const struct cu_map *cu_map_of(struct mt_sym_state *st, Dwarf *dw)
{
    struct cu_map *m = sym_memo_find(&st->cu_maps, (uintptr_t)dw, 0);
    if (m)
        return m;
    m = cu_map_build(st, dw);
    if (m && !sym_memo_add(&st->cu_maps, (uintptr_t)dw, 0, m, NULL)) {
        free(m);
        return NULL;
    }
    return m;
}

static void keep_value(void *value)
{
    (void)value; /* libdw's data: goes with the module */
}


/* ------------------------------------------------------------ file names */

/* File names as gdb gives them (gdb 13: dwarf2_start_subfile and
 * buildsym's start_subfile), where libdw's differ. libdw joins every file
 * of a line table with its directory entry; in DWARF 4 entry 0 is
 * DW_AT_comp_dir, which it joins too, where gdb leaves such a name as the
 * table has it (relative to the compilation directory). gdb then names
 * each file by the first of its "subfiles" that is the same file once a
 * relative name is joined with DW_AT_comp_dir: the CU's own DW_AT_name,
 * then the table's files in order. clang's DWARF 5 tables name the
 * primary file by directory entry 0, the absolute compilation directory:
 * libdw's name is absolute, and gdb's (and so memtrace's) is DW_AT_name,
 * relative as the compiler was given it. addr2line joins every relative
 * name with DW_AT_comp_dir. */

/* Whether A and B name one file, a relative name being relative to DIR
 * (NULL: not known, then only equal names do). */
static bool same_file(const char *a, const char *b, const char *dir)
{
    if ((a[0] == '/') == (b[0] == '/'))
        return strcmp(a, b) == 0;
    if (a[0] != '/') {
        const char *t = a;
        a = b;
        b = t;
    }
    size_t len = dir ? strlen(dir) : 0;
    return dir && dir[0] == '/' && strncmp(a, dir, len) == 0 && a[len] == '/' &&
           strcmp(a + len + 1, b) == 0;
}

/* libdw's NAME of a file of a DWARF 4 table as the table has it: without
 * the compilation directory when it came from directory entry 0 (DIRS[0]
 * is DW_AT_comp_dir there); when another (absolute) entry could have given
 * it too, libdw's name is kept. */
static const char *table_name(const char *name, const char *const *dirs, size_t ndirs)
{
    size_t len = ndirs && dirs[0] ? strlen(dirs[0]) : 0;
    if (!len || dirs[0][0] != '/' || strncmp(name, dirs[0], len) != 0 || name[len] != '/')
        return name;
    for (size_t k = 1; k < ndirs; k++) {
        size_t klen = dirs[k] ? strlen(dirs[k]) : 0;
        if (klen && dirs[k][0] == '/' && strncmp(name, dirs[k], klen) == 0 && name[klen] == '/')
            return name;
    }
    return name + len + 1;
}

/* Works out gdb's name of every file of FILES (CU's table) whose name is
 * not libdw's, into ST's file_names; false when out of memory. */
static bool file_names_add(struct mt_sym_state *st, Dwarf_Die *cu, Dwarf_Files *files)
{
    size_t n, ndirs;
    const char *const *dirs;
    Dwarf_Half version;
    if (dwarf_getsrcfiles(cu, &files, &n) != 0 || dwarf_getsrcdirs(files, &dirs, &ndirs) != 0 ||
        dwarf_cu_info(cu->cu, &version, NULL, NULL, NULL, NULL, NULL, NULL) != 0)
        return true;
    if (mt_iheap_headroom() < mt_iheap_capacity() / 4)
        return true; /* libdw's names, as cu_map_build gives up */
    const char *dir = sym_die_string(cu, DW_AT_comp_dir), *cu_name = sym_die_string(cu, DW_AT_name);
    const char **gdb_name = malloc((n ? n : 1) * sizeof *gdb_name);
    if (!gdb_name)
        return false;
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        const char *lib = dwarf_filesrc(files, i, NULL, NULL);
        if (!lib) {
            gdb_name[i] = "";
            continue;
        }
        gdb_name[i] = version < 5 ? table_name(lib, dirs, ndirs) : lib;
        if (cu_name && same_file(gdb_name[i], cu_name, dir))
            gdb_name[i] = cu_name;
        else
            for (size_t j = 0; j < i; j++) /* one name each: the same if equal */
                if (gdb_name[j][0] && (gdb_name[j][0] == '/') != (gdb_name[i][0] == '/') &&
                    same_file(gdb_name[j], gdb_name[i], dir)) {
                    gdb_name[i] = gdb_name[j];
                    break;
                }
        if (gdb_name[i] != lib && strcmp(gdb_name[i], lib) != 0)
            ok = sym_memo_add(&st->file_names, (uintptr_t)lib, 1, (void *)gdb_name[i], keep_value);
    }
    free(gdb_name);
    return ok;
}

const char *sym_file_name(struct mt_sym_state *st, Dwarf_Die *cu, const char *name)
{
    Dwarf_Files *files;
    size_t n;
    if (!name || !cu || dwarf_getsrcfiles(cu, &files, &n) != 0)
        return name;
    if (!sym_memo_find(&st->file_names, (uintptr_t)files, 2)) {
        if (!file_names_add(st, cu, files) ||
            !sym_memo_add(&st->file_names, (uintptr_t)files, 2, files, keep_value))
            return name;
    }
    const char *gdb_name = sym_memo_find(&st->file_names, (uintptr_t)name, 1);
    return gdb_name ? gdb_name : name;
}

/* One note per module of ST that a split unit is missing: the .dwo file
 * moved or was deleted, or the module's units are in a .dwp package, which
 * libdw 0.188 does not read. Its frames then have the skeleton's lines and
 * the symbol table's names, without the inlined calls. */
static void note_missing_split(struct mt_sym_state *st, Dwfl_Module *mod, Dwarf_Die *skeleton)
{
    const char *path = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    uint64_t h = 1469598103934665603u;
    for (const char *c = path ? path : ""; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211u;
    for (unsigned i = 0; i < st->nsplit_noted; i++)
        if (st->split_noted[i] == h)
            return;
    if (st->nsplit_noted == SPLIT_NOTED_MAX)
        return;
    st->split_noted[st->nsplit_noted++] = h;
    const char *dwo = sym_die_string(skeleton, DW_AT_dwo_name);
    if (!dwo)
        dwo = sym_die_string(skeleton, DW_AT_GNU_dwo_name);
    Dwarf_Addr bias;
    mt_warn("%s: split DWARF %s not found (nor read from a .dwp package); its frames have no "
            "inlined calls",
            sym_module_name(mod, &bias), dwo ? dwo : "(unnamed)");
}

/* CU itself, or, for a skeleton unit (split DWARF), its split unit when
 * libdw finds it (the .dwo file named by DW_AT_dwo_name, beside the module
 * or under DW_AT_comp_dir), copied into MEM: the functions and their
 * inlined calls are described there only, the skeleton holds the unit's
 * ranges and lines. libdwfl's dwfl_module_addrdie gives the skeleton. A
 * skeleton whose split unit is missing is returned as it is. */
static Dwarf_Die *split_unit(struct mt_sym_state *st, Dwfl_Module *mod, Dwarf_Die *cu,
                             Dwarf_Die *mem)
{
    Dwarf_Die split;
    uint8_t unit_type;
    if (dwarf_cu_info(cu->cu, NULL, &unit_type, NULL, &split, NULL, NULL, NULL) != 0 ||
        unit_type != DW_UT_skeleton)
        return cu;
    if (!split.cu) {
        note_missing_split(st, mod, cu);
        return cu;
    }
    *mem = split;
    return mem;
}

/* The unit of DW whose code holds PC (a debug address) by ST's index. */
static bool indexed_cu(struct mt_sym_state *st, Dwfl_Module *mod, Dwarf *dw, Dwarf_Addr pc,
                       Dwarf_Die *out)
{
    const struct cu_map *m = cu_map_of(st, dw);
    if (!m)
        return false;
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->range[mid].low <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || pc >= m->range[lo - 1].high || !dwarf_offdie(dw, m->range[lo - 1].cu, out))
        return false;
    split_unit(st, mod, out, out);
    return true;
}

Dwarf_Die *sym_module_cu(struct mt_sym_state *st, Dwfl_Module *mod, Dwarf_Addr pc, Dwarf_Die *mem,
                         Dwarf_Addr *bias, bool *indexed)
{
    *indexed = false;
    *bias = 0;
    Dwarf_Die *cu = dwfl_module_addrdie(mod, pc, bias);
    /* A CU without code ranges (dwarf_haspc < 0) is given the benefit of
     * the doubt. */
    if (cu && dwarf_haspc(cu, pc - *bias) != 0)
        return split_unit(st, mod, cu, mem);
    Dwarf *dw = dwfl_module_getdwarf(mod, bias);
    if (!dw || !indexed_cu(st, mod, dw, pc - *bias, mem))
        return NULL;
    *indexed = true;
    return mem;
}
