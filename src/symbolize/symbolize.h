/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Symbolization of return addresses with libdw/libdwfl, as data: for each
 * address, the function (demangled), file:line:column and every inlined
 * function, or module+offset without debug information. Text is written by
 * format.c only. Works on the live process (modules re-reported when an
 * address falls outside the known ones) and on any Dwfl the caller reported
 * (a core file, another process: memtrace-symbolize, through mt_sym_new).
 * The implementation is split by job over src/symbolize/sym_*.c, listed in
 * sym_internal.h. */
#ifndef MT_SYMBOLIZE_H
#define MT_SYMBOLIZE_H

#include "store/modules.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct Dwfl;

/* A symbolizer: one Dwfl (the modules of one process or core) and every
 * cache of what was worked out from it (as libbacktrace's
 * backtrace_state). Used by one thread at a time. The library's own, the
 * default state, is mt_sym_self's; memtrace-symbolize makes its own with
 * mt_sym_new. */
typedef struct mt_sym_state mt_sym_state;

/* One row of a symbolized return address. A return address gives one row
 * per function of its inline chain, innermost first: row 0 is the code at
 * ret - 1 (the call instruction), row k > 0 the function that row k - 1 was
 * inlined into, with the line of that inlined call. */
typedef struct {
    uintptr_t ret;         /* the return address looked up (at ret - 1) */
    const char *function;  /* demangled; NULL when nothing names it */
    const char *mangled;   /* the linkage (symbol) name FUNCTION was
                              demangled from; NULL when it was not */
    const char *file;      /* NULL: no line information */
    int line, column;      /* line > 0 when file is set; column 0: unknown */
    unsigned inline_depth; /* the row's index: 0, or inlined into row k - 1 */
    const char *module;    /* module file name without directory; NULL:
                              the address is in no module known */
    uintptr_t offset;      /* ret - 1 as an address in the module's file,
                              which `addr2line -e MODULE` takes (ret - 1
                              itself in a non-PIE executable) */
    bool from_symtab;      /* named from the symbol table: no debug scope */
    bool unloaded;         /* in a library the process has unloaded since */
    /* MEMTRACE_SYMBOLIZE=later (mt_sym_self_later): the one row of an
     * unsymbolized address, RAW, with MODULE the module's full path and
     * BUILD_ID its build ID in hexadecimal (NULL: none known); FUNCTION
     * and FILE are NULL. */
    bool raw;
    const char *build_id;
} mt_frame;

/* The default state: the symbolizer of the calling process, one per
 * process, static in sym_state.c (the first symbolization may come with
 * memtrace's internal heap nearly full), its Dwfl created on first use and
 * kept for the life of the process. NULL if libdwfl could not be set up.
 * Caller must hold mt_sym_self_lock, for as long as it uses the state. */
mt_sym_state *mt_sym_self(void);
/* From now on libdw is never called: frames are module+offset (from
 * libdwfl's module list and symbol tables). WHY, said once (with the first
 * of these calls or libdw running out of memory, which does the same),
 * says why. */
void mt_sym_stop_libdw(const char *why);
/* MEMTRACE_SYMBOLIZE=later, at start-up: from now on the default state
 * opens and reads no file. It has no Dwfl (mt_sym_dwfl gives NULL); every
 * address gets one raw row (mt_frame.raw) from the loaded modules' program
 * headers and build-ID notes in memory (sym_raw.c); no tail calls are
 * rebuilt and nothing is warmed. */
void mt_sym_self_later(void);
/* Whether ST is such a state. */
bool mt_sym_raw(const mt_sym_state *st);

/* A module of this process as the loader sees it, from memory
 * (dl_iterate_phdr): no file is opened. PATH is its full path (the main
 * program's from /proc/self/exe), BIAS the difference between its
 * addresses in memory and in its file, [START, LIMIT) the loadable segment
 * holding the address asked about, exactly (not rounded to pages: START
 * less the segment's address in the file is BIAS, as pprof's tools work
 * it out), OFFSET that segment's offset in the file, BUILD_ID the module's
 * GNU build ID in hexadecimal ("": none). */
typedef struct {
    char path[1024];
    uintptr_t bias, start, limit, offset;
    char build_id[2 * 64 + 1];
} mt_sym_module;
/* The loaded module holding PC; false when none does. Takes the loader's
 * lock (dl_iterate_phdr): not for the allocation path. */
bool mt_sym_module_at(uintptr_t pc, mt_sym_module *m);

/* Bounded wait (the holder may be a thread stopped by a debugger). */
bool mt_sym_self_lock(void);
void mt_sym_self_unlock(void);

/* A state for DWFL, whose modules the caller reported (a core file,
 * another process): it takes DWFL over. NULL when out of memory (DWFL is
 * then still the caller's). */
mt_sym_state *mt_sym_new(struct Dwfl *dwfl);
/* Ends ST's Dwfl and frees ST with its caches. */
void mt_sym_free(mt_sym_state *st);
/* ST's Dwfl, for what else the caller reads of its modules. */
struct Dwfl *mt_sym_dwfl(const mt_sym_state *st);

/* The symbol holding ADDR in a module of DWFL (sym_data.c): the one whose
 * bytes cover it, or a sized-0 one just below it, as gdb's `info symbol`
 * picks it. NAME and MODULE (the file's base name) live as long as DWFL's
 * modules. False: no module, or no symbol covers ADDR. */
typedef struct {
    const char *name;
    uint64_t offset; /* ADDR - the symbol's address */
    bool function;   /* STT_FUNC (or an IFUNC): code, not data */
    const char *module;
    char section[64]; /* its section's name; "" unknown */
} mt_sym_data;
bool mt_sym_data_at(struct Dwfl *dwfl, uintptr_t addr, mt_sym_data *d);

/* Where the default state looks up libraries the process unloaded
 * (mt_modules_find_unloaded; none elsewhere). Frames in them are resolved
 * from their files and marked unloaded. GENERATION (may be NULL) changes whenever a
 * library may have been unloaded: mt_sym_self then re-reads the modules and
 * drops the cached frames, so that a library loaded where another was is
 * not named after it. */
void mt_sym_set_unloaded_lookup(bool (*fn)(uintptr_t, mt_unloaded_module *),
                                unsigned long (*generation)(void));

/* Reports the modules of process PID to DWFL (between dwfl_report_begin
 * and dwfl_report_end), from /proc/PID/maps without the private writable
 * copies of files that libelf makes to read them (they are not loaded
 * code). False on failure, with libdwfl's error code in *ERR if given. */
bool mt_sym_report_process(struct Dwfl *dwfl, int pid, int *err);
/* The filter: drops those lines from the LEN bytes of MAPS, in place;
 * returns the length left. */
size_t mt_sym_filter_maps(char *maps, size_t len);

/* Reads MEMTRACE_DEBUG_DIR (at start-up: the path is copied): the
 * directory separate debug files are looked for under in place of
 * /usr/lib/debug, by build ID, by .gnu_debuglink and for dwz's common
 * files, in every state. Not called: /usr/lib/debug. */
void mt_sym_read_debug_dir(void);
/* The libdwfl debuginfo_path that says so (":.debug:DIR"); NULL when
 * unset: libdwfl's default, which is that with /usr/lib/debug. */
char *mt_sym_debuginfo_path(void);
/* libdwfl's find_debuginfo callback for the tools (out of the traced
 * process): the search of the process's own (by build ID, then by
 * .gnu_debuglink, each candidate opened only if it is a regular file: a
 * FIFO there does not hang it), then debuginfod when DEBUGINFOD_URLS is
 * set, with one note per module it gave nothing for. */
struct Dwfl_Module;
int mt_sym_find_debuginfo(struct Dwfl_Module *mod, void **userdata, const char *modname,
                          uint64_t base, const char *file_name, const char *debuglink_file,
                          uint32_t debuglink_crc, char **debuginfo_file_name);

/* The module of DWFL whose address range holds ADDR, or NULL: libdwfl's
 * dwfl_addrmodule, checked. After a library is unloaded and the modules
 * are reported again, dwfl_addrmodule was seen to answer an address in
 * the freed range with another module, 4 GiB below it (libdw 0.188; about
 * half the runs of reliability's library-replaced check once libdw sat
 * under memtrace's internal heap), which named a frame of the unloaded
 * library after that module. Every lookup by address goes through this. */
struct Dwfl_Module *mt_sym_addrmodule(struct Dwfl *dwfl, uint64_t addr);

/* Out of the traced process only (sym_offline.c is linked into the tools,
 * never into the libraries): modules reported from their files, as
 * offline ones, at the address BIAS they had in the process, with
 * mt_sym_find_debuginfo's search under mt_sym_read_debug_dir's directory.
 * mt_sym_offline_begin: an empty such Dwfl, NULL without memory.
 * mt_sym_offline_report: reports PATH (named NAME, what the process's maps
 * said) to DWFL, replacing its modules or, with ADD, beside them; NULL
 * with libdwfl's error. mt_sym_offline_module: a new Dwfl holding PATH
 * alone, if its file can be read and, when BUILD_ID (hex) is not "", has
 * that build ID; otherwise NULL, and *WHY says why in words that follow
 * "PATH: " (a caller says what it does with the module's frames). */
struct Dwfl *mt_sym_offline_begin(void);
struct Dwfl_Module *mt_sym_offline_report(struct Dwfl *dwfl, const char *name, const char *path,
                                          uintptr_t bias, bool add);
struct Dwfl *mt_sym_offline_module(const char *name, const char *path, uintptr_t bias,
                                   const char *build_id, const char **why);

/* Calls FN once with the rows of return address RET (N >= 1). The rows and
 * their strings stay valid until FN returns; FN must not call back into the
 * symbolizer. With REFRESH, the modules are re-read from /proc/self/maps
 * once when RET is in none of the known ones. Rows are cached by address
 * in ST until its modules are re-read. */
typedef void mt_frames_fn(const mt_frame *rows, unsigned n, void *ctx);
void mt_sym_frames(mt_sym_state *st, bool refresh, uintptr_t ret, mt_frames_fn *fn, void *ctx);

/* Symbolizes, of FRAMES[0..N) (return addresses), the first in each module
 * not warmed before, and drops the rows: what a module's first address
 * costs (its debug file read, its compressed sections inflated, or its
 * symbol table sorted) is then paid, and a report made later pays only for
 * its own addresses (sym_warm.c). Returns how many it symbolized. The
 * caller holds the same lock as for mt_sym_frames. */
unsigned mt_sym_warm(mt_sym_state *st, const uintptr_t *frames, unsigned n);

/* The frames that tail calls left off the stack between return address RET
 * (a call) and the function that call ended up in: the one holding return
 * address CALLEE_RET (the next frame inward), or, for CALLEE_RET 0, one of
 * the allocation functions memtrace interposes. Rebuilt from the DWARF call
 * sites as gdb does: the target of the call at RET, then the tail calls
 * from there that reach the callee; where several chains could, only the
 * frames all of them share, and nothing when the search meets a call it
 * cannot follow. Writes at most MAX addresses to OUT, innermost first, each
 * the address after a tail call's jump (symbolize it with mt_sym_frames),
 * and returns how many. Cached per (RET, CALLEE_RET) in ST with the rows;
 * caller holds the same lock as for mt_sym_frames. May allocate. */
#define MT_SYM_TAIL_MAX 8
unsigned mt_sym_tail_calls(mt_sym_state *st, uintptr_t ret, uintptr_t callee_ret, uintptr_t *out,
                           unsigned max);

#endif
