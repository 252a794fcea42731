/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* MEMTRACE_SYMBOLIZE=later: frames left for `memtrace symbolize`, pprof or
 * any symbolizer outside the process, as continuous profilers leave them.
 * An address becomes one raw row, its module's full path, its offset in
 * that file and the module's build ID, all read from what the loader keeps
 * in memory (dl_iterate_phdr: program headers, PT_NOTE): no debug file, no
 * symbol table, no /proc/self/maps is read, and libdwfl is never set up. */
#include "symbolize/sym_internal.h"

#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The GNU build ID among the notes of the PT_NOTE segment at NOTE (SIZE
 * bytes), in hexadecimal into HEX; false if it holds none. */
static bool note_build_id(const unsigned char *note, size_t size, char hex[2 * 64 + 1])
{
    size_t at = 0;
    while (at + sizeof(ElfW(Nhdr)) <= size) {
        ElfW(Nhdr) h;
        memcpy(&h, note + at, sizeof h);
        size_t name_at = at + sizeof h;
        size_t desc_at = name_at + ((h.n_namesz + 3u) & ~(size_t)3);
        size_t next = desc_at + ((h.n_descsz + 3u) & ~(size_t)3);
        if (desc_at > size || h.n_descsz > size - desc_at)
            return false;
        if (h.n_type == NT_GNU_BUILD_ID && h.n_namesz == 4 &&
            memcmp(note + name_at, "GNU", 4) == 0 && h.n_descsz > 0) {
            size_t n = h.n_descsz < 64 ? h.n_descsz : 64;
            for (size_t i = 0; i < n; i++)
                snprintf(hex + 2 * i, 3, "%02x", note[desc_at + i]);
            return true;
        }
        at = next;
    }
    return false;
}

/* The main program's path, read once (under the default state's lock or
 * at a report: every caller holds mt_sym_self_lock). */
static const char *main_path(void)
{
    static char path[1024];
    static bool read;
    if (!read) {
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        path[n > 0 ? n : 0] = '\0';
        read = true;
    }
    return path;
}

/* Whether NOTE's bytes lie in a loadable segment's file bytes: mapped,
 * and so readable. */
static bool loaded(const struct dl_phdr_info *info, const ElfW(Phdr) * note)
{
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && note->p_vaddr >= ph->p_vaddr &&
            note->p_vaddr - ph->p_vaddr <= ph->p_filesz &&
            note->p_memsz <= ph->p_filesz - (note->p_vaddr - ph->p_vaddr))
            return true;
    }
    return false;
}

struct module_search {
    uintptr_t pc;
    mt_sym_module *m;
    bool found;
};

static int module_holding(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct module_search *s = arg;
    const ElfW(Phdr) *seg = NULL;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum && !seg; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && s->pc >= start && s->pc - start < ph->p_memsz)
            seg = ph;
    }
    if (!seg)
        return 0;
    mt_sym_module *m = s->m;
    const char *name = info->dlpi_name;
    if (!name || !*name)
        name = main_path();
    snprintf(m->path, sizeof m->path, "%s", name);
    m->bias = info->dlpi_addr;
    m->start = info->dlpi_addr + seg->p_vaddr;
    m->limit = m->start + seg->p_memsz;
    m->offset = seg->p_offset;
    m->build_id[0] = '\0';
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_NOTE && loaded(info, ph) &&
            note_build_id((const unsigned char *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz,
                          m->build_id))
            break;
    }
    s->found = true;
    return 1;
}

bool mt_sym_module_at(uintptr_t pc, mt_sym_module *m)
{
    struct module_search s = { pc, m, false };
    dl_iterate_phdr(module_holding, &s);
    return s.found;
}

void sym_raw_rows(struct mt_sym_state *st, uintptr_t ret)
{
    /* Kept between calls: the row's strings point into it until they are
     * packed into the frame cache. */
    static mt_sym_module m;
    struct rows *r = &st->rows;
    uintptr_t pc = ret - 1;
    mt_frame *f = &r->row[r->n++];
    if (mt_sym_module_at(pc, &m)) {
        *f = (mt_frame){ .ret = ret,
                         .module = m.path,
                         .offset = pc - m.bias,
                         .raw = true,
                         .build_id = m.build_id[0] ? m.build_id : NULL };
        return;
    }
    mt_unloaded_module u;
    static char unloaded_path[sizeof u.path];
    if (st->unloaded_lookup && st->unloaded_lookup(pc, &u)) {
        memcpy(unloaded_path, u.path, sizeof u.path);
        *f = (mt_frame){ .ret = ret,
                         .module = unloaded_path,
                         .offset = pc - u.bias,
                         .raw = true,
                         .unloaded = true };
        return;
    }
    *f = (mt_frame){ .ret = ret, .offset = pc, .raw = true };
}
