/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tcmalloc's tc_* C functions, each with its libc namesake's contract:
 * through tcmalloc's own when it is below memtrace, else the namesake's
 * entry point. (tc_new & co. are the C++ operators': cxx.c.) */
#include "capture/entry_points.h"

#include "base/common.h"
#include "base/config.h"
#include "base/os.h"
#include "capture/record.h"
#include "capture/state.h"

void *mt_tc_malloc(size_t size)
{
    void *(*fn)(size_t) = (void *(*)(size_t))mt_ext_get(MT_X_TC_MALLOC);
    if (!fn)
        return mt_malloc(size);
    bool traced = !mt_bypass();
    void *p;
    MT_NEXT_ALLOC(MT_NEXT_SCOPED, traced, p, fn(mt_padded(size, traced)), size, MT_KIND_MALLOC);
    return p;
}

void mt_tc_free(void *ptr)
{
    mt_free_next(MT_X_TC_FREE, ptr, 0, 0, 0);
}

void mt_tc_cfree(void *ptr)
{
    mt_free_next(MT_X_TC_CFREE, ptr, 0, 0, 0);
}

void mt_tc_free_sized(void *ptr, size_t size)
{
    mt_free_next(MT_X_TC_FREE_SIZED, ptr, size, 0, 1);
}

void *mt_tc_calloc(size_t n, size_t size)
{
    void *(*fn)(size_t, size_t) = (void *(*)(size_t, size_t))mt_ext_get(MT_X_TC_CALLOC);
    size_t total;
    if (!fn || __builtin_mul_overflow(n, size, &total))
        return mt_calloc(n, size); /* says ENOMEM on overflow */
    bool traced = !mt_bypass();
    void *p;
    /* calloc(1, padded): the redzone is zeroed, then filled */
    if (traced && (mt_cfg.redzone || mt_cfg.sample)) /* sample mode: the trailer too */
        MT_NEXT_ALLOC(MT_NEXT_SCOPED, traced, p, fn(1, mt_padded(total, true)), total,
                      MT_KIND_MALLOC);
    else
        MT_NEXT_ALLOC(MT_NEXT_SCOPED, traced, p, fn(n, size), total, MT_KIND_MALLOC);
    return p;
}

void *mt_tc_realloc(void *ptr, size_t size)
{
    void *(*fn)(void *, size_t) = (void *(*)(void *, size_t))mt_ext_get(MT_X_TC_REALLOC);
    return mt_realloc_next(fn ? fn : mt_real.next_realloc, ptr, size);
}

void *mt_tc_memalign(size_t align, size_t size)
{
    void *(*fn)(size_t, size_t) = (void *(*)(size_t, size_t))mt_ext_get(MT_X_TC_MEMALIGN);
    return mt_aligned_next(fn ? fn : mt_real.next_memalign, align, size);
}

int mt_tc_posix_memalign(void **out, size_t align, size_t size)
{
    int (*fn)(void **, size_t, size_t) =
        (int (*)(void **, size_t, size_t))mt_ext_get(MT_X_TC_POSIX_MEMALIGN);
    return mt_posix_memalign_next(fn ? fn : mt_real.next_posix_memalign, out, align, size);
}

static void *tc_valloc_adapter(size_t align, size_t size)
{
    (void)align;
    return ((void *(*)(size_t))mt_atomic_load_relaxed(&mt_ext[MT_X_TC_VALLOC]))(size);
}

static void *tc_pvalloc_adapter(size_t align, size_t size)
{
    (void)align;
    return ((void *(*)(size_t))mt_atomic_load_relaxed(&mt_ext[MT_X_TC_PVALLOC]))(size);
}

void *mt_tc_valloc(size_t size)
{
    if (!mt_ext_get(MT_X_TC_VALLOC))
        return mt_valloc(size);
    return mt_aligned_next(tc_valloc_adapter, mt_os_page_size(), size);
}

void *mt_tc_pvalloc(size_t size)
{
    if (!mt_ext_get(MT_X_TC_PVALLOC) || mt_cfg.redzone) /* (mt_pvalloc's record size) */
        return mt_pvalloc(size);
    return mt_aligned_next(tc_pvalloc_adapter, mt_os_page_size(), size);
}
