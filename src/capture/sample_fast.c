/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sample mode's fast path (sample_fast.h): its cold side. */
#include "capture/sample_fast.h"

#include "capture/record.h"

#include <dlfcn.h>
#include <string.h>

bool mt_sample_cxx;

/* Whether FN is defined by libstdc++.so. */
static bool in_libstdcxx(void *fn)
{
    Dl_info info;
    return fn && dladdr(fn, &info) && info.dli_fname && strstr(info.dli_fname, "/libstdc++.so.");
}

void mt_sample_ext_found(void)
{
    static const unsigned forms[] = { MT_X_NEW,     MT_X_NEW_NT, MT_X_NEWA,   MT_X_NEWA_NT,
                                      MT_X_DEL,     MT_X_DEL_SZ, MT_X_DEL_NT, MT_X_DELA,
                                      MT_X_DELA_SZ, MT_X_DELA_NT };
    bool all = mt_sample_glibc && !mt_cxx_replaced;
    for (size_t i = 0; all && i < sizeof forms / sizeof forms[0]; i++)
        all = in_libstdcxx(mt_atomic_load_relaxed(&mt_ext[forms[i]]));
    mt_sample_cxx = all;
}

MT_COLD void *mt_fast_trail_call(void *p, size_t size, unsigned kind)
{
    if (MT_UNLIKELY(p == NULL))
        return p;
    /* mt_sample_usable's checks all pass for a block just handed out. */
    if (!mt_trailer_try(p, mt_sample_usable(p), size, kind)) {
        mt_sample_sampled(p, size);
        mt_record(p, size, kind);
    }
    return p;
}

MT_COLD void *mt_fast_shadow_call(void *p, size_t size, unsigned kind)
{
    if (MT_UNLIKELY(p == NULL))
        return p;
    if (!mt_shadow_put(p, size, kind)) {
        mt_sample_sampled(p, size);
        mt_record(p, size, kind);
    }
    return p;
}

void *mt_fast_malloc(size_t size)
{
    if (MT_LIKELY(mt_shadow_wanted(size)))
        return mt_fast_shadow(mt_real.next_malloc(size), size, MT_KIND_MALLOC);
    return mt_fast_trail(mt_real.next_malloc(size + MT_TRAILER), size, MT_KIND_MALLOC);
}

/* realloc's failure after mt_fast_realloc took PTR's mark (at AT, MARK) and
 * counted its OLD bytes freed: PTR is intact, unsampled still. */
static MT_COLD void *fast_realloc_failed(uint8_t *at, uint8_t mark, size_t old)
{
    mt_live_alloc(old);
    __atomic_store_n(at, mark, __ATOMIC_RELAXED);
    return NULL;
}

void *mt_fast_realloc(void *ptr, size_t size)
{
    uint8_t *at, mark;
    size_t old;
    if (!mt_shadow_read(ptr, &at, &old, &mark))
        return mt_realloc(ptr, size);
    /* mt_sample_padded's draw: SIZE is below the countdown (the ok test) */
    mt_sample_me.left -= (int64_t)size;
    /* Cleared first: once glibc has freed or moved PTR, its mark must not
     * stay behind to match a later block. Its bytes leave before the call
     * too, so that only the failure needs what PTR was after it. */
    __atomic_store_n(at, 0, __ATOMIC_RELAXED);
    mt_live_free(old);
    void *q = mt_real.next_realloc(ptr, size);
    if (MT_UNLIKELY(q == NULL))
        return fast_realloc_failed(at, mark, old);
    return mt_fast_shadow(q, size, MT_KIND_MALLOC);
}

void *mt_fast_calloc(size_t total)
{
    if (MT_LIKELY(mt_shadow_wanted(total)))
        return mt_fast_shadow(mt_real.next_calloc(1, total), total, MT_KIND_MALLOC);
    return mt_fast_trail(mt_real.next_calloc(1, total + MT_TRAILER), total, MT_KIND_MALLOC);
}
