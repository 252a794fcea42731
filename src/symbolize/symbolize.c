/* libdwfl symbolizer. Every stored frame is a return address, so lookups use
 * pc - 1: the call instruction, whose line and inline scopes are the ones the
 * user wrote (pc itself can belong to the next statement or scope).
 * Two caches keep reports of large programs fast: a sorted symbol table per
 * module (libdwfl scans the whole table for every address) and the text of
 * every frame already printed, both dropped when the modules are re-read. */
#include "symbolize/symbolize.h"

#include "base/common.h"
#include "base/lock.h"
#include "base/output.h"
#include "store/modules.h"

#include <dirent.h>
#include <dwarf.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <libiberty/demangle.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static char *debuginfo_path;

/* libdwfl's find_debuginfo callback for the traced process: the local
 * search only. dwfl_standard_find_debuginfo ends with debuginfod, which
 * loads libdebuginfod and libcurl (29 libraries) into the program and makes
 * HTTP requests from inside it when DEBUGINFOD_URLS is set (design notes,
 * trap 13). Looked for, in libdwfl's own order: the build ID under the
 * debug directories, then the .gnu_debuglink name next to the file, in its
 * .debug directory and under /usr/lib/debug. A debuglink candidate is taken
 * only if its build ID is the module's (when the module has one). */
static bool same_build_id(Dwfl_Module *mod, int fd)
{
    const unsigned char *want;
    GElf_Addr vaddr;
    int want_len = dwfl_module_build_id(mod, &want, &vaddr);
    if (want_len <= 0)
        return true;
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    const void *have;
    ssize_t have_len = elf ? dwelf_elf_gnu_build_id(elf, &have) : -1;
    bool same = have_len == want_len && memcmp(have, want, (size_t)want_len) == 0;
    if (elf)
        elf_end(elf);
    return same;
}

static int find_debuginfo_local(Dwfl_Module *mod, void **userdata, const char *modname,
                                GElf_Addr base, const char *file_name,
                                const char *debuglink_file, GElf_Word debuglink_crc,
                                char **debuginfo_file_name)
{
    int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name,
                                          debuglink_file, debuglink_crc, debuginfo_file_name);
    if (fd >= 0 || !file_name || file_name[0] != '/' || !debuglink_file || !*debuglink_file)
        return fd;
    int dirlen = (int)(strrchr(file_name, '/') - file_name);
    const char *const forms[] = { "%.*s/%s", "%.*s/.debug/%s", "/usr/lib/debug%.*s/%s" };
    struct stat main_st;
    bool have_main = stat(file_name, &main_st) == 0;
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        char path[4096];
        int n = debuglink_file[0] == '/'
                    ? snprintf(path, sizeof path, "%s", debuglink_file)
                    : snprintf(path, sizeof path, forms[i], dirlen, file_name, debuglink_file);
        if (n < 0 || (size_t)n >= sizeof path)
            continue;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        struct stat st;
        bool self = have_main && fstat(fd, &st) == 0 && st.st_dev == main_st.st_dev &&
                    st.st_ino == main_st.st_ino;
        if (!self && same_build_id(mod, fd) && (*debuginfo_file_name = strdup(path)))
            return fd;
        close(fd);
        if (debuglink_file[0] == '/')
            break;
    }
    errno = 0; /* nothing found is not an error */
    return -1;
}

static const Dwfl_Callbacks self_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = find_debuginfo_local,
    .debuginfo_path = &debuginfo_path,
};

static mt_lock self_lock = MT_LOCK_INIT;
static Dwfl *self_dwfl;

/* Unloaded libraries, reported from their files at their old addresses.
 * Their modules are reported by path, so find_elf opens that file: the
 * build-ID search of dwfl_build_id_find_elf would end with debuginfod. */
static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = find_debuginfo_local,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};
static Dwfl *unloaded_dwfl;
static bool (*unloaded_lookup)(uintptr_t, mt_unloaded_module *);
static unsigned long (*modules_generation)(void);
static unsigned long self_generation; /* of the last read_modules */

void mt_sym_set_unloaded_lookup(bool (*fn)(uintptr_t, mt_unloaded_module *),
                                unsigned long (*generation)(void))
{
    unloaded_lookup = fn;
    modules_generation = generation;
}

static void end_dwfl(Dwfl *dwfl);

/* Whether MOD is the file M was loaded from, at M's address. */
static bool is_module_of(Dwfl_Module *mod, const mt_unloaded_module *m)
{
    const char *name = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    return name && strcmp(name, m->path) == 0;
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
    if (mod && is_module_of(mod, &m))
        return mod;
    if (mod) {
        /* Another library was unloaded from the same addresses since:
         * start over rather than keep two modules at one address. */
        end_dwfl(unloaded_dwfl);
        if (!(unloaded_dwfl = dwfl_begin(&offline_callbacks)))
            return NULL;
    }
    dwfl_report_begin_add(unloaded_dwfl);
    dwfl_report_elf(unloaded_dwfl, m.path, m.path, -1, m.bias, false);
    dwfl_report_end(unloaded_dwfl, NULL, NULL);
    return dwfl_addrmodule(unloaded_dwfl, pc);
}

/* ------------------------------------------------------------ symbol tables */

/* The symbols of one module that dwfl_module_addrname would consider, in
 * two ranges searched as it searches them: the globals first, the locals
 * only if no global symbol matches. Each range is sorted by (address, index
 * in the module's table); end[i] is the largest address + size among
 * sym[0..i], so no symbol at or below i covers an address >= end[i]. Built
 * on the first lookup in a module, kept in the module's userdata and freed
 * when libdwfl drops the module (read_modules). */
struct sym {
    GElf_Addr value;
    GElf_Xword size;
    const char *name; /* in the module's string table: lives as long as it */
    int index;
    int bind;         /* higher is preferred, as libdwfl ranks bindings */
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
        if (!name || !name[0] || sym.st_shndx == SHN_UNDEF || type == STT_SECTION ||
            type == STT_FILE || type == STT_TLS)
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
static const struct sym *range_find(const struct sym_range *r, GElf_Addr addr,
                                    GElf_Addr *max_end, bool *gave_up)
{
    size_t k = range_upto(r, addr);
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

/* The name dwfl_module_addrname(MOD, ADDR) gives, from MOD's sorted table.
 * Where libdwfl would fall back on a symbol without a size (labels in
 * assembly, whose choice depends on sections and table order), and where the
 * table cannot be built, it asks libdwfl itself: same answer, rare. Assumes
 * a symbol's address is its st_value adjusted (no function descriptors). */
static const char *symbol_name(Dwfl_Module *mod, GElf_Addr addr)
{
    struct symtab *t = symtab_of(mod);
    if (!t)
        return dwfl_module_addrname(mod, addr);
    bool gave_up = false;
    GElf_Addr end_g, end_l;
    const struct sym *s = range_find(&t->global, addr, &end_g, &gave_up);
    if (s)
        return s->name;
    if (gave_up || range_sizeless_at(&t->global, end_g))
        return dwfl_module_addrname(mod, addr);
    if (!t->local.n)
        return NULL;
    s = range_find(&t->local, addr, &end_l, &gave_up);
    if (s)
        return s->name;
    GElf_Addr end = end_g > end_l ? end_g : end_l;
    if (gave_up || range_sizeless_at(&t->global, end) || range_sizeless_at(&t->local, end))
        return dwfl_module_addrname(mod, addr);
    return NULL;
}

/* ------------------------------------------------------------ frame cache */

/* The rows of every return address symbolized, packed in one block each
 * (the rows, then their strings), by return address: open addressing,
 * count * 2 <= cap. Valid for one Dwfl while its modules stay as they are:
 * cleared when another Dwfl is asked and when read_modules finds the
 * modules changed. Frames found in no module, or only in an unloaded
 * library, are kept too: they were looked for after a re-read, and stay as
 * they are until the modules change. Like the rest of this file, used by
 * one thread at a time (mt_sym_self_lock). */
struct frames_entry {
    uintptr_t ret; /* 0: empty slot */
    unsigned n;
    mt_frame *rows; /* one malloc'ed block with their strings */
};

static Dwfl *cache_dwfl;

/* The Dwfl whose modules were last reported by read_modules, and the hash
 * of the maps they came from (see read_modules). */
static Dwfl *hashed_dwfl;
static uint64_t hashed_modules;
static struct frames_entry *cache;
static size_t cache_count, cache_cap;

static size_t cache_slot(uintptr_t ret, size_t cap)
{
    return (size_t)((ret * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

static void tail_cache_clear(void);

static void cu_index_clear(void);

static void cache_clear(void)
{
    tail_cache_clear();
    cu_index_clear();
    for (size_t i = 0; i < cache_cap; i++)
        free(cache[i].rows);
    free(cache);
    cache = NULL;
    cache_count = cache_cap = 0;
}

static const struct frames_entry *cache_find(Dwfl *dwfl, uintptr_t ret)
{
    if (dwfl != cache_dwfl) {
        cache_clear();
        cache_dwfl = dwfl;
        return NULL;
    }
    for (size_t i = cache_slot(ret, cache_cap); cache_cap && cache[i].ret;
         i = (i + 1) & (cache_cap - 1))
        if (cache[i].ret == ret)
            return &cache[i];
    return NULL;
}

/* Keeps ROWS (a packed block) for RET, or frees it if the table cannot
 * grow. */
static void cache_add(uintptr_t ret, mt_frame *rows, unsigned n)
{
    if ((cache_count + 1) * 2 > cache_cap) {
        size_t cap = cache_cap ? cache_cap * 2 : 1024;
        struct frames_entry *t = calloc(cap, sizeof *t);
        if (!t) {
            free(rows);
            return;
        }
        for (size_t i = 0; i < cache_cap; i++) {
            if (!cache[i].ret)
                continue;
            size_t j = cache_slot(cache[i].ret, cap);
            while (t[j].ret)
                j = (j + 1) & (cap - 1);
            t[j] = cache[i];
        }
        free(cache);
        cache = t;
        cache_cap = cap;
    }
    size_t i = cache_slot(ret, cache_cap);
    while (cache[i].ret)
        i = (i + 1) & (cache_cap - 1);
    cache[i] = (struct frames_entry){ ret, n, rows };
    cache_count++;
    MT_ASSERT(cache_count * 2 <= cache_cap && n > 0);
}

/* Frees the symbol table kept in a module's userdata slot. Serves as
 * dwfl_getmodules' callback and as dwfl_report_end's "removed" callback,
 * whose second argument is that slot too (void **, declared void *), not
 * the userdata itself. */
static int drop_symtab(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
                       void *arg)
{
    (void)mod, (void)name, (void)start, (void)arg;
    symtab_free(*userdata);
    *userdata = NULL;
    return DWARF_CB_OK;
}

static int free_symtab(Dwfl_Module *mod, void *userdata_slot, const char *name,
                       Dwarf_Addr base, void *arg)
{
    return drop_symtab(mod, userdata_slot, name, base, arg);
}

/* dwfl_end, and the symbol tables kept in its modules' userdata. */
static void end_dwfl(Dwfl *dwfl)
{
    if (dwfl == cache_dwfl)
        cache_clear();
    if (dwfl == hashed_dwfl)
        hashed_dwfl = NULL;
    dwfl_getmodules(dwfl, drop_symtab, NULL, 0);
    dwfl_end(dwfl);
}

/* Whether a line of /proc/PID/maps is a file mapped privately, writable,
 * from offset 0: not a loaded object (whose first segment, holding the ELF
 * header, is never writable) but a file libelf reads (ELF_C_READ_MMAP maps
 * it so; in the traced process, memtrace's own symbolizer does) or another
 * private copy of a file. libdwfl would report such a mapping of a program
 * or library as a second module of it, whose range (from the file's
 * segments) can cover addresses of libraries loaded or unloaded nearby. */
static bool private_file_copy(const char *line, size_t len)
{
    char perms[5];
    unsigned long long offset;
    int name_at = 0;
    if (sscanf(line, "%*x-%*x %4s %llx %*s %*s %n", perms, &offset, &name_at) != 2 ||
        name_at == 0 || (size_t)name_at >= len || line[name_at] != '/')
        return false;
    return offset == 0 && perms[1] == 'w' && perms[3] == 'p';
}

/* The length of the line of MAPS (LEN bytes) starting at AT, its newline
 * included. */
static size_t line_at(const char *maps, size_t len, size_t at)
{
    const char *nl = memchr(maps + at, '\n', len - at);
    return nl ? (size_t)(nl - (maps + at)) + 1 : len - at;
}

size_t mt_sym_filter_maps(char *maps, size_t len)
{
    size_t out = 0;
    for (size_t at = 0; at < len;) {
        size_t line = line_at(maps, len, at);
        if (!private_file_copy(maps + at, line)) {
            memmove(maps + out, maps + at, line);
            out += line;
        }
        at += line;
    }
    return out;
}

/* The file PATH (a maps file), whole, into a new buffer; NULL if it cannot
 * be read. */
static char *read_text(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (ssize_t r = 1; buf && r > 0;) {
        if (n == cap) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            r = 1;
        else if (r < 0) {
            free(buf);
            buf = NULL;
        } else {
            n += (size_t)r;
        }
    }
    close(fd);
    *len = n;
    return buf;
}

static bool has_text(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char c;
    bool some = fd >= 0 && read(fd, &c, 1) == 1;
    if (fd >= 0)
        close(fd);
    return some;
}

bool mt_sym_maps_path(pid_t pid, char *path, size_t size)
{
    snprintf(path, size, "/proc/%d/maps", (int)pid);
    if (has_text(path))
        return true;
    char dir_path[48];
    snprintf(dir_path, sizeof dir_path, "/proc/%d/task", (int)pid);
    DIR *dir = opendir(dir_path);
    bool found = false;
    for (struct dirent *d; dir && !found && (d = readdir(dir));) {
        if (d->d_name[0] < '1' || d->d_name[0] > '9' || atoi(d->d_name) == pid)
            continue;
        snprintf(path, size, "/proc/%d/task/%.20s/maps", (int)pid, d->d_name);
        found = has_text(path);
    }
    if (dir)
        closedir(dir);
    if (!found)
        snprintf(path, size, "/proc/%d/maps", (int)pid);
    return found;
}

/* The maps of process PID (0: this one), filtered, into a new buffer; NULL
 * if they cannot be read. Once main has called pthread_exit, /proc/PID is
 * a zombie's and its maps are empty: this process's are read through the
 * calling thread (/proc/thread-self), another's through one of its live
 * threads (mt_sym_maps_path). */
static char *read_maps(pid_t pid, size_t *len)
{
    char path[96];
    if (pid == 0)
        snprintf(path, sizeof path, "/proc/thread-self/maps");
    else
        mt_sym_maps_path(pid, path, sizeof path);
    char *buf = read_text(path, len);
    if (!buf && pid == 0)
        buf = read_text("/proc/self/maps", len); /* Linux before 3.17 */
    if (buf)
        *len = mt_sym_filter_maps(buf, *len);
    return buf;
}

/* Reports the modules of MAPS (LEN bytes of filtered maps of PID, 0 for
 * this process; NULL: let libdwfl read the file itself). libdwfl's error
 * code, 0 on success. */
static int report_maps(Dwfl *dwfl, char *maps, size_t len, int pid)
{
    FILE *f = maps && len ? fmemopen(maps, len, "r") : NULL;
    /* For this process, the calling thread's id (see read_maps). */
    int rc = f ? dwfl_linux_proc_maps_report(dwfl, f)
               : dwfl_linux_proc_report(dwfl, pid ? pid : (int)syscall(SYS_gettid));
    if (f)
        fclose(f);
    return rc;
}

bool mt_sym_report_process(mt_dwfl *dwfl, int pid, int *err)
{
    size_t len = 0;
    char *maps = read_maps(pid, &len);
    int rc = report_maps(dwfl, maps, len, pid);
    free(maps);
    if (err)
        *err = rc;
    return rc == 0;
}

/* A hash of the file mappings in MAPS (the lines with a path): the modules
 * are as they were when it is unchanged, whatever anonymous memory came or
 * went. */
static uint64_t modules_hash(const char *maps, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t at = 0; at < len;) {
        size_t line = line_at(maps, len, at);
        if (memchr(maps + at, '/', line))
            for (size_t i = 0; i < line; i++)
                h = (h ^ (unsigned char)maps[at + i]) * 0x100000001b3ull;
        at += line;
    }
    return h;
}

/* Re-reads the modules of the process: cached frames are dropped, and the
 * symbol tables of modules that are gone with them. When the file mappings
 * are the ones DWFL already has, nothing is re-reported and the caches stay:
 * an address found in no module (a library unloaded since, JIT code) then
 * costs one read of the maps, not a re-read of every module and of every
 * frame cached. */
static bool read_modules(Dwfl *dwfl)
{
    size_t len = 0;
    char *maps = read_maps(0, &len);
    uint64_t h = maps ? modules_hash(maps, len) : 0;
    if (maps && dwfl == hashed_dwfl && h == hashed_modules) {
        free(maps);
        return true;
    }
    if (dwfl == cache_dwfl)
        cache_clear();
    dwfl_report_begin(dwfl);
    int rc = report_maps(dwfl, maps, len, 0);
    free(maps);
    bool ok = dwfl_report_end(dwfl, free_symtab, NULL) == 0 && rc == 0;
    hashed_dwfl = ok && h ? dwfl : NULL;
    hashed_modules = h;
    return ok;
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
    unsigned long generation = modules_generation ? modules_generation() : 0;
    if (self_dwfl && generation != self_generation && !read_modules(self_dwfl)) {
        end_dwfl(self_dwfl);
        self_dwfl = NULL;
    }
    self_generation = generation;
    if (!self_dwfl) {
        Dwfl *d = dwfl_begin(&self_callbacks);
        if (d && !read_modules(d)) {
            dwfl_end(d);
            d = NULL;
        }
        self_dwfl = d;
    }
    return self_dwfl;
}

/* ------------------------------------------------------------ rows */

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

static const char *die_string(Dwarf_Die *die, unsigned attr)
{
    Dwarf_Attribute a;
    return dwarf_attr_integrate(die, attr, &a) ? dwarf_formstring(&a) : NULL;
}

/* Rows under construction: their strings point into libdw's data (alive as
 * long as the Dwfl) or, for demangled names, into malloc'ed copies listed
 * in OWNED, freed once the rows are packed or handed out. */
#define MAX_ROWS 64 /* inline nesting deeper than this is cut */

struct rows {
    mt_frame row[MAX_ROWS];
    unsigned n;
    char *owned[MAX_ROWS];
    unsigned nowned;
};

static void rows_free(struct rows *r)
{
    for (unsigned i = 0; i < r->nowned; i++)
        free(r->owned[i]);
    r->nowned = 0;
}

/* A demangled NAME (kept in R) or NAME itself. */
static const char *demangled(struct rows *r, const char *name)
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
static const char *function_name(struct rows *r, Dwarf_Die *die, Dwfl_Module *mod,
                                 Dwarf_Addr addr, const char **mangled)
{
    *mangled = NULL;
    const char *linkage = die_string(die, DW_AT_linkage_name);
    if (!linkage)
        linkage = die_string(die, DW_AT_MIPS_linkage_name);
    const char *d = linkage ? demangled(r, linkage) : NULL;
    /* GCC gives no linkage name to constructors, lambdas and many template
     * members, whose DW_AT_name is then unqualified ("_M_invoke",
     * "operator()"); the function that holds ADDR (not an inlined one) has
     * its symbol, whose demangled name is whole. A plain C name is the
     * DIE's: the symbol can be a part ("main.cold"). */
    if (!linkage && dwarf_tag(die) == DW_TAG_subprogram) {
        const char *sym = symbol_name(mod, addr);
        const char *ds = sym ? demangled(r, sym) : NULL;
        if (ds && ds != sym) {
            *mangled = sym;
            return ds;
        }
    }
    const char *name = d && d != linkage ? d : die_string(die, DW_AT_name);
    if (d && d != linkage)
        *mangled = linkage;
    if (!name && !linkage)
        name = symbol_name(mod, addr);
    if (!name)
        name = linkage ? linkage : "??";
    return name;
}

/* MOD's file name without its directory, and in *BIAS the difference
 * between its addresses in memory and in its file (0 for a non-PIE
 * executable, the load address for a library linked at 0). */
static const char *module_name(Dwfl_Module *mod, Dwarf_Addr *bias)
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
};

static size_t memo_hash(uintptr_t a, uintptr_t b, size_t cap)
{
    return (size_t)(((a ^ (b * 0xff51afd7ed558ccdull)) * 0x9E3779B97F4A7C15ull) >> 32) &
           (cap - 1);
}

/* Frees the values with FREE_VALUE (free if NULL) and empties M. */
static void memo_clear_with(struct memo *m, void (*free_value)(void *))
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->slot[i].value)
            (free_value ? free_value : free)(m->slot[i].value);
    free(m->slot);
    *m = (struct memo){ 0 };
}

static void memo_clear(struct memo *m)
{
    memo_clear_with(m, NULL);
}

static void *memo_find(const struct memo *m, uintptr_t a, uintptr_t b)
{
    for (size_t i = m->cap ? memo_hash(a, b, m->cap) : 0; m->cap && m->slot[i].value;
         i = (i + 1) & (m->cap - 1))
        if (m->slot[i].a == a && m->slot[i].b == b)
            return m->slot[i].value;
    return NULL;
}

/* Keeps VALUE (not NULL) for (A, B); false, VALUE not kept, if the memo
 * cannot grow. */
static bool memo_add(struct memo *m, uintptr_t a, uintptr_t b, void *value)
{
    if ((m->count + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 256;
        struct memo_slot *s = calloc(cap, sizeof *s);
        if (!s)
            return false;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->slot[i].value)
                continue;
            size_t j = memo_hash(m->slot[i].a, m->slot[i].b, cap);
            while (s[j].value)
                j = (j + 1) & (cap - 1);
            s[j] = m->slot[i];
        }
        free(m->slot);
        m->slot = s;
        m->cap = cap;
    }
    size_t i = memo_hash(a, b, m->cap);
    while (m->slot[i].value)
        i = (i + 1) & (m->cap - 1);
    m->slot[i] = (struct memo_slot){ a, b, value };
    m->count++;
    MT_ASSERT(m->count * 2 <= m->cap);
    return true;
}

/* ------------------------------------------------------------ functions */

/* Which function holds a pc, by an index of each CU's functions built once
 * per CU, then the inline chain by a walk of that function alone.
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
 * kept, by the CU DIE's address in the debug data, until the frame cache is
 * cleared (the modules changed, or another Dwfl is asked). */
#define MAX_SCOPE_DEPTH 128

struct fn_range {
    Dwarf_Addr low, high; /* CU-relative, as dwarf_haspc takes a pc */
    Dwarf_Die fn;
};

struct cu_index {
    size_t n, cap;
    struct fn_range *range;
};

/* By the CU DIE's address in the debug data (key b = 0). */
static struct memo cu_indexes;

static void cu_index_free(void *value)
{
    struct cu_index *x = value;
    free(x->range);
    free(x);
}

static void cu_index_clear(void)
{
    memo_clear_with(&cu_indexes, cu_index_free);
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
    case DW_TAG_with_stmt:
        return true;
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
    case DW_TAG_subprogram:   /* nested functions (GNU C) */
    case DW_TAG_lexical_block:
        return true;
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
static const struct cu_index *cu_index_of(Dwarf_Die *cu)
{
    struct cu_index *x = memo_find(&cu_indexes, (uintptr_t)cu->addr, 0);
    if (x)
        return x;
    x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    bool ok = index_walk(x, cu, 0);
    if (ok)
        qsort(x->range, x->n, sizeof *x->range, by_low);
    if (!ok || !memo_add(&cu_indexes, (uintptr_t)cu->addr, 0, x)) {
        cu_index_free(x);
        return NULL;
    }
    return x;
}

/* The subprogram DIE of CU whose code holds PC (CU-relative). */
static bool cu_function_at(Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *fn)
{
    const struct cu_index *x = cu_index_of(cu);
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

/* The function DIEs (subprogram, inlined_subroutine) whose code holds a
 * pc, outermost first: the concrete nesting, not abstract origins. */
struct scope_walk {
    Dwarf_Addr pc;          /* CU-relative, as dwarf_haspc takes it */
    Dwarf_Die chain[MAX_ROWS];
    unsigned n;
};

/* Appends to W->chain the inlined functions under PARENT (a function that
 * holds W->pc) whose code holds it; a code DIE's children are searched
 * only when it holds the pc, and only one sibling can. */
static void inline_walk(struct scope_walk *w, Dwarf_Die *parent, unsigned depth)
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
        inline_walk(w, &die, depth + 1);
        return;
    } while (dwarf_siblingof(&die, &die) == 0);
}

/* The rows of the frame at PC (RET - 1) in MOD: one per function of the
 * debug information's inline chain, innermost first, each with the line
 * its inner row was called from; without debug information scopes, one row
 * named from the symbol table. An address outside the code ranges of the
 * CU that libdwfl finds for it (the padding after a function, code of an
 * object without debug information) has neither scopes nor a line: libdwfl picks that CU
 * from a table that keeps only where each CU's ranges start, and its line
 * lookup returns the last row at or below the address whatever lies
 * between, so it would pair the address with a line of the code before. */
static void module_rows(struct rows *r, Dwfl_Module *mod, Dwarf_Addr pc, uintptr_t ret,
                        bool unloaded)
{
    Dwarf_Addr file_bias = 0;
    const char *modname = module_name(mod, &file_bias);
    mt_frame base = {
        .ret = ret, .module = modname, .offset = (uintptr_t)(pc - file_bias), .unloaded = unloaded,
    };

    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = dwfl_module_addrdie(mod, pc, &bias);
    /* A CU without code ranges (dwarf_haspc < 0) is given the benefit of
     * the doubt, as before. */
    if (cu && dwarf_haspc(cu, pc - bias) == 0)
        cu = NULL;
    const char *file = NULL;
    int line = 0, col = 0;
    Dwfl_Line *dl = cu ? dwfl_module_getsrc(mod, pc) : NULL;
    if (dl)
        file = dwfl_lineinfo(dl, NULL, &line, &col, NULL, NULL);

    /* The chain of callers is the concrete nesting of the innermost scope
     * (not its abstract origin's), innermost first. */
    static struct scope_walk w; /* under the same lock as mt_sym_frames' rows */
    w.pc = pc - bias;
    w.n = 0;
    if (cu && cu_function_at(cu, w.pc, &w.chain[0])) {
        w.n = 1;
        inline_walk(&w, &w.chain[0], 0);
    }
    for (unsigned k = w.n; k-- > 0 && r->n < MAX_ROWS;) {
        Dwarf_Die *scope = &w.chain[k];
        int tag = dwarf_tag(scope);
        mt_frame *f = &r->row[r->n];
        *f = base;
        f->inline_depth = r->n++;
        f->function = function_name(r, scope, mod, pc, &f->mangled);
        f->file = file && line > 0 ? file : NULL;
        f->line = f->file ? line : 0;
        f->column = f->file && col > 0 ? col : 0;
        if (tag == DW_TAG_subprogram)
            break;
        call_site(cu, scope, &file, &line, &col);
    }
    if (r->n)
        return;

    mt_frame *f = &r->row[r->n++];
    *f = base;
    f->from_symtab = true;
    const char *sym = symbol_name(mod, pc);
    f->function = demangled(r, sym);
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
        bytes += (f->function ? strlen(f->function) + 1 : 0) +
                 (f->file ? strlen(f->file) + 1 : 0) + (f->module ? strlen(f->module) + 1 : 0) +
                 (f->mangled ? strlen(f->mangled) + 1 : 0);
    }
    mt_frame *rows = malloc(bytes);
    if (!rows)
        return NULL;
    char *s = (char *)(rows + r->n);
    for (unsigned i = 0; i < r->n; i++) {
        rows[i] = r->row[i];
        const char **fields[] = { &rows[i].function, &rows[i].file, &rows[i].module,
                                  &rows[i].mangled };
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

/* libdw's memory blocks (libdw_alloc) call their Dwarf's out-of-memory
 * handler when malloc fails, and the default one ends the process
 * ("libdw: Cannot allocate memory", status 1). In the traced process malloc
 * is memtrace's internal heap, which a program under ulimit -v can leave
 * short. Every Dwarf the symbolizer reads gets oom_jump instead, which
 * jumps back to the entry that called into libdw (mt_sym_frames,
 * mt_sym_tail_calls; oom_target); from then on libdw, whose state a jump
 * out of it leaves unknown, is never called again (libdw_spent): frames are
 * module+offset, said once. An allocation failure outside those entries
 * gets the default handler. */
static MT_TLS jmp_buf *oom_target;
static Dwarf_OOM default_oom;
static bool libdw_spent;

static void __attribute__((noreturn)) oom_jump(void)
{
    if (oom_target)
        longjmp(*oom_target, 1);
    if (default_oom)
        default_oom();
    abort();
}

/* MOD's Dwarf (if it has one) with oom_jump as its handler. */
static void guard_module(Dwfl_Module *mod)
{
    Dwarf_Addr bias;
    Dwarf *dw = dwfl_module_getdwarf(mod, &bias);
    if (!dw)
        return;
    Dwarf_OOM old = dwarf_new_oom_handler(dw, oom_jump);
    if (old != oom_jump)
        default_oom = old;
}

void mt_sym_stop_libdw(const char *why)
{
    if (!libdw_spent)
        mt_warn("%s; frames are module+offset from now on", why);
    libdw_spent = true;
}

static void spend_libdw(void)
{
    mt_sym_stop_libdw("libdw ran out of memory (memtrace's internal heap is full)");
}

void mt_sym_frames(mt_dwfl *dwfl, bool refresh, uintptr_t ret, mt_frames_fn *fn, void *ctx)
{
    const struct frames_entry *cached = cache_find(dwfl, ret);
    if (cached) {
        fn(cached->rows, cached->n, ctx);
        return;
    }
    Dwarf_Addr pc = ret - 1;
    Dwfl_Module *mod = dwfl_addrmodule(dwfl, pc);
    if (!mod && refresh && read_modules(dwfl))
        mod = dwfl_addrmodule(dwfl, pc);
    bool unloaded = false;
    if (!mod && (mod = unloaded_module(pc)) != NULL)
        unloaded = true;
    static struct rows r; /* under mt_sym_self_lock, or the program's only thread */
    r.n = 0;
    if (mod && !libdw_spent) {
        jmp_buf here;
        jmp_buf *outer = oom_target;
        if (setjmp(here) == 0) {
            oom_target = &here;
            guard_module(mod);
            module_rows(&r, mod, pc, ret, unloaded);
        } else {
            spend_libdw();
            rows_free(&r);
            r.n = 0;
        }
        oom_target = outer;
    }
    if (mod && r.n == 0) {
        Dwarf_Addr file_bias = 0;
        const char *modname = module_name(mod, &file_bias);
        r.row[r.n++] = (mt_frame){ .ret = ret, .module = modname,
                                   .offset = (uintptr_t)(pc - file_bias), .unloaded = unloaded,
                                   .from_symtab = true };
    } else if (!mod) {
        r.row[r.n++] = (mt_frame){ .ret = ret, .offset = (uintptr_t)pc };
    }
    fn(r.row, r.n, ctx);
    /* Kept whatever was found: the cache goes when the modules change. */
    mt_frame *packed = rows_pack(&r);
    if (packed)
        cache_add(ret, packed, r.n); /* frees it if it cannot keep it */
    rows_free(&r);
}

/* ------------------------------------------------------------ tail calls */

/* A function whose last act is a call may jump to the callee instead: its
 * frame is then not on the stack. The DWARF call sites (DW_TAG_call_site,
 * DW_TAG_GNU_call_site in DWARF 4) say where each call goes and which are
 * tail calls; from the call at a return address and the function the next
 * frame inward is in, the frames in between are the tail-call chains from
 * the call's target to that function. The search is bounded (TAIL_DEPTH
 * tail calls in a chain, TAIL_VISITS functions looked into) and gives
 * nothing when it reaches a bound, meets a cycle or a function with more
 * tail calls than it keeps: what it inserts is true of every chain possible. */
#define TAIL_DEPTH MT_SYM_TAIL_MAX
#define TAIL_VISITS 256
#define TAIL_EDGES 64

/* One tail call of a function: the address after its jump (a return
 * address as the stack would have had it) and its target. */
struct tail_edge {
    uintptr_t site_ret;
    uintptr_t target; /* entry address; 0: not known */
    bool alloc;       /* the target is one of the allocation functions */
};

/* The tail calls of the function at an entry address; n > TAIL_EDGES: too
 * many to follow. */
struct tail_fn {
    unsigned n;
    struct tail_edge edge[];
};

/* The frames inserted between a caller's return address and its callee. */
struct tail_chain {
    unsigned n;
    uintptr_t ret[TAIL_DEPTH]; /* innermost first */
};

/* Two memos, dropped with the frame cache (cache_clear): the tail calls
 * of each function looked into, by entry address (key b = 0), and the
 * chain of each (caller return address, callee return address) asked for. */
static struct memo tail_fns, tail_chains;

static void tail_cache_clear(void)
{
    memo_clear(&tail_fns);
    memo_clear(&tail_chains);
}

/* Whether NAME (a DIE's linkage name or name) is one of the functions
 * memtrace interposes (src/runtime/preload.c): the end of every recorded stack. */
static bool is_allocation_function(const char *name)
{
    static const char *const names[] = {
        "malloc", "free", "calloc", "realloc", "reallocarray", "posix_memalign",
        "aligned_alloc", "memalign", "valloc", "pvalloc", "mallocx", "rallocx",
        "xallocx", "dallocx", "sdallocx", "free_sized", "free_aligned_sized", "tc_malloc",
        "tc_free", "tc_cfree", "tc_free_sized", "tc_calloc", "tc_realloc", "tc_memalign",
        "tc_posix_memalign", "tc_valloc", "tc_pvalloc",
    };
    if (!name)
        return false;
    /* operator new, new[], delete, delete[], every overload (mangled) */
    if (strncmp(name, "_Znw", 4) == 0 || strncmp(name, "_Zna", 4) == 0 ||
        strncmp(name, "_Zdl", 4) == 0 || strncmp(name, "_Zda", 4) == 0 ||
        strncmp(name, "operator new", 12) == 0 || strncmp(name, "operator delete", 15) == 0 ||
        strncmp(name, "tc_new", 6) == 0 || strncmp(name, "tc_delete", 9) == 0) /* and tcmalloc's */
        return true;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0)
            return true;
    return false;
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
static uintptr_t module_symbol(Dwfl_Module *mod, const char *name, bool local_ok)
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

struct symbol_search {
    const char *name;
    Dwfl_Module *skip;
    uintptr_t found;
};

static int search_module(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
                         void *arg)
{
    (void)userdata, (void)name, (void)start;
    struct symbol_search *s = arg;
    if (mod == s->skip)
        return DWARF_CB_OK;
    s->found = module_symbol(mod, s->name, false);
    return s->found ? DWARF_CB_ABORT : DWARF_CB_OK;
}

/* The function NAME as a call from MOD reaches it: MOD's own definition,
 * else the first exported one in the order DWFL lists its modules. */
static uintptr_t symbol_address(Dwfl *dwfl, Dwfl_Module *mod, const char *name)
{
    uintptr_t a = module_symbol(mod, name, true);
    if (a)
        return a;
    struct symbol_search s = { name, mod, 0 };
    dwfl_getmodules(dwfl, search_module, &s, 0);
    return s.found;
}

/* The subprogram DIE holding PC (its concrete instance: inlined code is in
 * its caller's), with MOD and BIAS. */
static bool function_die(Dwfl *dwfl, Dwarf_Addr pc, Dwfl_Module **mod, Dwarf_Die *fn,
                         Dwarf_Addr *bias)
{
    *mod = dwfl_addrmodule(dwfl, pc);
    if (*mod)
        guard_module(*mod);
    Dwarf_Die *cu = *mod ? dwfl_module_addrdie(*mod, pc, bias) : NULL;
    return cu && cu_function_at(cu, pc - *bias, fn);
}

static const char *die_linkage_name(Dwarf_Die *die)
{
    const char *name = die_string(die, DW_AT_linkage_name);
    if (!name)
        name = die_string(die, DW_AT_MIPS_linkage_name);
    return name ? name : die_string(die, DW_AT_name);
}

/* The entry address of the function of DIE FN in MOD: its low pc, or where
 * its symbol is when its code is in several ranges (hot and cold parts) or
 * FN is a declaration. 0 when not known. */
static uintptr_t function_entry(Dwfl *dwfl, Dwfl_Module *mod, Dwarf_Die *fn, Dwarf_Addr bias)
{
    Dwarf_Addr low;
    if (!dwarf_hasattr(fn, DW_AT_declaration) && dwarf_lowpc(fn, &low) == 0)
        return (uintptr_t)(low + bias);
    const char *name = die_linkage_name(fn);
    return name ? symbol_address(dwfl, mod, name) : 0;
}

/* The entry address of the function holding PC: from its DIE, else from
 * the symbol table. 0 when not known. */
static uintptr_t entry_of(Dwfl *dwfl, Dwarf_Addr pc)
{
    Dwfl_Module *mod;
    Dwarf_Die fn;
    Dwarf_Addr bias;
    if (function_die(dwfl, pc, &mod, &fn, &bias))
        return function_entry(dwfl, mod, &fn, bias);
    if (!mod)
        return 0;
    GElf_Off offset;
    GElf_Sym sym;
    return dwfl_module_addrinfo(mod, pc, &offset, &sym, NULL, NULL, NULL) ? (uintptr_t)(pc - offset)
                                                                          : 0;
}

/* Where call site SITE (in MOD, BIAS) goes: its entry address in
 * T->target (0: an indirect call, or a target that cannot be told for
 * sure), and T->alloc when it is named as one of the allocation functions
 * (then it is the end of a recorded stack whatever its address: memtrace's,
 * or the C++ runtime's operator new that calls memtrace's malloc). */
static void site_target(Dwfl *dwfl, Dwfl_Module *mod, Dwarf_Addr bias, Dwarf_Die *site,
                        struct tail_edge *t)
{
    Dwarf_Attribute a;
    Dwarf_Die origin;
    t->target = 0;
    t->alloc = false;
    if ((dwarf_attr(site, DW_AT_call_origin, &a) || dwarf_attr(site, DW_AT_abstract_origin, &a)) &&
        dwarf_formref_die(&a, &origin)) {
        t->alloc = is_allocation_function(die_linkage_name(&origin)) ||
                   is_allocation_function(die_string(&origin, DW_AT_name));
        t->target = function_entry(dwfl, mod, &origin, bias);
        return;
    }
    Dwarf_Op *ops;
    size_t nops;
    if ((dwarf_attr(site, DW_AT_call_target, &a) ||
         dwarf_attr(site, DW_AT_GNU_call_site_target, &a)) &&
        dwarf_getlocation(&a, &ops, &nops) == 0 && nops == 1 && ops[0].atom == DW_OP_addr)
        t->target = (uintptr_t)(ops[0].number + bias);
}

/* The address after a call site's call instruction, as in its DIE. */
static bool site_return(Dwarf_Die *site, Dwarf_Addr *ret)
{
    Dwarf_Attribute a;
    if (dwarf_attr(site, DW_AT_call_return_pc, &a))
        return dwarf_formaddr(&a, ret) == 0;
    return dwarf_tag(site) == DW_TAG_GNU_call_site && dwarf_lowpc(site, ret) == 0;
}

static bool is_tail_site(Dwarf_Die *site)
{
    return dwarf_hasattr(site, DW_AT_call_tail_call) || dwarf_hasattr(site, DW_AT_GNU_tail_call);
}

/* Calls FN on every call site nested in DIE's children (lexical blocks and
 * inlined code included, nested functions not); stops when FN returns
 * true, and returns true then. */
static bool each_call_site(Dwarf_Die *die, unsigned depth, bool (*fn)(Dwarf_Die *, void *),
                           void *arg)
{
    Dwarf_Die child;
    if (depth > 64 || dwarf_child(die, &child) != 0)
        return false;
    do {
        int tag = dwarf_tag(&child);
        if (tag == DW_TAG_call_site || tag == DW_TAG_GNU_call_site) {
            if (fn(&child, arg))
                return true;
        } else if (tag != DW_TAG_subprogram && each_call_site(&child, depth + 1, fn, arg)) {
            return true;
        }
    } while (dwarf_siblingof(&child, &child) == 0);
    return false;
}

struct edge_walk {
    Dwfl *dwfl;
    Dwfl_Module *mod;
    Dwarf_Addr bias;
    struct tail_edge edge[TAIL_EDGES];
    unsigned n; /* TAIL_EDGES + 1: too many */
};

static bool add_tail_edge(Dwarf_Die *site, void *arg)
{
    struct edge_walk *w = arg;
    Dwarf_Addr ret;
    if (!is_tail_site(site) || !site_return(site, &ret))
        return false;
    if (w->n == TAIL_EDGES) {
        w->n++;
        return true;
    }
    struct tail_edge *e = &w->edge[w->n++];
    site_target(w->dwfl, w->mod, w->bias, site, e);
    e->site_ret = (uintptr_t)(ret + w->bias);
    return false;
}

/* The tail calls of the function at ENTRY, cached; NULL when they cannot be
 * had (no debug information is no tail call: n = 0). */
static const struct tail_fn *tail_calls_of(Dwfl *dwfl, uintptr_t entry)
{
    struct tail_fn *f = memo_find(&tail_fns, entry, 0);
    if (f)
        return f;
    static struct edge_walk w; /* under the symbolizer's lock, like the rows */
    w.dwfl = dwfl;
    w.n = 0;
    Dwarf_Die fn;
    if (function_die(dwfl, entry, &w.mod, &fn, &w.bias))
        each_call_site(&fn, 0, add_tail_edge, &w);
    unsigned keep = w.n > TAIL_EDGES ? 0 : w.n;
    f = malloc(sizeof *f + keep * sizeof f->edge[0]);
    if (!f)
        return NULL;
    f->n = w.n;
    memcpy(f->edge, w.edge, keep * sizeof f->edge[0]);
    if (!memo_add(&tail_fns, entry, 0, f)) {
        free(f);
        return NULL;
    }
    return f;
}

/* The chains found so far: what every one of them has at its start and at
 * its end, in tail calls from the caller's target down to the callee. */
struct chain_search {
    Dwfl *dwfl;
    uintptr_t callee; /* entry address; 0: the allocation functions */
    unsigned visits;
    bool failed;      /* a bound was reached: nothing can be said */
    unsigned found, shortest;
    uintptr_t prefix[TAIL_DEPTH], suffix[TAIL_DEPTH]; /* suffix[0]: the last call */
    unsigned nprefix, nsuffix;
    uintptr_t path[TAIL_DEPTH];      /* the calls of the chain being followed */
    uintptr_t path_fn[TAIL_DEPTH];   /* the functions they are in */
};

static void chain_found(struct chain_search *s, unsigned len)
{
    if (s->found++ == 0) {
        memcpy(s->prefix, s->path, len * sizeof s->path[0]);
        for (unsigned i = 0; i < len; i++)
            s->suffix[i] = s->path[len - 1 - i];
        s->nprefix = s->nsuffix = s->shortest = len;
        return;
    }
    unsigned p = 0, q = 0;
    while (p < s->nprefix && p < len && s->prefix[p] == s->path[p])
        p++;
    while (q < s->nsuffix && q < len && s->suffix[q] == s->path[len - 1 - q])
        q++;
    s->nprefix = p;
    s->nsuffix = q;
    if (len < s->shortest)
        s->shortest = len;
}

/* Follows the tail calls of the function at FN, the DEPTH-th of the chain.
 * A tail call whose target is not known (through a pointer, or a name that
 * several functions carry) may reach the callee: nothing can be said then. */
static void chain_walk(struct chain_search *s, uintptr_t fn, unsigned depth)
{
    if (s->failed)
        return;
    const struct tail_fn *f = ++s->visits > TAIL_VISITS ? NULL : tail_calls_of(s->dwfl, fn);
    if (!f || f->n > TAIL_EDGES || (f->n && depth == TAIL_DEPTH)) {
        s->failed = true;
        return;
    }
    if (!f->n)
        return;
    s->path_fn[depth] = fn;
    for (unsigned i = 0; i < f->n && !s->failed; i++) {
        const struct tail_edge *e = &f->edge[i];
        if (!e->alloc && !e->target) {
            s->failed = true;
            return;
        }
        s->path[depth] = e->site_ret;
        if (s->callee ? e->target == s->callee : e->alloc) {
            chain_found(s, depth + 1);
            continue;
        }
        if (e->alloc)
            continue; /* a stack ends there, its callee is not in it */
        for (unsigned k = 0; k <= depth; k++)
            if (s->path_fn[k] == e->target)
                s->failed = true; /* a cycle: chains of any length */
        if (!s->failed)
            chain_walk(s, e->target, depth + 1);
    }
}

struct caller_walk {
    Dwarf_Addr ret; /* in the module's addresses */
    Dwarf_Die site;
};

static bool is_site_at(Dwarf_Die *site, void *arg)
{
    struct caller_walk *w = arg;
    Dwarf_Addr ret;
    if (!site_return(site, &ret) || ret != w->ret)
        return false;
    w->site = *site;
    return true;
}

/* The chain between RET and the function of CALLEE_RET (0: the allocation
 * functions), searched in the debug information. */
static void tail_chain_find(Dwfl *dwfl, uintptr_t ret, uintptr_t callee_ret,
                            struct tail_chain *c)
{
    c->n = 0;
    Dwfl_Module *mod;
    Dwarf_Die fn;
    Dwarf_Addr bias;
    if (!function_die(dwfl, ret - 1, &mod, &fn, &bias))
        return;
    struct caller_walk w = { .ret = ret - bias };
    if (!each_call_site(&fn, 0, is_site_at, &w))
        return;
    struct tail_edge call;
    site_target(dwfl, mod, bias, &w.site, &call);
    if (call.alloc || !call.target)
        return; /* the callee was called directly, or nothing is known */
    static struct chain_search s; /* under the symbolizer's lock */
    s = (struct chain_search){ .dwfl = dwfl };
    if (callee_ret) {
        s.callee = entry_of(dwfl, callee_ret - 1);
        if (!s.callee || s.callee == call.target)
            return;
    }
    chain_walk(&s, call.target, 0);
    if (s.failed || !s.found)
        return;
    unsigned nsuffix = s.nsuffix, nprefix = s.nprefix;
    if (s.found > 1 && nprefix + nsuffix > s.shortest)
        nsuffix = s.shortest - nprefix;
    if (s.found == 1)
        nsuffix = 0;
    for (unsigned i = 0; i < nsuffix; i++)
        c->ret[c->n++] = s.suffix[i];
    for (unsigned i = nprefix; i-- > 0;)
        c->ret[c->n++] = s.prefix[i];
}

unsigned mt_sym_tail_calls(mt_dwfl *dwfl, uintptr_t ret, uintptr_t callee_ret, uintptr_t *out,
                           unsigned max)
{
    if (dwfl != cache_dwfl) {
        cache_clear();
        cache_dwfl = dwfl;
    }
    struct tail_chain *c = memo_find(&tail_chains, ret, callee_ret);
    static struct tail_chain found; /* under the symbolizer's lock */
    if (!c && libdw_spent)
        return 0;
    if (!c) {
        jmp_buf here;
        jmp_buf *outer = oom_target;
        if (setjmp(here) == 0) {
            oom_target = &here;
            tail_chain_find(dwfl, ret, callee_ret, &found);
        } else {
            spend_libdw();
            oom_target = outer;
            return 0;
        }
        oom_target = outer;
        c = &found;
        struct tail_chain *keep = malloc(sizeof *keep);
        if (keep) {
            *keep = found;
            if (!memo_add(&tail_chains, ret, callee_ret, keep))
                free(keep);
        }
    }
    unsigned n = c->n < max ? c->n : max;
    memcpy(out, c->ret, n * sizeof *out);
    return n;
}
