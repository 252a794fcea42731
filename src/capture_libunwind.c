/* Stack capture with libunwind's local unwinder (unw_backtrace, which uses
 * its cached frame descriptions when it can). Frames inside memtrace's own
 * text are dropped from the top, whatever the compiler inlined. */
#define UNW_LOCAL_ONLY
#include "capture.h"

#include "common.h"
#include "stack_store.h"

#include <dlfcn.h>
#include <libunwind.h>
#include <link.h>

static uintptr_t self_lo, self_hi; /* our executable segment */

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uintptr_t base = (uintptr_t)data;
    if (info->dlpi_addr != base)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            self_lo = base + ph->p_vaddr;
            self_hi = self_lo + ph->p_memsz;
            return 1;
        }
    }
    return 0;
}

void mt_capture_init(void)
{
    Dl_info info;
    if (dladdr((void *)mt_capture_init, &info) && info.dli_fbase)
        dl_iterate_phdr(find_self, info.dli_fbase);
    /* The global cache takes a lock on every unwind; a per-thread one does
     * not, and threads here unwind all the time. */
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
}

unsigned mt_capture(uintptr_t *frames, unsigned max)
{
    enum { SLACK = 8 }; /* our own frames above the program's */
    void *buf[MT_MAX_DEPTH + SLACK];
    int n = unw_backtrace(buf, (int)(max + SLACK));
    int skip = 0;
    while (skip < n && (uintptr_t)buf[skip] - self_lo < self_hi - self_lo)
        skip++;
    unsigned depth = 0;
    for (int i = skip; i < n && depth < max; i++)
        frames[depth++] = (uintptr_t)buf[i];
    return depth;
}
