/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The target's memory (target_mem.h): a core file's PT_LOAD segments,
 * read in place from the mapped file; a process's /proc/PID/mem, opened by
 * gdb (it traces the process, so the kernel lets it, Yama or not; this
 * program, gdb's child and not the process's ancestor, could not) and
 * handed down. Chosen over gdb's read_memory (a Python call per read:
 * seconds for a large heap) and over a gcore to a temporary file (writes
 * the whole memory to disk first). */
#include "target_mem.h"

#include "base/os.h"
#include "scan/leak_scan.h"
#include "scan/spans.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* The target's address space (sorted by lo, not overlapping): a core's
 * PT_LOADs, of which readable_hi - lo bytes are in the file at the span's
 * data (the rest was not dumped), or the lines of /proc/PID/maps. */
static struct {
    mt_span *segs;
    size_t nsegs;
    const char *raw; /* the core file, mapped; NULL for a process */
    size_t raw_len;
    Elf *core;  /* the core, for its NT_FILE note; NULL for a process */
    int mem_fd; /* /proc/PID/mem; -1 for a core */
    int pid;
} mem = { .mem_fd = -1 };

/* Reads of up to one scan chunk land here when they cannot be handed out
 * in place (a process's memory; a core range over two segments). */
static char read_buf[MT_TARGET_READ_MAX];

static int seg_cmp(const void *a, const void *b)
{
    const mt_span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

void mt_target_mem_core(Elf *core)
{
    size_t n = 0;
    mem.core = core;
    mem.raw = elf_rawfile(core, &mem.raw_len);
    if (elf_getphdrnum(core, &n) != 0)
        n = 0;
    mem.segs = calloc(n ? n : 1, sizeof *mem.segs);
    mem.nsegs = 0;
    for (size_t i = 0; mem.segs && i < n; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(core, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_memsz)
            continue;
        size_t filesz = ph.p_offset <= mem.raw_len && ph.p_filesz <= mem.raw_len - ph.p_offset
                            ? ph.p_filesz
                            : 0; /* a truncated core: not there */
        mem.segs[mem.nsegs++] =
            (mt_span){ ph.p_vaddr, ph.p_vaddr + ph.p_memsz, ph.p_vaddr + filesz, ph.p_offset };
    }
    if (mem.nsegs)
        qsort(mem.segs, mem.nsegs, sizeof *mem.segs, seg_cmp);
    /* A damaged core's program headers may overlap or wrap: keep seg_of's
     * order (sorted, disjoint) by dropping what would break it. */
    size_t kept = 0;
    for (size_t i = 0; i < mem.nsegs; i++) {
        const mt_span *x = &mem.segs[i];
        if (x->hi < x->lo || x->readable_hi < x->lo || (kept && x->lo < mem.segs[kept - 1].hi))
            continue;
        mem.segs[kept++] = *x;
    }
    mem.nsegs = kept;
}

void mt_target_mem_process(int mem_fd, int pid)
{
    mem.mem_fd = mem_fd;
    mem.pid = pid;
}

/* The process's maps, read again for each request (it ran in between),
 * from a live thread's maps file (mt_os_maps_open: main's are empty once
 * it has called pthread_exit). */
static void read_process_maps(void)
{
    int fd = mt_os_maps_open(mem.pid);
    free(mem.segs);
    mem.segs = NULL;
    mem.nsegs = 0;
    size_t cap = 0;
    char buf[4096 + 256];
    mt_os_maps maps;
    mt_os_maps_fd(&maps, fd, buf, sizeof buf);
    mt_os_mapping m;
    while (fd >= 0 && mt_os_maps_next(&maps, &m)) {
        if (m.end <= m.start)
            continue;
        /* [vvar] may fault when read and holds no root: mapped, unreadable,
         * as the pages the process cannot read (readable_hi = lo). */
        bool vvar = m.path_len >= 5 && memcmp(m.path, "[vvar", 5) == 0;
        bool readable = m.perms[0] == 'r' && !vvar;
        if (mem.nsegs == cap) {
            cap = cap ? 2 * cap : 256;
            mt_span *s = realloc(mem.segs, cap * sizeof *s);
            if (!s)
                break;
            mem.segs = s;
        }
        mem.segs[mem.nsegs++] = (mt_span){ m.start, m.end, readable ? m.end : m.start, 0 };
    }
    if (fd >= 0)
        close(fd);
}

static const mt_span *seg_of(uintptr_t addr)
{
    return mt_span_of(mem.segs, mem.nsegs, addr);
}

/* mt_leak_region_fn over the target: a core segment's dumped part is
 * readable, the rest of it not; a process's maps say. */
int mt_target_region(void *ctx, uintptr_t addr, uintptr_t *end)
{
    (void)ctx;
    return mt_span_region(mem.segs, mem.nsegs, addr, end);
}

/* A process's memory is read through a cache of 64 KiB windows: the scan
 * reads a million small blocks, mostly next to each other, and one pread
 * per block costs seconds where one per window costs a few ms. Direct-
 * mapped, WINDOWS of them (32 MiB); emptied for each request (the process
 * ran in between). A window that cannot be read whole (the end of a
 * mapping) is read for each request as asked. */
#define WINDOW_BITS 16
#define WINDOWS 512
static struct window {
    uintptr_t base; /* 0: empty */
    bool readable;
    char *bytes;
} windows[WINDOWS];

static void forget_windows(void)
{
    for (size_t i = 0; i < WINDOWS; i++)
        windows[i].base = 0;
}

static const char *process_window(uintptr_t addr, size_t len)
{
    uintptr_t base = addr >> WINDOW_BITS << WINDOW_BITS;
    if (addr + len > base + ((uintptr_t)1 << WINDOW_BITS) || base == 0)
        return NULL;
    struct window *w = &windows[(addr >> WINDOW_BITS) % WINDOWS];
    if (w->base != base) {
        if (!w->bytes && !(w->bytes = malloc((size_t)1 << WINDOW_BITS)))
            return NULL;
        w->base = base;
        w->readable = pread(mem.mem_fd, w->bytes, (size_t)1 << WINDOW_BITS, (off_t)base) ==
                      (ssize_t)1 << WINDOW_BITS;
    }
    return w->readable ? w->bytes + (addr - base) : NULL;
}

/* mt_leak_read_fn over the target. */
static const void *read_target(void *ctx, uintptr_t addr, size_t len)
{
    (void)ctx;
    if (addr + len < addr)
        return NULL;
    if (mem.mem_fd >= 0) {
        const char *w = process_window(addr, len);
        if (w)
            return w;
        if (len > sizeof read_buf)
            return NULL;
        ssize_t got = pread(mem.mem_fd, read_buf, len, (off_t)addr);
        return got == (ssize_t)len ? read_buf : NULL;
    }
    const mt_span *s = seg_of(addr);
    if (s && addr + len <= s->readable_hi)
        return mem.raw + s->data + (addr - s->lo);
    if (len > sizeof read_buf)
        return NULL;
    for (size_t done = 0; done < len;) { /* over adjacent segments */
        s = seg_of(addr + done);
        if (!s || addr + done >= s->readable_hi)
            return NULL;
        size_t piece = s->readable_hi - (addr + done);
        if (piece > len - done)
            piece = len - done;
        memcpy(read_buf + done, mem.raw + s->data + (addr + done - s->lo), piece);
        done += piece;
    }
    return read_buf;
}

const void *mt_target_read(void *ctx, uintptr_t addr, size_t len)
{
    return read_target(ctx, addr, len);
}

void mt_target_mem_changed(void)
{
    if (mem.mem_fd >= 0)
        forget_windows();
}

bool mt_target_mapping(uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
    const mt_span *s = seg_of(addr);
    if (s)
        *lo = s->lo, *hi = s->hi;
    return s != NULL;
}

/* The NT_FILE note of the core (the kernel's: u64 COUNT, u64 PAGE_SIZE,
 * COUNT x (u64 start, end, page offset), then COUNT NUL-ended paths): the
 * file mapped at ADDR into *W. */
static bool core_file(uintptr_t addr, mt_target_mapped *w)
{
    size_t n = 0;
    if (elf_getphdrnum(mem.core, &n) != 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(mem.core, (int)i, &ph) || ph.p_type != PT_NOTE)
            continue;
        Elf_Data *d = elf_getdata_rawchunk(mem.core, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_NHDR);
        GElf_Nhdr nh;
        size_t off = 0, name_off, desc_off;
        while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
            if (nh.n_type != NT_FILE || nh.n_descsz < 16)
                continue;
            const char *desc = (const char *)d->d_buf + desc_off;
            uint64_t count, page;
            memcpy(&count, desc, 8);
            memcpy(&page, desc + 8, 8);
            if (count > (nh.n_descsz - 16) / 24)
                return false;
            const char *name = desc + 16 + count * 24, *end = desc + nh.n_descsz;
            for (uint64_t k = 0; k < count && name < end; k++) {
                uint64_t e[3];
                memcpy(e, desc + 16 + k * 24, sizeof e);
                size_t len = strnlen(name, (size_t)(end - name));
                if (addr >= e[0] && addr < e[1]) {
                    snprintf(w->path, sizeof w->path, "%.*s", (int)len, name);
                    w->lo = e[0], w->hi = e[1];
                    w->offset = e[2] * page + (addr - e[0]);
                    w->file = true;
                    return true;
                }
                name += len + 1;
            }
        }
    }
    return false;
}

bool mt_target_mapped_at(uintptr_t addr, mt_target_mapped *w)
{
    memset(w, 0, sizeof *w);
    if (mem.core) {
        const mt_span *s = seg_of(addr);
        if (s)
            w->lo = s->lo, w->hi = s->hi;
        return core_file(addr, w) || s;
    }
    int fd = mt_os_maps_open(mem.pid);
    char buf[4096 + 256];
    mt_os_maps maps;
    mt_os_maps_fd(&maps, fd, buf, sizeof buf);
    mt_os_mapping m;
    bool found = false;
    while (fd >= 0 && !found && mt_os_maps_next(&maps, &m)) {
        if (addr < m.start || addr >= m.end)
            continue;
        found = true;
        w->lo = m.start, w->hi = m.end;
        snprintf(w->path, sizeof w->path, "%.*s", (int)m.path_len, m.path);
        w->offset = m.inode ? m.offset + (addr - m.start) : 0;
        w->file = m.inode != 0;
        snprintf(w->perms, sizeof w->perms, "%s", m.perms);
    }
    if (fd >= 0)
        close(fd);
    return found;
}

void mt_target_mem_refresh(void)
{
    if (mem.mem_fd >= 0) {
        read_process_maps();
        forget_windows();
    }
}
