/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "runtime/startup_pages.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE ((uintptr_t)4096)
#define PM_PRESENT (UINT64_C(1) << 63)
#define PM_SWAP (UINT64_C(1) << 62)
#define PM_FILE (UINT64_C(1) << 61) /* file page or shared anonymous */
#define PM_CHUNK 512                /* entries read at a time: 2 MiB of pages */

/* The snapshot mt_startup_pages_mark took: a read-only segment [lo, hi)
 * and, from bit 0 of its first word of `bits` on, whether each of its
 * pages was present then; `whole`: memtrace's, its pages all dropped
 * whatever the bits say (the header's rule). `object` indexes the
 * snapshot's object table while the mark classifies. One mapping holds
 * the segments, the bits and the objects. */
typedef struct {
    uintptr_t lo, hi;
    uint64_t *bits;
    size_t object;
    bool whole;
} seg;

typedef ElfW(Dyn) elf_dyn;

/* A loaded object at the snapshot, for the classification: OBJ_OWN, this
 * library; OBJ_MT, in the closure of its DT_NEEDED; OBJ_PROG, in the
 * closure of another object's (the header's rule). */
enum { OBJ_OWN = 1, OBJ_MT = 2, OBJ_PROG = 4 };
typedef struct {
    const elf_dyn *dyn; /* NULL: no dynamic section */
    const char *strtab; /* NULL: none */
    const char *name;   /* dlpi_name: "" for the executable */
    const char *soname; /* NULL: none */
    unsigned flags;     /* OBJ_* */
} object;

static seg *segs; /* NULL: no snapshot */
static size_t nsegs, snap_bytes;

typedef struct {
    int pagemap;
    uintptr_t vdso;
    size_t count, pages; /* the first walk: segments and pages (whole words) */
    size_t nobjs;        /* objects: counted by the first walk, filled by the second */
    bool fill;           /* the second: record them in segs and objs */
    size_t words_left;   /* the second: bit words not yet handed out */
    uint64_t *words;     /* the second: the bit words, after segs */
    object *objs;        /* the second: the objects, after the words */
    size_t objs_cap;
} walk_ctx;

/* Calls FN for each read-only PT_LOAD segment of every loaded object but
 * the executable (the first object, no name) and the vDSO; the last
 * first, so that the program headers, which the first segment holds, are
 * not read again once FN has dropped it (a read would map its 64 KiB
 * again). */
static int each_segment(struct dl_phdr_info *info, void *data,
                        void (*fn)(walk_ctx *, uintptr_t, uintptr_t))
{
    walk_ctx *c = data;
    if (!info->dlpi_name || !info->dlpi_name[0] || info->dlpi_addr == c->vdso)
        return 0;
    for (int i = info->dlpi_phnum - 1; i >= 0; i--) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W) || !ph->p_filesz)
            continue;
        uintptr_t lo = (info->dlpi_addr + ph->p_vaddr) & ~(PAGE - 1);
        uintptr_t hi = (info->dlpi_addr + ph->p_vaddr + ph->p_filesz + PAGE - 1) & ~(PAGE - 1);
        fn(c, lo, hi);
    }
    return 0;
}

/* Reads pagemap's entries for the N pages from A into E; false if it
 * cannot. */
static bool entries(int pagemap, uintptr_t a, size_t n, uint64_t *e)
{
    return pread(pagemap, e, n * sizeof e[0], (off_t)(a / PAGE * sizeof e[0])) ==
           (ssize_t)(n * sizeof e[0]);
}

static void mark_segment(walk_ctx *c, uintptr_t lo, uintptr_t hi)
{
    size_t pages = (hi - lo) / PAGE;
    if (!c->fill) {
        c->count++;
        c->pages += (pages + 63) / 64 * 64;
        return;
    }
    size_t words = (pages + 63) / 64;
    if (nsegs == c->count || words > c->words_left || !c->nobjs || c->nobjs > c->objs_cap)
        return; /* an object loaded between the walks (by another thread):
                 * none of it known, taken as loaded since */
    uint64_t *bits = c->words + (c->pages / 64 - c->words_left);
    c->words_left -= words;
    uint64_t e[PM_CHUNK];
    for (size_t at = 0; at < pages;) {
        size_t n = pages - at < PM_CHUNK ? pages - at : PM_CHUNK;
        if (!entries(c->pagemap, lo + at * PAGE, n, e)) {
            for (; at < pages; at++) /* not known: taken as present, kept */
                bits[at / 64] |= UINT64_C(1) << (at % 64);
            break;
        }
        for (size_t i = 0; i < n; i++, at++)
            if (e[i] & PM_PRESENT)
                bits[at / 64] |= UINT64_C(1) << (at % 64);
    }
    segs[nsegs++] = (seg){ lo, hi, bits, c->nobjs - 1, false };
}

/* A dynamic-section address: the loader relocated it in place, or (a
 * read-only dynamic section, the vDSO's) left it an offset from BASE. */
static const char *dyn_ptr(uintptr_t base, uintptr_t p)
{
    return (const char *)(p < base ? base + p : p);
}

/* Records the object INFO describes in c->objs: its dynamic section, its
 * names, whether it holds this file's code. */
static void note_object(walk_ctx *c, const struct dl_phdr_info *info)
{
    if (c->nobjs++ >= c->objs_cap)
        return;
    object *o = &c->objs[c->nobjs - 1];
    *o = (object){ NULL, NULL, info->dlpi_name ? info->dlpi_name : "", NULL, 0 };
    uintptr_t own = (uintptr_t)mt_startup_pages_mark;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t at = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && own >= at && own - at < ph->p_memsz)
            o->flags |= OBJ_OWN;
        if (ph->p_type == PT_DYNAMIC)
            o->dyn = (const elf_dyn *)at;
    }
    if (!o->dyn || info->dlpi_addr == c->vdso)
        return;
    ElfW(Xword) soname = 0;
    bool has_soname = false;
    for (const elf_dyn *d = o->dyn; d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_STRTAB)
            o->strtab = dyn_ptr(info->dlpi_addr, d->d_un.d_ptr);
        else if (d->d_tag == DT_SONAME) {
            soname = d->d_un.d_val;
            has_soname = true;
        }
    }
    if (o->strtab && has_soname)
        o->soname = o->strtab + soname;
}

static int mark_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    walk_ctx *c = data;
    if (!c->fill)
        c->nobjs++;
    else
        note_object(c, info);
    return each_segment(info, data, mark_segment);
}

/* The object NEEDED (a DT_NEEDED string) names, as the loader matches it:
 * by path when it has a slash, else by soname or file name; -1 if none. */
static long needed_object(const object *objs, size_t n, const char *needed)
{
    bool path = strchr(needed, '/') != NULL;
    for (size_t i = 0; i < n; i++) {
        const char *base = strrchr(objs[i].name, '/');
        base = base ? base + 1 : objs[i].name;
        if (path ? strcmp(objs[i].name, needed) == 0
                 : (objs[i].soname && strcmp(objs[i].soname, needed) == 0) ||
                       (objs[i].name[0] && strcmp(base, needed) == 0))
            return (long)i;
    }
    return -1;
}

/* Sets FLAG on every object the DT_NEEDED entries of one with FLAG name,
 * until none is added, never on one with OBJ_OWN (memtrace's object does
 * not make its own dependencies the program's). */
static void close_over_needed(object *objs, size_t n, unsigned flag)
{
    for (bool added = true; added;) {
        added = false;
        for (size_t i = 0; i < n; i++) {
            if (!(objs[i].flags & flag) || !objs[i].dyn || !objs[i].strtab)
                continue;
            for (const elf_dyn *d = objs[i].dyn; d->d_tag != DT_NULL; d++) {
                if (d->d_tag != DT_NEEDED)
                    continue;
                long j = needed_object(objs, n, objs[i].strtab + d->d_un.d_val);
                if (j >= 0 && !(objs[j].flags & (flag | (flag == OBJ_PROG ? OBJ_OWN : 0)))) {
                    objs[j].flags |= flag;
                    added = true;
                }
            }
        }
    }
}

/* The header's rule: memtrace's object, and each object in the closure of
 * its DT_NEEDED that no other object's closure (the executable's, other
 * preloaded or loaded objects') reaches, are memtrace's: whole. */
static void classify(object *objs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (objs[i].flags & OBJ_OWN)
            objs[i].flags |= OBJ_MT;
    close_over_needed(objs, n, OBJ_MT);
    for (size_t i = 0; i < n; i++)
        if (!(objs[i].flags & OBJ_MT))
            objs[i].flags |= OBJ_PROG;
    close_over_needed(objs, n, OBJ_PROG);
    for (size_t i = 0; i < nsegs; i++) {
        unsigned f = objs[segs[i].object].flags;
        segs[i].whole = (f & OBJ_OWN) || ((f & OBJ_MT) && !(f & OBJ_PROG));
    }
}

void mt_startup_pages_mark(void)
{
    const char *rate = getenv("MEMTRACE_SAMPLE");
    if (segs || !rate || !*rate || (rate[0] == '0' && !rate[1]))
        return; /* not sample mode: nothing will be dropped */
    walk_ctx c = { .pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC),
                   .vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR) };
    if (c.pagemap < 0)
        return;
    dl_iterate_phdr(mark_object, &c);
    size_t bytes = c.count * sizeof(seg) + c.pages / 8 + c.nobjs * sizeof(object);
    void *m = c.count
                  ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                  : MAP_FAILED;
    if (m != MAP_FAILED) {
        segs = m;
        snap_bytes = bytes;
        c.words = (uint64_t *)(segs + c.count);
        c.objs = (object *)(c.words + c.pages / 64);
        c.objs_cap = c.nobjs;
        c.nobjs = 0;
        c.fill = true;
        c.words_left = c.pages / 64;
        dl_iterate_phdr(mark_object, &c);
        classify(c.objs, c.nobjs < c.objs_cap ? c.nobjs : c.objs_cap);
    }
    close(c.pagemap);
}

/* The snapshot of segment [LO, HI), or NULL for one loaded after it. */
static const seg *snapshot_of(uintptr_t lo, uintptr_t hi)
{
    for (size_t i = 0; i < nsegs; i++)
        if (segs[i].lo == lo && segs[i].hi == hi)
            return &segs[i];
    return NULL;
}

/* Drops the file pages of [LO, HI) (page-aligned) that are memtrace's:
 * runs of pages that are either absent or present and file-backed and,
 * unless the segment is memtrace's whole (S->whole, or no S: an object
 * loaded since the snapshot), not present at the snapshot; cut at every
 * other page: one present before, one private, resident or swapped out (a
 * copy made by a write: a text relocation, a debugger's breakpoint), whose
 * contents the file does not have. */
static void drop_segment(walk_ctx *c, uintptr_t lo, uintptr_t hi)
{
    const seg *s = snapshot_of(lo, hi);
    uint64_t e[PM_CHUNK];
    uintptr_t run = 0; /* start of the current run of droppable pages, 0: none */
    uintptr_t a = lo;
    while (a < hi) {
        size_t n = (hi - a) / PAGE < PM_CHUNK ? (hi - a) / PAGE : PM_CHUNK;
        if (!entries(c->pagemap, a, n, e))
            break; /* pages not known: none of them dropped */
        for (size_t i = 0; i < n; i++, a += PAGE) {
            size_t k = (a - lo) / PAGE;
            bool before = s && !s->whole && (s->bits[k / 64] >> (k % 64) & 1);
            bool keep = before || (e[i] & PM_SWAP) || ((e[i] & PM_PRESENT) && !(e[i] & PM_FILE));
            if (keep && run) {
                madvise((void *)run, a - run, MADV_DONTNEED);
                run = 0;
            } else if (!keep && !run)
                run = a;
        }
    }
    if (run)
        madvise((void *)run, a - run, MADV_DONTNEED);
}

static int drop_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    return each_segment(info, data, drop_segment);
}

void mt_startup_pages_drop(bool drop)
{
    if (!segs)
        return; /* no snapshot: what was there before start-up is not known */
    walk_ctx c = { .pagemap = drop ? open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC) : -1,
                   .vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR) };
    if (c.pagemap >= 0) {
        dl_iterate_phdr(drop_object, &c);
        close(c.pagemap);
    }
    munmap(segs, snap_bytes);
    segs = NULL;
    nsegs = 0;
}
