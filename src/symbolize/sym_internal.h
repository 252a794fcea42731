/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The symbolizer's private declarations, shared by the files of
 * src/symbolize/ and by nothing else (callers include symbolize/symbolize.h):
 * the state object every cache lives in, and the jobs' entry points into
 * one another.
 *
 *   sym_state.c    the state: creation, the process's default state and
 *                  its lock
 *   sym_memo.c     what the state keeps: the frame cache, the memos, and
 *                  dropping them (every file that keeps something calls
 *                  here, and it calls none of them)
 *   sym_modules.c  this process's modules: reading them again, unloaded
 *                  libraries, the debuginfo search (local in the process)
 *   sym_debuginfod.c  debuginfod's client, for memtrace-symbolize's search
 *   sym_maps.c     /proc/PID/maps: finding, reading, filtering, reporting
 *   sym_symtab.c   sorted symbol tables: address to name as libdwfl gives
 *                  it, name to address
 *   sym_names.c    function and module names, demangling
 *   sym_scopes.c   which function holds a pc, and its inline chain
 *   sym_cus.c      which compile unit holds a pc: libdwfl's aranges, else
 *                  an index of the CUs' code ranges
 *   sym_frames.c   mt_sym_frames: the rows of a return address
 *   sym_oom.c      libdw running out of memory
 *   sym_tail.c     mt_sym_tail_calls: frames tail calls left off the stack
 *   sym_raw.c      MEMTRACE_SYMBOLIZE=later: raw rows from the loaded
 *                  modules in memory, no file read
 *
 * Every function here takes the state it works for (or needs none); a state
 * is used by one thread at a time (the default state under
 * mt_sym_self_lock). */
#ifndef MT_SYM_INTERNAL_H
#define MT_SYM_INTERNAL_H

#include "symbolize/symbolize.h"

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_ROWS 64         /* inline nesting deeper than this is cut */
#define MAX_SCOPE_DEPTH 128 /* DIE nesting searched for functions */
#define TAIL_DEPTH MT_SYM_TAIL_MAX
#define TAIL_VISITS 256
#define TAIL_EDGES 64

/* ------------------------------------------------------------ memos */

/* A map from a pair of words to a malloc'ed value, for what symbolization
 * works out once and keeps until the frame cache goes (the function
 * indexes, the tail calls). Open addressing, count * 2 <= cap. */
struct memo_slot {
    uintptr_t a, b;
    void *value; /* NULL: empty slot */
};

struct memo {
    struct memo_slot *slot;
    size_t count, cap;
    void (*free_value)(void *); /* of every value; NULL: free */
};

void *sym_memo_find(const struct memo *m, uintptr_t a, uintptr_t b);
/* Keeps VALUE (not NULL) for (A, B), to be freed with FREE_VALUE (free if
 * NULL; the same for every value of M) when the state's caches are
 * cleared; false, VALUE not kept, if the memo cannot grow. */
bool sym_memo_add(struct memo *m, uintptr_t a, uintptr_t b, void *value,
                  void (*free_value)(void *));

/* ------------------------------------------------------------ scratch */

/* Rows under construction: their strings point into libdw's data (alive as
 * long as the Dwfl) or, for demangled names, into malloc'ed copies listed
 * in OWNED, freed once the rows are packed or handed out. */
struct rows {
    mt_frame row[MAX_ROWS];
    unsigned n;
    char *owned[MAX_ROWS];
    unsigned nowned;
};

/* The function DIEs (subprogram, inlined_subroutine) whose code holds a
 * pc, outermost first: the concrete nesting, not abstract origins. */
struct scope_walk {
    Dwarf_Addr pc; /* CU-relative, as dwarf_haspc takes it */
    Dwarf_Die chain[MAX_ROWS];
    unsigned n;
};

/* One tail call of a function: the address after its jump (a return
 * address as the stack would have had it) and its target. */
struct tail_edge {
    uintptr_t site_ret;
    uintptr_t target; /* entry address; 0: not known */
    bool alloc;       /* the target is one of the allocation functions */
};

/* The tail calls of one function being gathered. */
struct edge_walk {
    Dwfl *dwfl;
    Dwfl_Module *mod;
    Dwarf_Addr bias;
    struct tail_edge edge[TAIL_EDGES];
    unsigned n; /* TAIL_EDGES + 1: too many */
};

/* The frames inserted between a caller's return address and its callee. */
struct tail_chain {
    unsigned n;
    uintptr_t ret[TAIL_DEPTH]; /* innermost first */
};

/* The chains found so far: what every one of them has at its start and at
 * its end, in tail calls from the caller's target down to the callee. */
struct chain_search {
    struct mt_sym_state *st;
    uintptr_t callee; /* entry address; 0: the allocation functions */
    unsigned visits;
    bool failed; /* a bound was reached: nothing can be said */
    unsigned found, shortest;
    uintptr_t prefix[TAIL_DEPTH], suffix[TAIL_DEPTH]; /* suffix[0]: the last call */
    unsigned nprefix, nsuffix;
    uintptr_t path[TAIL_DEPTH];    /* the calls of the chain being followed */
    uintptr_t path_fn[TAIL_DEPTH]; /* the functions they are in */
};

/* ------------------------------------------------------------ the state */

/* The rows of one return address symbolized, packed in one block (the
 * rows, then their strings). */
struct frames_entry {
    uintptr_t ret; /* 0: empty slot */
    unsigned n;
    mt_frame *rows; /* one malloc'ed block with their strings */
};

/* Everything a symbolizer keeps: its Dwfl and every cache of what was
 * worked out from it. The caches (the frames, the function indexes, the
 * tail calls) are valid while the Dwfl's modules stay as they are and are
 * dropped together (sym_clear_caches) when they change; the symbol tables
 * live in the modules' userdata and go with the modules. The scratch space
 * at the end is what one call works in: not kept between calls. */
struct mt_sym_state {
    Dwfl *dwfl; /* NULL: not set up (the default state before first use) */
    /* MEMTRACE_SYMBOLIZE=later (the default state only): DWFL stays NULL,
     * every address gets a raw row (sym_raw.c), cached as others are. */
    bool raw;

    /* Frames by return address: open addressing, count * 2 <= cap. Frames
     * found in no module, or only in an unloaded library, are kept too:
     * they were looked for after a re-read, and stay as they are until the
     * modules change. */
    struct frames_entry *cache;
    size_t cache_count, cache_cap;
    /* Each CU's function index, by the CU DIE's address in the debug data
     * (key b = 0; sym_scopes.c). */
    struct memo cu_indexes;
    /* Each module's index of CU code ranges, by its Dwarf's address (key
     * b = 0; sym_cus.c): built only for a module where libdwfl could not
     * place a pc. */
    struct memo cu_maps;
    /* The name gdb gives each file of a CU's line table, by the address of
     * libdw's name for it (key b = 1), for the names that differ; and the
     * line tables whose names were worked out, by their Dwarf_Files (key
     * b = 2). The values point into libdw's data (sym_cus.c). */
    struct memo file_names;
    /* The ranges of the index being built: the state's, so that libdw
     * running out of memory half-way (sym_oom.c) leaves nothing unowned. */
    void *cu_scratch;
    /* The tail calls of each function looked into, by entry address (key
     * b = 0), and the chain of each (caller return address, callee return
     * address) asked for (sym_tail.c). */
    struct memo tail_fns, tail_chains;
    /* Each function's call sites sorted by return address, by its DIE's
     * address in the debug data (key b = 0), with the list being built
     * (state-owned for the same reason as cu_scratch; sym_tail.c). */
    struct memo call_sites;
    void *call_site_scratch;
    /* Each function's code-holding children by their code ranges, by the
     * function DIE's address (key b = 0; sym_scopes.c). */
    struct memo fn_children;

    /* The hash of the maps DWFL's modules were last reported from
     * (sym_read_modules); HASHED false: none to compare with. */
    bool hashed;
    uint64_t modules_hash;

    /* Unloaded libraries (the default state only; see
     * mt_sym_set_unloaded_lookup): where to look them up, their modules
     * reported from their files at their old addresses, and the modules'
     * generation DWFL was last read at. */
    bool (*unloaded_lookup)(uintptr_t, mt_unloaded_module *);
    unsigned long (*modules_generation)(void);
    unsigned long generation;
    Dwfl *unloaded_dwfl;

    /* The modules (a hash of their file names) whose missing split DWARF
     * was noted (sym_cus.c): one note per module for the life of the
     * state; past SPLIT_NOTED_MAX modules, no more notes. */
#define SPLIT_NOTED_MAX 32
    uint64_t split_noted[SPLIT_NOTED_MAX];
    unsigned nsplit_noted;

    /* Scratch. */
    struct rows rows;
    struct scope_walk scopes;
    struct edge_walk edges;
    struct chain_search chain;
    struct tail_chain found;
};

/* ------------------------------------------------------------ sym_raw.c */

/* The raw row of RET into ST->rows (ST->raw). */
void sym_raw_rows(struct mt_sym_state *st, uintptr_t ret);

/* ------------------------------------------------------------ sym_memo.c */

/* Drops every cache of ST, each memo's values freed as it was told, and the
 * scratch lists libdw may have left half-built (not the symbol tables:
 * they go with modules). */
void sym_clear_caches(struct mt_sym_state *st);
/* dwfl_end, and the symbol tables kept in its modules' userdata; ST's
 * caches too (keyed by addresses in DWFL's memory, whichever Dwfl it is). */
void sym_end_dwfl(struct mt_sym_state *st, Dwfl *dwfl);
/* The cached rows of RET; NULL if none. */
const struct frames_entry *sym_cache_find(const struct mt_sym_state *st, uintptr_t ret);
/* Keeps ROWS (a packed block) for RET, or frees it if the table cannot
 * grow. */
void sym_cache_add(struct mt_sym_state *st, uintptr_t ret, mt_frame *rows, unsigned n);

/* ------------------------------------------------------------ sym_modules.c */

/* libdwfl's callbacks for this process: local debuginfo search only. */
extern const Dwfl_Callbacks sym_self_callbacks;
/* Re-reads the modules of this process into ST's Dwfl (see there). */
bool sym_read_modules(struct mt_sym_state *st);
/* The module of an unloaded library holding PC, from its file on disk. */
Dwfl_Module *sym_unloaded_module(struct mt_sym_state *st, Dwarf_Addr pc);

/* ------------------------------------------------------------ sym_debuginfod.c */

/* MOD's debug file (ID not NULL: the dwz common file of build ID ID, LEN
 * bytes) from debuginfod (see there): fd; -1 not asked, -2 nothing (said
 * once). */
int mt_sym_debuginfod_find(Dwfl_Module *mod, const unsigned char *id, int len, const char *name,
                           char **found);

/* ------------------------------------------------------------ sym_maps.c */

/* The maps of process PID (0: this one), filtered, into a new buffer; NULL
 * if they cannot be read. */
char *sym_read_maps(pid_t pid, size_t *len);
/* Reports the modules of MAPS (LEN bytes of filtered maps of PID, 0 for
 * this process; NULL: let libdwfl read the file itself). libdwfl's error
 * code, 0 on success. */
int sym_report_maps(Dwfl *dwfl, char *maps, size_t len, int pid);
/* A hash of the file mappings in MAPS (the lines with a path). */
uint64_t sym_modules_hash(const char *maps, size_t len);

/* ------------------------------------------------------------ sym_symtab.c */

/* The name dwfl_module_addrname(MOD, ADDR) gives, from MOD's sorted table. */
const char *sym_symbol_name(Dwfl_Module *mod, GElf_Addr addr);
/* The same, and that symbol's address in *VALUE (NULL: not wanted), as
 * ADDR less dwfl_module_addrinfo's offset. */
const char *sym_symbol_at(Dwfl_Module *mod, GElf_Addr addr, GElf_Addr *value);
/* The address of the function NAME defined in MOD (LOCAL_OK: local
 * symbols count); 0 when none or several. */
uintptr_t sym_module_symbol(Dwfl_Module *mod, const char *name, bool local_ok);
/* Frees the symbol table kept in a module's userdata slot: as
 * dwfl_getmodules' callback, and as dwfl_report_end's "removed" one. */
int sym_drop_symtab(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
                    void *arg);
int sym_free_symtab(Dwfl_Module *mod, void *userdata_slot, const char *name, Dwarf_Addr base,
                    void *arg);

/* ------------------------------------------------------------ sym_names.c */

const char *sym_die_string(Dwarf_Die *die, unsigned attr);
/* DIE's linkage name, else its name; NULL if neither. */
const char *sym_die_linkage_name(Dwarf_Die *die);
/* A demangled NAME (kept in R) or NAME itself. */
const char *sym_demangled(struct rows *r, const char *name);
/* The name of a function DIE for a row (see there). */
const char *sym_function_name(struct rows *r, Dwarf_Die *die, Dwfl_Module *mod, Dwarf_Addr addr,
                              const char **mangled);
/* MOD's file name without its directory, and its file bias. */
const char *sym_module_name(Dwfl_Module *mod, Dwarf_Addr *bias);

/* ------------------------------------------------------------ sym_scopes.c */

/* The subprogram DIE of CU whose code holds PC (CU-relative). */
bool sym_cu_function_at(struct mt_sym_state *st, Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *fn);
/* Appends to W->chain the inlined functions under PARENT holding W->pc. */
void sym_inline_walk(struct scope_walk *w, Dwarf_Die *parent, unsigned depth);
/* sym_inline_walk from the function W->chain[0] (W->n = 1), its children
 * found by an index of their ranges built once per function. */
void sym_fn_inline_walk(struct mt_sym_state *st, struct scope_walk *w);

/* ------------------------------------------------------------ sym_cus.c */

/* The compile unit of MOD holding PC (an address of the process), with
 * the bias of MOD's debug addresses in *BIAS: libdwfl's (from
 * .debug_aranges) when it holds PC, else the one ST's index of the
 * module's CU ranges gives, copied into MEM (*INDEXED true: libdwfl knows
 * nothing of it, so ask libdw about its lines, dwarf_getsrc_die). NULL when
 * no unit holds PC. */
Dwarf_Die *sym_module_cu(struct mt_sym_state *st, Dwfl_Module *mod, Dwarf_Addr pc, Dwarf_Die *mem,
                         Dwarf_Addr *bias, bool *indexed);
/* NAME (libdw's name of a file of CU's line table, joined with its
 * directory) as gdb names it: the CU's DW_AT_name where that is the same
 * file, else the line table's name relative to DW_AT_comp_dir where the
 * table gives it so (see there). NAME itself for a name CU's table does
 * not hold. */
const char *sym_file_name(struct mt_sym_state *st, Dwarf_Die *cu, const char *name);

/* ------------------------------------------------------------ sym_oom.c */

/* MOD's Dwarf (if it has one) with the symbolizer's out-of-memory handler. */
void sym_guard_module(Dwfl_Module *mod);
/* Whether libdw may no longer be called (mt_sym_stop_libdw). */
bool sym_libdw_spent(void);
/* Calls FN(ARG), which calls into libdw; false, libdw then spent, when
 * libdw ran out of memory on the way (FN was left where it was). */
bool sym_libdw_call(void (*fn)(void *), void *arg);

#endif
