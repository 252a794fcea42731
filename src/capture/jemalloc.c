/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* jemalloc's extended API (mallocx, rallocx, xallocx, sallocx, nallocx,
 * dallocx, sdallocx): each forwards to its next definition (mt_ext) in a
 * pass-through scope; without jemalloc below, emulated on the traced C
 * functions (README: "Entry points"). Flags as in jemalloc.h. */
#include "capture/entry_points.h"

#include "base/common.h"
#include "base/config.h"
#include "base/reentry.h"
#include "capture/record.h"
#include "capture/guard.h"
#include "capture/state.h"
#include "store/internal_heap.h"
#include "store/live_table.h"
#include "store/site.h"
#include "tags/tags.h"

#include <stdint.h>
#include <string.h>

#define MALLOCX_LG_ALIGN_MASK 0x3f
#define MALLOCX_ZERO 0x40

static size_t mallocx_align(int flags)
{
    unsigned lg = (unsigned)flags & MALLOCX_LG_ALIGN_MASK;
    return lg ? (size_t)1 << lg : 0;
}

/* mallocx without jemalloc: the traced C functions, with the alignment
 * and zero flags honoured (arena and tcache flags mean nothing here). */
static MT_COLD void *emulated_mallocx(size_t size, int flags)
{
    size_t align = mallocx_align(flags);
    void *p = NULL;
    if (align) {
        if (mt_posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size) != 0)
            p = NULL;
    } else {
        p = mt_malloc(size);
    }
    if (p && (flags & MALLOCX_ZERO))
        memset(p, 0, size);
    return p;
}

void *mt_mallocx(size_t size, int flags)
{
    void *(*fn)(size_t, int) = (void *(*)(size_t, int))mt_ext_get(MT_X_MALLOCX);
    if (MT_UNLIKELY(fn == NULL))
        return emulated_mallocx(size, flags);
    bool traced = !mt_bypass();
    void *p;
    MT_NEXT_ALLOC(MT_NEXT_SCOPED, traced, p, fn(mt_padded(size, traced), flags), size,
                  MT_KIND_MALLOC);
    return p;
}

/* rallocx without jemalloc: never frees (jemalloc's size 0 is undefined;
 * here it is 1), keeps PTR intact on failure, honours the flags. */
static MT_COLD void *emulated_rallocx(void *ptr, size_t size, int flags)
{
    size_t align = mallocx_align(flags);
    size_t old = mt_malloc_usable_size(ptr);
    if (size == 0)
        size = 1;
    void *q;
    if (align) { /* realloc may lose the alignment: a new block */
        q = emulated_mallocx(size, flags & ~MALLOCX_ZERO);
        if (!q)
            return NULL;
        memcpy(q, ptr, old < size ? old : size);
        mt_free(ptr);
    } else {
        q = mt_realloc(ptr, size);
        if (!q)
            return NULL;
    }
    size_t now = mt_malloc_usable_size(q);
    if ((flags & MALLOCX_ZERO) && now > old)
        memset((char *)q + old, 0, now - old);
    return q;
}

void *mt_rallocx(void *ptr, size_t size, int flags)
{
    void *(*fn)(void *, size_t, int) = (void *(*)(void *, size_t, int))mt_ext_get(MT_X_RALLOCX);
    /* jemalloc never saw a block of the internal heap or the guard pages */
    if (MT_UNLIKELY(fn == NULL || mt_iheap_owns(ptr) || mt_guard_owns(ptr)))
        return emulated_rallocx(ptr, size, flags);
    void *q;
    if (MT_UNLIKELY(mt_bypass())) {
        if (!mt_busy && !mt_passthrough && mt_atomic_load_acquire(&mt_phase) >= MT_PAUSED)
            mt_forget(ptr, MT_KIND_MALLOC); /* as realloc: no stale record */
        MT_NEXT_CALL(MT_NEXT_SCOPED, q = fn(ptr, size, flags), q != NULL);
        mt_untraced_entry(q);
        return q;
    }
    mt_sample_block b;
    if (MT_UNLIKELY(mt_cfg.sample) && mt_sample_unsampled(ptr, &b)) {
        /* as mt_sample_realloc; rallocx never frees, keeps PTR on failure */
        mt_sample_unmark(ptr, &b);
        MT_NEXT_CALL(MT_NEXT_SCOPED, q = fn(ptr, mt_padded(size, true), flags), q != NULL);
        if (q == NULL) {
            mt_sample_me.pending = MT_SAMPLE_NONE;
            mt_sample_remark(ptr, &b);
            return NULL;
        }
        mt_tag_free(b.id, b.size);
        mt_record_block(q, size, MT_KIND_MALLOC);
        return q;
    }
    mt_live_entry old;
    bool had = mt_live_remove((uintptr_t)ptr, &old);
    if (MT_UNLIKELY(!had) && mt_quarantine_on && !mt_unheld(ptr))
        return NULL; /* held in another thread's busy ring: jemalloc has it, live */
    if (had)
        mt_check_resized(&old, "rallocx");
    mt_resize_stamp(had, &old);
    MT_NEXT_CALL(MT_NEXT_SCOPED, q = fn(ptr, mt_padded(size, true), flags), q != NULL);
    mt_resized(ptr, had, &old, q, size, false); /* rallocx never frees */
    return q;
}

/* xallocx resized PTR in place to REAL bytes, asked for SIZE (+ EXTRA if
 * it could): on success (REAL >= SIZE) the record keeps its stack and
 * number and takes the size the program may now use. Without redzones. */
static void resized_in_place(void *ptr, size_t size, size_t extra, size_t real)
{
    if (real < size || mt_busy || mt_passthrough || mt_atomic_load_acquire(&mt_phase) < MT_READY)
        return;
    size_t want;
    if (__builtin_add_overflow(size, extra, &want))
        want = SIZE_MAX;
    mt_live_entry e;
    if (!mt_live_remove((uintptr_t)ptr, &e))
        return;
    mt_site_free(e.stack, e.size);
    size_t was = e.size;
    e.size = real < want ? real : want;
    mt_tag_resized(e.tag, was, e.size);
    if (mt_live_insert(&e))
        mt_site_alloc(e.stack, e.size);
    else
        mt_tag_free(e.tag, e.size);
}

/* xallocx through FN on a recorded block, whose record E has left the
 * table: asked for its redzone more, so that on success (REAL >= SIZE +
 * redzone) the record keeps its stack and number and takes the size the
 * program may now use, and its redzone moves there. Returns that size, or
 * the block's size, unchanged, when it could not grow. */
static size_t xallocx_recorded(size_t (*fn)(void *, size_t, size_t, int), void *ptr, size_t size,
                               size_t extra, int flags, mt_live_entry *e)
{
    size_t rz = mt_cfg.redzone, real;
    MT_NEXT_CALL(MT_NEXT_SCOPED, real = fn(ptr, mt_padded(size, true), extra, flags), false);
    size_t want;
    if (__builtin_add_overflow(size, extra, &want))
        want = SIZE_MAX;
    if (real >= size + rz && size <= PTRDIFF_MAX) {
        mt_site_free(e->stack, e->size);
        size_t was = e->size;
        e->size = real - rz < want ? real - rz : want;
        mt_tag_resized(e->tag, was, e->size);
        if (rz)
            memset((char *)ptr + e->size, MT_REDZONE_BYTE, rz);
        mt_site_alloc(e->stack, e->size);
    }
    if (!mt_live_insert(e)) {
        mt_site_free(e->stack, e->size);
        mt_tag_free(e->tag, e->size);
    }
    return e->size;
}

size_t mt_xallocx(void *ptr, size_t size, size_t extra, int flags)
{
    size_t (*fn)(void *, size_t, size_t, int) =
        (size_t(*)(void *, size_t, size_t, int))mt_ext_get(MT_X_XALLOCX);
    if (!fn || mt_iheap_owns(ptr) || mt_guard_owns(ptr)) {
        size_t real = mt_malloc_usable_size(ptr); /* cannot resize: the size it has */
        if (!mt_cfg.redzone)                      /* (with one, the record's size already) */
            resized_in_place(ptr, size, extra, real);
        return real;
    }
    /* Sample mode: a block's trailer sits at the end of its usable size,
     * which a resize in place would move; memtrace's blocks are not
     * resized in place (xallocx may always fail to), their size stays. */
    if (mt_cfg.sample)
        return mt_malloc_usable_size(ptr);
    mt_live_entry e;
    if (mt_cfg.redzone && !mt_busy && !mt_passthrough &&
        mt_atomic_load_acquire(&mt_phase) >= MT_READY && mt_live_remove((uintptr_t)ptr, &e)) {
        mt_check_resized(&e, "xallocx");
        return xallocx_recorded(fn, ptr, size, extra, flags, &e);
    }
    size_t real;
    MT_NEXT_CALL(MT_NEXT_SCOPED, real = fn(ptr, size, extra, flags), false);
    resized_in_place(ptr, size, extra, real);
    return real;
}

size_t mt_sallocx(const void *ptr, int flags)
{
    size_t (*fn)(const void *, int) = (size_t(*)(const void *, int))mt_ext_get(MT_X_SALLOCX);
    if (!fn || mt_iheap_owns(ptr) || mt_guard_owns(ptr))
        return mt_malloc_usable_size((void *)ptr);
    if (mt_cfg.sample) /* the trailer is not the program's either */
        return mt_malloc_usable_size((void *)ptr);
    mt_live_entry e;
    bool unlocked = false;
    if (mt_cfg.redzone && mt_live_find((uintptr_t)ptr, &e, &unlocked))
        return e.size; /* the redzone is not the program's (malloc_usable_size) */
    return fn(ptr, flags);
}

size_t mt_nallocx(size_t size, int flags)
{
    size_t (*fn)(size_t, int) = (size_t(*)(size_t, int))mt_ext_get(MT_X_NALLOCX);
    /* mallocx(SIZE) gives at least SIZE usable bytes, exactly SIZE with a
     * redzone after them; 0 where it would fail */
    if (fn && !mt_cfg.redzone && !mt_cfg.sample)
        return fn(size, flags);
    return size > PTRDIFF_MAX ? 0 : size;
}

void mt_dallocx(void *ptr, int flags)
{
    void (*fn)(void *, int) = (void (*)(void *, int))mt_ext_get(MT_X_DALLOCX);
    if (MT_UNLIKELY(fn == NULL))
        mt_free(ptr);
    else
        MT_NEXT_FREE(ptr, MT_KIND_MALLOC, true, MT_FREE_CALL(fn, MT_FC_PI, flags, 0));
}

void mt_sdallocx(void *ptr, size_t size, int flags)
{
    void (*fn)(void *, size_t, int) = (void (*)(void *, size_t, int))mt_ext_get(MT_X_SDALLOCX);
    if (MT_UNLIKELY(fn == NULL))
        mt_free(ptr);
    else
        MT_NEXT_FREE(ptr, MT_KIND_MALLOC, true,
                     MT_FREE_CALL(fn, MT_FC_PAI | MT_FC_SIZE_A, size, flags));
}
