/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The modules of the traced process as libdwfl sees them: reading them
 * again when they change, the libraries it has unloaded since (looked up
 * in their files), and where their debug information is looked for. */
#include "symbolize/sym_internal.h"

#include "base/config.h"
#include "base/output.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* libdwfl's debuginfo_path setting of both callback tables: NULL, its
 * default search; ":.debug:DIR" under MEMTRACE_DEBUG_DIR, DEBUG_DIR then
 * standing for /usr/lib/debug in find_debuginfo_local too. Read-only
 * configuration, set at start-up (mt_sym_read_debug_dir), not state. */
static char *debuginfo_path;
static const char usr_debug_default[] = "/usr/lib/debug";
static const char *debug_dir = usr_debug_default;
static char debug_dir_buf[4096], debuginfo_path_buf[sizeof debug_dir_buf + 16];

void mt_sym_read_debug_dir(void)
{
    const char *dir = mt_setting_path(MT_SET_DEBUG_DIR, debug_dir_buf, sizeof debug_dir_buf,
                                      "debug files are looked for under /usr/lib/debug");
    if (!dir)
        return;
    size_t len = strlen(debug_dir_buf);
    while (len > 1 && debug_dir_buf[len - 1] == '/')
        debug_dir_buf[--len] = '\0';
    debug_dir = debug_dir_buf;
    snprintf(debuginfo_path_buf, sizeof debuginfo_path_buf, ":.debug:%s", debug_dir);
    debuginfo_path = debuginfo_path_buf;
}

char *mt_sym_debuginfo_path(void)
{
    return debuginfo_path;
}

/* libdwfl's find_debuginfo callback for the traced process: the local
 * search only. dwfl_standard_find_debuginfo ends with debuginfod, which
 * loads libdebuginfod and libcurl (29 libraries) into the program and makes
 * HTTP requests from inside it when DEBUGINFOD_URLS is set (design notes,
 * trap 13). Looked for, in libdwfl's own order: the build ID under the
 * debug directories, then the .gnu_debuglink name next to the file, in its
 * .debug directory and under /usr/lib/debug. A debuglink candidate is taken
 * only if its build ID is the module's (when the module has one); one that
 * is not (another build's, or unreadable: truncated) gets one note, and the
 * module's frames are named from its symbol table. libdwfl calls this
 * callback for the module once per Dwfl (it keeps what it found or not),
 * and again for a dwz common file (.gnu_debugaltlink, whose name it passes
 * as DEBUGLINK_FILE with CRC 0): that file has a build ID of its own. */
/* Whether every section of ELF with contents lies within the SIZE bytes of
 * its file: a truncated debug file keeps its header and notes (its build ID
 * matches), and libdw would then find no usable DWARF without a word. */
static bool whole_file(Elf *elf, off_t size)
{
    GElf_Ehdr ehdr;
    size_t nscn;
    if (!gelf_getehdr(elf, &ehdr) || elf_getshdrnum(elf, &nscn) != 0 || nscn == 0 ||
        ehdr.e_shoff > (GElf_Off)size ||
        (GElf_Off)nscn * ehdr.e_shentsize > (GElf_Off)size - ehdr.e_shoff)
        return false;
    Elf_Scn *scn = NULL;
    GElf_Shdr shdr;
    while ((scn = elf_nextscn(elf, scn)) != NULL) {
        if (!gelf_getshdr(scn, &shdr))
            return false;
        if (shdr.sh_type != SHT_NOBITS &&
            (shdr.sh_offset > (GElf_Off)size || shdr.sh_size > (GElf_Off)size - shdr.sh_offset))
            return false;
    }
    return true;
}

/* Whether the file open on FD is a whole ELF file with the build ID WANT
 * of WANT_LEN bytes (any build ID when WANT_LEN <= 0). */
static bool has_build_id(int fd, const void *want, int want_len)
{
    struct stat st;
    Elf *elf = fstat(fd, &st) == 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
    const void *have;
    ssize_t have_len = elf ? dwelf_elf_gnu_build_id(elf, &have) : -1;
    bool same =
        elf && whole_file(elf, st.st_size) &&
        (want_len <= 0 || (have_len == want_len && memcmp(have, want, (size_t)want_len) == 0));
    if (elf)
        elf_end(elf);
    return same;
}

/* Whether the file open on FD is a whole ELF file with MOD's build ID
 * (any build ID when MOD has none: then the debuglink's name is all there
 * is to go by). */
static bool same_build_id(Dwfl_Module *mod, int fd)
{
    const unsigned char *want;
    GElf_Addr vaddr;
    int want_len = dwfl_module_build_id(mod, &want, &vaddr);
    return has_build_id(fd, want, want_len);
}

/* Opens PATH for reading if it is a regular file, never blocking on
 * anything else there (a FIFO nothing writes to would hang the open, and
 * libdwfl's own search opens its candidates blocking): opened O_NONBLOCK,
 * checked, then the flag cleared for libelf's reads. -1 when it is not
 * there, or (*ODD true) is not a regular file. */
static int open_regular(const char *path, bool *odd)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -1;
    struct stat st;
    int flags = fcntl(fd, F_GETFL);
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || flags < 0 ||
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        *odd = true;
        close(fd);
        return -1;
    }
    return fd;
}

/* What a search found wrong, for its one note. */
struct search {
    char rejected[4096 + 160]; /* the first candidate refused; "" none */
};

static void reject(struct search *s, const char *path)
{
    if (!s->rejected[0])
        snprintf(s->rejected, sizeof s->rejected, "%s", path);
}

/* libdwfl's build-ID search (dwfl_build_id_find_debuginfo), each
 * candidate vetted: DEBUG_DIR/.build-id/xx/yyyy.debug for the build ID ID
 * of LEN bytes (the module's, or its dwz common file's), taken only if it
 * is a regular file, whole, with that build ID. */
static int find_by_build_id(const unsigned char *id, int len, char **found, struct search *s)
{
    if (len < 2 || len > 64)
        return -1;
    char path[sizeof debug_dir_buf];
    int n = snprintf(path, sizeof path, "%s/.build-id/%02x/", debug_dir, id[0]);
    for (int i = 1; i < len && n > 0 && (size_t)n < sizeof path - 3; i++)
        n += snprintf(path + n, sizeof path - (size_t)n, "%02x", id[i]);
    if (n < 0 || (size_t)n + sizeof ".debug" > sizeof path)
        return -1;
    memcpy(path + n, ".debug", sizeof ".debug");
    bool odd = false;
    int fd = open_regular(path, &odd);
    if (fd >= 0 && has_build_id(fd, id, len) && (*found = strdup(path)))
        return fd;
    if (fd >= 0 || odd)
        reject(s, path);
    if (fd >= 0)
        close(fd);
    return -1;
}

/* The build ID of a dwz common file, as its user's .gnu_debugaltlink
 * gives it. */
struct alt_id {
    unsigned char id[64];
    int len; /* 0: none */
};

/* The .gnu_debuglink search: DEBUGLINK_FILE beside FILE_NAME, in its
 * .debug directory and under DEBUG_DIR, each candidate vetted (a regular
 * file, not the module's own file, whole, with its build ID); an absolute
 * name is tried as it is (under DEBUG_DIR when it names /usr/lib/debug).
 * ALT: DEBUGLINK_FILE is a dwz common file's name (.gnu_debugaltlink), and
 * a candidate must have ALT's build ID instead of the module's. */
static int find_by_debuglink(Dwfl_Module *mod, const char *file_name, const char *debuglink_file,
                             const struct alt_id *alt, char **found, struct search *s)
{
    int dirlen = (int)(strrchr(file_name, '/') - file_name);
    const char *const forms[] = { "%.*s/%s", "%.*s/.debug/%s", "%s%.*s/%s" };
    struct stat main_st;
    bool have_main = stat(file_name, &main_st) == 0;
    /* An absolute name (dwz's common file) under /usr/lib/debug is read
     * under DEBUG_DIR. */
    static const char usr_debug[] = "/usr/lib/debug/";
    bool moved = debuglink_file[0] == '/' && debug_dir != usr_debug_default &&
                 strncmp(debuglink_file, usr_debug, sizeof usr_debug - 1) == 0;
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        char path[4096];
        int n;
        if (moved)
            n = snprintf(path, sizeof path, "%s/%s", debug_dir,
                         debuglink_file + sizeof usr_debug - 1);
        else if (debuglink_file[0] == '/')
            n = snprintf(path, sizeof path, "%s", debuglink_file);
        else if (i == 2)
            n = snprintf(path, sizeof path, forms[i], debug_dir, dirlen, file_name, debuglink_file);
        else
            n = snprintf(path, sizeof path, forms[i], dirlen, file_name, debuglink_file);
        if (n < 0 || (size_t)n >= sizeof path)
            continue;
        bool odd = false;
        int fd = open_regular(path, &odd);
        struct stat st;
        bool self = fd >= 0 && have_main && fstat(fd, &st) == 0 && st.st_dev == main_st.st_dev &&
                    st.st_ino == main_st.st_ino;
        if (fd >= 0 && !self &&
            (alt ? has_build_id(fd, alt->id, alt->len) : same_build_id(mod, fd)) &&
            (*found = strdup(path)))
            return fd;
        if ((fd >= 0 && !self) || odd)
            reject(s, path);
        if (fd >= 0)
            close(fd);
        if (debuglink_file[0] == '/')
            break;
    }
    return -1;
}

/* The one note of a module whose search refused a candidate (ALT: for
 * its dwz common file). */
static void note_rejected(const char *file_name, const struct search *s, bool alt)
{
    if (!s->rejected[0])
        return;
    const char *slash = strrchr(file_name, '/');
    if (alt)
        mt_warn("%s: the dwz common file %s is not this build's or cannot be read; names it "
                "holds are taken from the symbol table",
                slash ? slash + 1 : file_name, s->rejected);
    else
        mt_warn("%s: the debug file %s is not this build's or cannot be read; its frames are "
                "named from the symbol table",
                slash ? slash + 1 : file_name, s->rejected);
}

/* The build ID in the .gnu_debugaltlink section of the file FILE_NAME
 * (whose DWARF libdwfl has just opened) into *ALT, when that section names
 * ALTNAME. The file is opened as the candidates are (never blocking). */
static bool read_alt_id(const char *file_name, const char *altname, struct alt_id *alt)
{
    bool odd = false;
    int fd = open_regular(file_name, &odd);
    Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
    size_t shstrndx;
    alt->len = 0;
    if (elf && elf_getshdrstrndx(elf, &shstrndx) == 0) {
        Elf_Scn *scn = NULL;
        GElf_Shdr shdr;
        while ((scn = elf_nextscn(elf, scn)) != NULL) {
            const char *name = gelf_getshdr(scn, &shdr) ? elf_strptr(elf, shstrndx, shdr.sh_name)
                                                        : NULL;
            if (!name || strcmp(name, ".gnu_debugaltlink") != 0 || shdr.sh_type == SHT_NOBITS)
                continue;
            /* the file's name, a NUL, then the build ID's bytes */
            Elf_Data *d = elf_getdata(scn, NULL);
            const char *p = d ? d->d_buf : NULL;
            const char *nul = p ? memchr(p, '\0', d->d_size) : NULL;
            size_t idlen = nul ? d->d_size - (size_t)(nul + 1 - p) : 0;
            if (nul && strcmp(p, altname) == 0 && idlen > 0 && idlen <= sizeof alt->id) {
                memcpy(alt->id, nul + 1, idlen);
                alt->len = (int)idlen;
            }
            break;
        }
    }
    if (elf)
        elf_end(elf);
    if (fd >= 0)
        close(fd);
    return alt->len > 0;
}

/* The local search of both callbacks; REMOTE: memtrace-symbolize's (out
 * of the traced process), which ends with debuginfod. libdwfl asks for a
 * dwz common file (ALTLINK) after it opened the DWARF of FILE_NAME: that
 * file is found by the build ID its .gnu_debugaltlink gives (read here:
 * libdwfl does not hand it on), under DEBUG_DIR/.build-id, then by the
 * name it gives, each candidate vetted as the module's own debug file is,
 * but against that build ID. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, GElf_Addr base,
                          const char *file_name, const char *debuglink_file,
                          GElf_Word debuglink_crc, char **debuginfo_file_name, bool remote)
{
    (void)userdata, (void)base;
    bool altlink = debuglink_crc == 0 && debuglink_file && debuglink_file[0] && file_name &&
                   file_name[0] == '/';
    struct alt_id alt;
    if (altlink && !read_alt_id(file_name, debuglink_file, &alt))
        altlink = false; /* not asked for a common file: a debuglink without a CRC */
    int fd = -1;
    struct search s = { "" };
    if (altlink) {
        fd = find_by_build_id(alt.id, alt.len, debuginfo_file_name, &s);
    } else {
        const unsigned char *id;
        GElf_Addr vaddr;
        int len = dwfl_module_build_id(mod, &id, &vaddr);
        fd = find_by_build_id(id, len, debuginfo_file_name, &s);
    }
    if (fd < 0 && file_name && file_name[0] == '/' && debuglink_file && *debuglink_file)
        fd = find_by_debuglink(mod, file_name, debuglink_file, altlink ? &alt : NULL,
                               debuginfo_file_name, &s);
    if (fd >= 0)
        return fd;
    if (remote && (fd = mt_sym_debuginfod_find(mod, altlink ? alt.id : NULL, altlink ? alt.len : 0,
                                               altlink || !file_name ? modname : file_name,
                                               debuginfo_file_name)) >= 0)
        return fd;
    if (fd != -2)
        note_rejected(altlink ? modname : file_name ? file_name : modname, &s, altlink);
    errno = 0; /* nothing found is not an error */
    return -1;
}

static int find_debuginfo_local(Dwfl_Module *mod, void **userdata, const char *modname,
                                GElf_Addr base, const char *file_name, const char *debuglink_file,
                                GElf_Word debuglink_crc, char **debuginfo_file_name)
{
    return find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                          debuginfo_file_name, false);
}

int mt_sym_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, GElf_Addr base,
                          const char *file_name, const char *debuglink_file,
                          GElf_Word debuglink_crc, char **debuginfo_file_name)
{
    return find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                          debuginfo_file_name, true);
}

const Dwfl_Callbacks sym_self_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = find_debuginfo_local,
    .debuginfo_path = &debuginfo_path,
};

Dwfl_Module *mt_sym_addrmodule(Dwfl *dwfl, uint64_t addr)
{
    Dwfl_Module *mod = dwfl_addrmodule(dwfl, addr);
    Dwarf_Addr low = 0, high = 0;
    if (mod && dwfl_module_info(mod, NULL, &low, &high, NULL, NULL, NULL, NULL) && addr >= low &&
        addr < high)
        return mod;
    return NULL;
}

/* Unloaded libraries, reported from their files at their old addresses.
 * Their modules are reported by path, so find_elf opens that file: the
 * build-ID search of dwfl_build_id_find_elf would end with debuginfod. */
static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = find_debuginfo_local,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

/* Whether MOD is the file M was loaded from, at M's address. */
static bool is_module_of(Dwfl_Module *mod, const mt_unloaded_module *m)
{
    const char *name = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    return name && strcmp(name, m->path) == 0;
}

/* The module of an unloaded library holding PC, from its file on disk. */
Dwfl_Module *sym_unloaded_module(struct mt_sym_state *st, Dwarf_Addr pc)
{
    mt_unloaded_module m;
    if (!st->unloaded_lookup || !st->unloaded_lookup(pc, &m))
        return NULL;
    if (!st->unloaded_dwfl && !(st->unloaded_dwfl = dwfl_begin(&offline_callbacks)))
        return NULL;
    Dwfl_Module *mod = mt_sym_addrmodule(st->unloaded_dwfl, pc);
    if (mod && is_module_of(mod, &m))
        return mod;
    if (mod) {
        /* Another library was unloaded from the same addresses since:
         * start over rather than keep two modules at one address. */
        sym_end_dwfl(st, st->unloaded_dwfl);
        if (!(st->unloaded_dwfl = dwfl_begin(&offline_callbacks)))
            return NULL;
    }
    dwfl_report_begin_add(st->unloaded_dwfl);
    dwfl_report_elf(st->unloaded_dwfl, m.path, m.path, -1, m.bias, false);
    dwfl_report_end(st->unloaded_dwfl, NULL, NULL);
    return mt_sym_addrmodule(st->unloaded_dwfl, pc);
}

/* Re-reads the modules of the process into ST's Dwfl: ST's caches are
 * dropped, and the symbol tables of modules that are gone with them. When
 * the file mappings are the ones ST's Dwfl already has (the hash of the
 * maps they came from), nothing is re-reported and the caches stay:
 * an address found in no module (a library unloaded since, JIT code) then
 * costs one read of the maps, not a re-read of every module and of every
 * frame cached. */
bool sym_read_modules(struct mt_sym_state *st)
{
    size_t len = 0;
    char *maps = sym_read_maps(0, &len);
    uint64_t h = maps ? sym_modules_hash(maps, len) : 0;
    if (maps && st->hashed && h == st->modules_hash) {
        free(maps);
        return true;
    }
    sym_clear_caches(st);
    dwfl_report_begin(st->dwfl);
    int rc = sym_report_maps(st->dwfl, maps, len, 0);
    free(maps);
    bool ok = dwfl_report_end(st->dwfl, sym_free_symtab, NULL) == 0 && rc == 0;
    st->hashed = ok && h;
    st->modules_hash = h;
    return ok;
}
