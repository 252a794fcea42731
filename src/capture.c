/* mt_capture: runs the chosen unwinder and drops memtrace's own frames from
 * the top (whatever the compiler inlined, they are the ones inside our text
 * segment). A frame-pointer walk that finds no frame of the program (a
 * signal stack, a frame without a frame pointer right at the call) falls
 * back to libunwind for that capture. */
#include "capture.h"

#include "common.h"
#include "config.h"
#include "stack_store.h"

#include <dlfcn.h>
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
    mt_unwind_libunwind_init();
}

/* Copies BUF[0..N) to FRAMES past our own leading frames; returns the count,
 * or 0 if every frame was ours. */
static unsigned strip_own(void **buf, unsigned n, uintptr_t *frames, unsigned max)
{
    unsigned skip = 0;
    while (skip < n && (uintptr_t)buf[skip] - self_lo < self_hi - self_lo)
        skip++;
    unsigned depth = 0;
    for (unsigned i = skip; i < n && depth < max; i++)
        frames[depth++] = (uintptr_t)buf[i];
    return depth;
}

unsigned mt_capture(uintptr_t *frames, unsigned max)
{
    enum { SLACK = 8 }; /* our own frames above the program's */
    void *buf[MT_MAX_DEPTH + SLACK];
    if (mt_cfg.unwind == MT_UNWIND_FP) {
        unsigned depth = strip_own(buf, mt_unwind_fp(buf, max + SLACK), frames, max);
        if (MT_LIKELY(depth > 0))
            return depth;
    }
    return strip_own(buf, mt_unwind_libunwind(buf, max + SLACK), frames, max);
}
