/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mt_capture: runs the chosen unwinder and drops memtrace's own frames from
 * the top (whatever the compiler inlined, they are the ones inside our text
 * segment). A capture the cfi unwinder gives up, or a frame-pointer walk
 * that finds no frame of the program (a signal stack) or breaks right at
 * the allocator's caller (a caller without a frame pointer, such as libc's
 * strdup), is made by libunwind instead. */
#include "capture/capture.h"

#include "base/common.h"
#include "base/config.h"
#include "store/stack_store.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

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
    mt_unwind_cfi_init(self_lo, self_hi);
    mt_unwind_libunwind_init();
}

/* Copies BUF[0..N) to FRAMES past our own leading frames; returns the count,
 * or 0 if every frame was ours. */
static unsigned strip_own(void **buf, unsigned n, uintptr_t *frames, unsigned max)
{
    unsigned skip = 0;
    /* cppcheck-suppress uninitvar ; BUF[0..N) was written by the unwinder */
    while (skip < n && (uintptr_t)buf[skip] - self_lo < self_hi - self_lo)
        skip++;
    unsigned depth = 0;
    for (unsigned i = skip; i < n && depth < max; i++)
        frames[depth++] = (uintptr_t)buf[i];
    return depth;
}

enum { SLACK = 8 }; /* our own frames above the program's */

static MT_NOINLINE unsigned by_libunwind(uintptr_t *frames, unsigned max)
{
    void *buf[MT_MAX_DEPTH + SLACK];
    return strip_own(buf, mt_unwind_libunwind(buf, max + SLACK), frames, max);
}

static MT_NOINLINE unsigned by_fp(uintptr_t *frames, unsigned max)
{
    void *buf[MT_MAX_DEPTH + SLACK];
    bool broken = false;
    unsigned depth = strip_own(buf, mt_unwind_fp(buf, max + SLACK, &broken), frames, max);
    if (MT_LIKELY(depth > 1 || (depth == 1 && !broken)))
        return depth;
    return by_libunwind(frames, max);
}

/* ------------------------------------------------------ check mode */

static mt_atomic(unsigned long) checked, mismatched;
static mt_check_mismatch kept[MT_CHECK_KEPT];
static mt_atomic(int) kept_ready[MT_CHECK_KEPT];

static void keep_mismatch(unsigned long i, const uintptr_t *cfi, unsigned cn, const uintptr_t *lu,
                          unsigned ln)
{
    if (i >= MT_CHECK_KEPT)
        return;
    mt_check_mismatch *m = &kept[i];
    m->cfi_depth = cn < MT_CHECK_DEPTH ? cn : MT_CHECK_DEPTH;
    m->libunwind_depth = ln < MT_CHECK_DEPTH ? ln : MT_CHECK_DEPTH;
    memcpy(m->cfi, cfi, m->cfi_depth * sizeof *cfi);
    memcpy(m->libunwind, lu, m->libunwind_depth * sizeof *lu);
    mt_atomic_store_release(&kept_ready[i], 1);
}

static MT_NOINLINE unsigned by_both(uintptr_t *frames, unsigned max)
{
    uintptr_t mine[MT_MAX_DEPTH];
    int cn = mt_unwind_cfi(mine, max);
    unsigned ln = by_libunwind(frames, max);
    mt_atomic_add_relaxed(&checked, 1);
    if (cn < 0)
        mt_unwind_cfi_fell_back();
    else if ((unsigned)cn != ln || memcmp(mine, frames, ln * sizeof *frames) != 0)
        keep_mismatch(mt_atomic_add_relaxed(&mismatched, 1), mine, (unsigned)cn, frames, ln);
    return ln;
}

void mt_check_get(mt_check_counts *out)
{
    out->captures = mt_atomic_load_relaxed(&checked);
    out->mismatches = mt_atomic_load_relaxed(&mismatched);
    out->fallbacks = mt_unwind_fallbacks(); /* only check mode's own, in this mode */
}

bool mt_check_mismatch_get(unsigned i, mt_check_mismatch *out)
{
    if (i >= MT_CHECK_KEPT || !mt_atomic_load_acquire(&kept_ready[i]))
        return false;
    *out = kept[i];
    return true;
}

/* Check mode's mt_capture_stack: the cfi walk and its interning against
 * libunwind's frames and their id; both must agree. */
static MT_NOINLINE mt_stack_id by_both_stack(unsigned max, unsigned which)
{
    uintptr_t mine[MT_MAX_DEPTH], frames[MT_MAX_DEPTH];
    mt_stack_id cfi_id = 0;
    int cn = mt_unwind_cfi_stack(max, which, &cfi_id, mine);
    unsigned ln = by_libunwind(frames, max);
    mt_stack_id id = mt_stack_intern(frames, ln);
    mt_atomic_add_relaxed(&checked, 1);
    if (cn < 0)
        mt_unwind_cfi_fell_back();
    else if ((unsigned)cn != ln || memcmp(mine, frames, ln * sizeof *frames) != 0 || cfi_id != id)
        keep_mismatch(mt_atomic_add_relaxed(&mismatched, 1), mine, (unsigned)cn, frames, ln);
    return id;
}

/* ------------------------------------------------------------------ */

/* Every unwinder but cfi's fast path: frames, then the store's lookup. */
static MT_NOINLINE mt_stack_id stack_slow(unsigned max, bool cfi_failed)
{
    uintptr_t frames[MT_MAX_DEPTH];
    unsigned depth = cfi_failed ? by_libunwind(frames, max) : mt_capture(frames, max);
    return mt_stack_intern(frames, depth);
}

mt_stack_id mt_capture_stack_slow(unsigned max, unsigned which, bool cfi_failed)
{
    if (cfi_failed) {
        mt_unwind_cfi_fell_back();
        return stack_slow(max, true);
    }
    if (mt_cfg.unwind == MT_UNWIND_CHECK)
        return by_both_stack(max, which);
    return stack_slow(max, false);
}

/* ------------------------------------------------------------------ */

unsigned mt_capture(uintptr_t *frames, unsigned max)
{
    if (MT_LIKELY(mt_cfg.unwind == MT_UNWIND_CFI)) {
        int depth = mt_unwind_cfi(frames, max);
        if (MT_LIKELY(depth >= 0))
            return (unsigned)depth;
        mt_unwind_cfi_fell_back();
        return by_libunwind(frames, max);
    }
    switch (mt_cfg.unwind) {
    case MT_UNWIND_FP: return by_fp(frames, max);
    case MT_UNWIND_CHECK: return by_both(frames, max);
    default: return by_libunwind(frames, max);
    }
}
