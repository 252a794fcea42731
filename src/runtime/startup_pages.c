/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "runtime/startup_pages.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE ((uintptr_t)4096)
#define PM_PRESENT (UINT64_C(1) << 63)
#define PM_SWAP (UINT64_C(1) << 62)
#define PM_FILE (UINT64_C(1) << 61) /* file page or shared anonymous */
#define PM_CHUNK 512                /* entries read at a time: 2 MiB of pages */

typedef struct {
    int pagemap;
    uintptr_t vdso;
} drop_ctx;

/* Drops the file pages of [LO, HI) (page-aligned): runs of pages that are
 * either absent or present and file-backed, cut at every private page,
 * resident or swapped out (a copy made by a write: a text relocation, a
 * debugger's breakpoint), whose contents the file does not have. */
static void drop_range(int pagemap, uintptr_t lo, uintptr_t hi)
{
    uint64_t e[PM_CHUNK];
    uintptr_t run = 0; /* start of the current run of droppable pages, 0: none */
    uintptr_t a = lo;
    while (a < hi) {
        size_t n = (hi - a) / PAGE < PM_CHUNK ? (hi - a) / PAGE : PM_CHUNK;
        ssize_t got = pread(pagemap, e, n * sizeof e[0], (off_t)(a / PAGE * sizeof e[0]));
        if (got != (ssize_t)(n * sizeof e[0]))
            break; /* pages not known: none of them dropped */
        for (size_t i = 0; i < n; i++, a += PAGE) {
            bool keep = (e[i] & PM_SWAP) || ((e[i] & PM_PRESENT) && !(e[i] & PM_FILE));
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
    const drop_ctx *c = data;
    /* the executable (the first object, no name) and the vDSO */
    if (!info->dlpi_name || !info->dlpi_name[0] || info->dlpi_addr == c->vdso)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W) || !ph->p_filesz)
            continue;
        uintptr_t lo = (info->dlpi_addr + ph->p_vaddr) & ~(PAGE - 1);
        uintptr_t hi = (info->dlpi_addr + ph->p_vaddr + ph->p_filesz + PAGE - 1) & ~(PAGE - 1);
        drop_range(c->pagemap, lo, hi);
    }
    return 0;
}

void mt_startup_pages_drop(void)
{
    drop_ctx c = { open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC),
                   (uintptr_t)getauxval(AT_SYSINFO_EHDR) };
    if (c.pagemap < 0)
        return;
    dl_iterate_phdr(drop_object, &c);
    close(c.pagemap);
}
