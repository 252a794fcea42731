/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The aligned allocators: posix_memalign, aligned_alloc, memalign, valloc,
 * pvalloc (and, through mt_posix_memalign_next and mt_aligned_next,
 * tcmalloc's). Each forwards to its own real function when the next
 * allocator has it (they differ in what they accept), else to
 * posix_memalign with the alignment it implies; before the real allocator
 * is known and inside memtrace, the internal heap serves. And C23's sized
 * frees, through mt_free_next, which tcmalloc.c's frees share. */
#include "capture/entry_points.h"

#include "base/common.h"
#include "base/config.h"
#include "base/os.h"
#include "base/reentry.h"
#include "capture/record.h"
#include "capture/guard.h"
#include "capture/state.h"
#include "store/internal_heap.h"

#include <errno.h>
#include <stdbool.h>

static inline bool valid_alignment(size_t align)
{
    return align != 0 && (align & (align - 1)) == 0;
}

/* The block of posix_memalign's call, NULL when it failed (its status in
 * *RC). */
static inline void *posix_memalign_call(int (*fn)(void **, size_t, size_t), void **out,
                                        size_t align, size_t size, int *rc)
{
    *rc = fn(out, align, size);
    return *rc == 0 ? *out : NULL;
}

int mt_posix_memalign_next(int (*fn)(void **, size_t, size_t), void **out, size_t align,
                           size_t size)
{
    bool traced = !mt_bypass();
    if (MT_UNLIKELY(!traced && (mt_own_heap() || !fn))) {
        if (!valid_alignment(align) || align % sizeof(void *) != 0)
            return EINVAL;
        void *p = mt_iheap_alloc(size, align);
        if (!p)
            return ENOMEM;
        *out = p;
        return 0;
    }
    int rc;
    void *p;
    void *g = valid_alignment(align) && align % sizeof(void *) == 0
                  ? mt_guard_take(traced, size, align)
                  : NULL;
    MT_NEXT_ALLOC(MT_NEXT_PLAIN, traced, p,
                  g ? (*out = g, rc = 0, g)
                    : posix_memalign_call(fn, out, align, mt_padded(size, traced), &rc),
                  size, MT_KIND_MALLOC);
    return rc;
}

int mt_posix_memalign(void **out, size_t align, size_t size)
{
    return mt_posix_memalign_next(mt_real.next_posix_memalign, out, align, size);
}

/* The block of FN's call, or of posix_memalign's when FN is NULL (errno
 * set as FN's would be when it fails). */
static void *aligned_call(void *(*fn)(size_t, size_t), size_t align, size_t size)
{
    if (fn)
        return fn(align, size);
    void *p;
    int rc = mt_real.next_posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size);
    if (rc != 0) {
        errno = rc;
        return NULL;
    }
    return p;
}

void *mt_aligned_next(void *(*fn)(size_t, size_t), size_t align, size_t size)
{
    bool traced = !mt_bypass();
    if (MT_UNLIKELY(!traced && (mt_own_heap() || !mt_real.next_posix_memalign))) {
        if (!valid_alignment(align)) {
            errno = EINVAL;
            return NULL;
        }
        return mt_iheap_alloc(size, align);
    }
    void *p;
    MT_NEXT_ALLOC(MT_NEXT_PLAIN, traced, p,
                  MT_GUARD_OR(traced && valid_alignment(align), size, align,
                              aligned_call(fn, align, mt_padded(size, traced))),
                  size, MT_KIND_MALLOC);
    return p;
}

void *mt_aligned_alloc(size_t align, size_t size)
{
    return mt_aligned_next(mt_real.next_aligned_alloc, align, size);
}

void *mt_memalign(size_t align, size_t size)
{
    return mt_aligned_next(mt_real.next_memalign, align, size);
}

static void *valloc_adapter(size_t align, size_t size)
{
    (void)align;
    return mt_real.next_valloc(size);
}

static void *pvalloc_adapter(size_t align, size_t size)
{
    (void)align;
    return mt_real.next_pvalloc(size);
}

void *mt_valloc(size_t size)
{
    size_t page = mt_os_page_size();
    return mt_aligned_next(mt_real.next_valloc ? valloc_adapter : NULL, page, size);
}

void *mt_pvalloc(size_t size)
{
    size_t page = mt_os_page_size();
    size_t rounded;
    if (__builtin_add_overflow(size, page - 1, &rounded)) {
        errno = ENOMEM;
        return NULL;
    }
    rounded &= ~(page - 1);
    /* With a redzone the record's size is the rounded one, which pvalloc
     * lets the program use. */
    return mt_aligned_next(mt_real.next_pvalloc ? pvalloc_adapter : NULL, page,
                           mt_real.next_pvalloc && !mt_cfg.redzone ? size : rounded);
}

/* ---- C23's sized frees; and the frees of the other families that take
 * one or two words more (tcmalloc.c) */

void mt_free_next(unsigned i, void *ptr, size_t a, size_t b, int args)
{
    void *fn = mt_ext_get(i);
    if (fn == NULL) {
        mt_free(ptr);
        return;
    }
    /* free_sized (ptr, size), free_aligned_sized (ptr, align, size), tc_free */
    mt_free_call c = args == 0   ? MT_FREE_CALL(fn, MT_FC_P, 0, 0)
                     : args == 1 ? MT_FREE_CALL(fn, MT_FC_PA | MT_FC_SIZE_A, a, 0)
                                 : MT_FREE_CALL(fn, MT_FC_PAB | MT_FC_SIZE_B, a, b);
    MT_NEXT_FREE(ptr, MT_KIND_MALLOC, true, c);
}

void mt_free_sized(void *ptr, size_t size)
{
    mt_free_next(MT_X_FREE_SIZED, ptr, size, 0, 1);
}

void mt_free_aligned_sized(void *ptr, size_t align, size_t size)
{
    mt_free_next(MT_X_FREE_ALIGNED_SIZED, ptr, align, size, 2);
}
