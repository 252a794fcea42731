/* The hot path: every allocation and free of the program comes through here.
 *
 * Contract: the program sees the real allocator's results unchanged (same
 * pointers, same errno); memtrace only adds records. A thread already inside
 * memtrace (mt_busy set: unwinding, interning, symbolizing) gets its
 * allocations from the internal heap, untraced, so nothing recurses and no
 * allocator lock is taken from inside memtrace. The same holds before the real
 * allocator has been looked up (dlsym itself calls calloc).
 *
 * Layering: this file and the headers it includes are the hot path and the
 * stores below it; none of them includes a slow-path header (tests/static/layers.py
 * checks). Start-up, fork handling and the stop-recording policy are in
 * runtime/startup.c, reached through base/upcalls.h. */
#include "capture/tracer.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/config.h"
#include "base/os.h"
#include "base/output.h"
#include "base/reentry.h"
#include "base/upcalls.h"
#include "capture/capture.h"
#include "capture/real.h"
#include "store/freed_history.h"
#include "store/internal_heap.h"
#include "store/live_table.h"
#include "store/site.h"
#include "store/stack_store.h"
#include "store/threads.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

mt_real_allocator mt_real;
mt_atomic(int) mt_phase = MT_UNINIT;
MT_TLS int mt_passthrough;
MT_TLS int mt_fork_window;
MT_TLS unsigned mt_passthrough_allocs;
mt_atomic(void *) mt_ext[MT_EXT_COUNT];
mt_atomic(int) mt_ext_ready;
/* The allocation counter has its cache line to itself: every traced
 * allocation of every thread adds to it, and a neighbour read on every call
 * (mt_cfg was one) would otherwise miss in the other threads' caches each
 * time. A one-member aligned struct owns its whole line wherever the linker
 * puts it; mt_next_seq names its member for the rest of memtrace. */
static struct {
    mt_atomic(uint64_t) next;
} __attribute__((aligned(MT_CACHELINE))) seq_line = { 1 };
extern mt_atomic(uint64_t) mt_next_seq __attribute__((alias("seq_line")));

const mt_atomic(uint64_t) *mt_seq_counter(void)
{
    return &mt_next_seq;
}

mt_atomic(uint64_t) mt_untraced_seq;

/* The real allocator handed out or took back a block untraced in a fork
 * window (see mt_untraced_seq). Only the window matters: no record
 * precedes the phase READY, none is consulted after it, and the calls a
 * pass-through scope sends on untraced inside an entry point are recorded
 * or forgotten by that entry point. Called after the real allocator
 * returned, before the program gets the block. */
static MT_COLD MT_NOINLINE void note_untraced(void)
{
    if (mt_atomic_load_relaxed(&mt_phase) != MT_READY)
        return;
    uint64_t now = mt_atomic_load_relaxed(&mt_next_seq) - 1;
    uint64_t seen = mt_atomic_load_relaxed(&mt_untraced_seq);
    while (seen < now && !mt_atomic_cas_acq_rel(&mt_untraced_seq, &seen, now)) {
    }
}

/* A block the real allocator handed out untraced outside any scope or
 * window: the call bypassed tracing because the phase was not READY
 * (recording off, or start-up). If recording came on meanwhile
 * (recording.c moved mt_untraced_seq before making the phase READY), a
 * freed record at its address may already have been pushed after that
 * mark: move it again, so that the block's free is not taken for a double
 * free. */
static MT_COLD MT_NOINLINE void untraced_outside(void)
{
    if (mt_atomic_load_acquire(&mt_phase) == MT_READY)
        note_untraced();
}

/* P, from the real allocator, goes unrecorded: noted in a fork window,
 * counted in a pass-through scope (mt_passthrough_end). */
static inline void *untraced(void *p)
{
    if (MT_UNLIKELY(mt_fork_window) && p)
        note_untraced();
    else if (mt_passthrough && p)
        mt_passthrough_allocs++;
    else if (p)
        untraced_outside();
    return p;
}

/* The same for a block an entry point returns without recording it (the
 * call bypassed tracing): not counted again, since when a pass-through
 * scope is what bypassed it, the real allocator's own untraced() below
 * already counted it, if it came from there. */
static inline void *untraced_entry(void *p)
{
    if (MT_UNLIKELY(mt_fork_window) && p)
        note_untraced();
    else if (p && !mt_passthrough && !mt_busy)
        untraced_outside();
    return p;
}

void mt_passthrough_end(mt_passthrough_scope_t *scope)
{
    mt_passthrough--;
    if (MT_UNLIKELY(mt_passthrough_allocs - scope->allocs > scope->keeps))
        note_untraced();
    if (!mt_passthrough)
        mt_passthrough_allocs = 0;
}

/* A block goes back to the real allocator without its record leaving:
 * noted in a fork window (the record, if any, is stale from now on). */
static inline void untraced_free(void)
{
    if (MT_UNLIKELY(mt_fork_window))
        note_untraced();
}

/* True when this call must bypass tracing (and, if the real allocator is
 * not known yet, the real allocator too). */
static inline int bypass(void)
{
    if (MT_LIKELY(mt_atomic_load_acquire(&mt_phase) == MT_READY))
        return mt_busy | mt_passthrough;
    if (!mt_busy && mt_atomic_load_acquire(&mt_phase) == MT_UNINIT)
        mt_start();
    return mt_busy || mt_passthrough || mt_atomic_load_acquire(&mt_phase) != MT_READY;
}

static inline mt_stack_id capture_stack(void)
{
    uintptr_t frames[MT_MAX_DEPTH];
    unsigned depth = mt_capture(frames, mt_cfg.depth);
    return mt_stack_intern(frames, depth);
}

/* Records a new block, allocated as KIND says (MT_KIND_*). Never fails the
 * allocation: when the tables cannot grow the block just goes unrecorded. */
static MT_NOINLINE void record(void *p, size_t size, unsigned kind)
{
    MT_ASSERT(!mt_busy); /* bypass() sent the thread's own calls elsewhere */
    mt_busy = 1;
    mt_live_entry e = {
        .ptr = (uintptr_t)p,
        .size = size,
        .seq = mt_atomic_add_relaxed(&mt_next_seq, 1),
        .stack = capture_stack(),
        .thread = mt_entry_thread_word(mt_thread_number(), kind),
    };
    if (mt_live_insert(&e)) /* a block not recorded must not count as live */
        mt_site_new_block(e.stack, size, e.seq);
    mt_busy = 0;
}

/* The block E was freed (or moved away by realloc) by this thread: it
 * leaves the site totals, and enters the freed history when recording,
 * unless this thread is already inside memtrace (a free from libunwind or
 * dlinfo must not unwind again from there). GONE_NOTED: mt_site_note_gone
 * was called for it already (a realloc that moved it, before the new block
 * became the thread's latest allocation). */
static MT_NOINLINE void note_freed(const mt_live_entry *e, bool gone_noted)
{
    if (gone_noted)
        mt_site_free(e->stack, e->size);
    else
        mt_site_end_block(e->stack, e->size, e->seq);
    if (mt_busy || mt_atomic_load_relaxed(&mt_phase) != MT_READY || !mt_freed_enabled())
        return;
    mt_busy = 1;
    mt_freed_record r = {
        .ptr = e->ptr,
        .size = e->size,
        .alloc_seq = e->seq,
        .free_seq = mt_atomic_load_relaxed(&mt_next_seq) - 1,
        .alloc_stack = e->stack,
        .free_stack = capture_stack(),
        .alloc_thread = mt_entry_thread(e),
        .free_thread = mt_thread_number(),
    };
    mt_freed_push(&r);
    mt_busy = 0;
}

/* P is being freed by a function of family KIND (MT_KIND_*): its record
 * leaves the table. A free the table cannot match (P is no live block's
 * start, or the block is of another family) goes to mt_bad_free first. */
static inline void forget(void *p, unsigned kind)
{
    mt_live_entry e;
    if (MT_LIKELY(mt_live_remove((uintptr_t)p, &e))) {
        if (MT_UNLIKELY(mt_entry_kind(&e) != kind) && !mt_busy)
            mt_bad_free(p, kind, &e);
        note_freed(&e, false);
    } else if (!mt_busy && mt_atomic_load_relaxed(&mt_phase) == MT_READY) {
        mt_bad_free(p, kind, NULL);
    }
}

void *mt_malloc(size_t size)
{
    if (MT_UNLIKELY(bypass()))
        return mt_real.malloc && !mt_busy ? untraced(mt_real.malloc(size)) : mt_iheap_alloc(size, 16);
    void *p = mt_real.malloc(size);
    if (MT_LIKELY(p != NULL))
        record(p, size, MT_KIND_MALLOC);
    return p;
}

void mt_free(void *ptr)
{
    if (MT_UNLIKELY(ptr == NULL))
        return;
    if (MT_UNLIKELY(mt_iheap_owns(ptr))) {
        mt_iheap_free(ptr);
        return;
    }
    if (MT_LIKELY(mt_atomic_load_acquire(&mt_phase) >= MT_READY && !mt_passthrough)) {
        /* Before the real free: once freed, the address can be handed to
         * another thread, whose new record must not be the one removed. */
        forget(ptr, MT_KIND_MALLOC);
        mt_real.free(ptr);
    } else if (mt_real.free) {
        /* Made by the real allocator while another thread initialised, or
         * freed in a fork window: its record, if any, stays behind, stale. */
        mt_real.free(ptr);
        untraced_free();
    }
}

void *mt_calloc(size_t n, size_t size)
{
    size_t total;
    if (MT_UNLIKELY(__builtin_mul_overflow(n, size, &total))) {
        errno = ENOMEM;
        return NULL;
    }
    if (MT_UNLIKELY(bypass())) {
        if (mt_real.calloc && !mt_busy)
            return untraced(mt_real.calloc(n, size));
        void *p = mt_iheap_alloc(total, 16);
        if (p)
            memset(p, 0, total);
        return p;
    }
    void *p = mt_real.calloc(n, size);
    if (MT_LIKELY(p != NULL))
        record(p, total, MT_KIND_MALLOC);
    return p;
}

/* realloc of a block of the internal heap outside memtrace: the program got
 * it during bootstrap; move it to the real allocator. */
static MT_COLD void *realloc_from_iheap(void *ptr, size_t size)
{
    if (bypass())
        return mt_iheap_realloc(ptr, size);
    void *q = mt_malloc(size);
    if (q) {
        size_t old = mt_iheap_usable(ptr);
        memcpy(q, ptr, old < size ? old : size);
        mt_iheap_free(ptr);
    }
    return q;
}

/* The records around a resize: OLD (if HAD) was removed before the real
 * call, whose result is Q. The new block is recorded; the old one leaves
 * (moved, or freed by a size of 0 when ZERO_FREES) or, if the call failed,
 * comes back (the old block is then intact). */
static void resized(void *ptr, bool had, const mt_live_entry *old, void *q, size_t size,
                    bool zero_frees)
{
    /* The old block goes before the new one becomes the thread's latest
     * allocation (a realloc(p, 0) that freed it: in note_freed). */
    if (had && q == ptr) { /* resized in place: the old size leaves the */
        mt_site_note_gone(old->stack, old->seq);
        mt_site_free(old->stack, old->size); /* totals before the new one enters */
    } else if (had && q != NULL) {
        mt_site_note_gone(old->stack, old->seq);
    }
    if (q != NULL)
        record(q, size, MT_KIND_MALLOC);
    if (had && (q != NULL || (zero_frees && size == 0))) {
        if (q != ptr)
            note_freed(old, q != NULL); /* moved, or realloc(p, 0) freed it */
    } else if (had) {
        mt_live_insert(old); /* failed: the old block is intact */
    }
}

/* realloc through FN: glibc's, or another allocator's with realloc's
 * contract (tc_realloc). */
static inline void *realloc_with(void *(*fn)(void *, size_t), void *ptr, size_t size)
{
    if (ptr == NULL)
        return mt_malloc(size);
    if (MT_UNLIKELY(mt_iheap_owns(ptr)))
        return realloc_from_iheap(ptr, size);
    if (MT_UNLIKELY(bypass())) {
        if (!mt_busy && !mt_passthrough && mt_atomic_load_acquire(&mt_phase) >= MT_PAUSED)
            forget(ptr, MT_KIND_MALLOC);
        return fn ? untraced(fn(ptr, size)) : NULL;
    }
    /* The old record goes first, for the same reason as in mt_free. */
    mt_live_entry old;
    bool had = mt_live_remove((uintptr_t)ptr, &old);
    MT_ASSERT(!had || old.ptr == (uintptr_t)ptr);
    if (MT_UNLIKELY(!had || mt_entry_kind(&old) != MT_KIND_MALLOC))
        mt_bad_free(ptr, MT_KIND_MALLOC | MT_FREE_BY_REALLOC, had ? &old : NULL);
    void *q = fn(ptr, size);
    resized(ptr, had, &old, q, size, true);
    return q;
}

void *mt_realloc(void *ptr, size_t size)
{
    return realloc_with(mt_real.realloc, ptr, size);
}

void *mt_reallocarray(void *ptr, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return mt_realloc(ptr, total);
}

static inline int valid_alignment(size_t align)
{
    return align != 0 && (align & (align - 1)) == 0;
}

static inline int posix_memalign_with(int (*fn)(void **, size_t, size_t), void **out,
                                      size_t align, size_t size)
{
    if (MT_UNLIKELY(bypass())) {
        if (fn && !mt_busy) {
            int rc = fn(out, align, size);
            if (rc == 0)
                untraced(*out);
            return rc;
        }
        if (!valid_alignment(align) || align % sizeof(void *) != 0)
            return EINVAL;
        void *p = mt_iheap_alloc(size, align);
        if (!p)
            return ENOMEM;
        *out = p;
        return 0;
    }
    int rc = fn(out, align, size);
    if (rc == 0)
        record(*out, size, MT_KIND_MALLOC);
    return rc;
}

int mt_posix_memalign(void **out, size_t align, size_t size)
{
    return posix_memalign_with(mt_real.posix_memalign, out, align, size);
}

/* The aligned entry points that return the block: each forwards to its own
 * real function when it exists (they differ in what they accept), else to
 * posix_memalign with the alignment they imply. */
static void *aligned_common(void *(*fn)(size_t, size_t), size_t align, size_t size)
{
    bool traced = !bypass();
    if (MT_UNLIKELY(!traced && (mt_busy || !mt_real.posix_memalign))) {
        if (!valid_alignment(align)) {
            errno = EINVAL;
            return NULL;
        }
        return mt_iheap_alloc(size, align);
    }
    void *p;
    if (fn) {
        p = fn(align, size);
    } else {
        int rc = mt_real.posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size);
        if (rc != 0) {
            errno = rc;
            p = NULL;
        }
    }
    if (p && traced)
        record(p, size, MT_KIND_MALLOC);
    else
        untraced(p);
    return p;
}

void *mt_aligned_alloc(size_t align, size_t size)
{
    return aligned_common(mt_real.aligned_alloc, align, size);
}

void *mt_memalign(size_t align, size_t size)
{
    return aligned_common(mt_real.memalign, align, size);
}

static void *valloc_adapter(size_t align, size_t size)
{
    (void)align;
    return mt_real.valloc(size);
}

static void *pvalloc_adapter(size_t align, size_t size)
{
    (void)align;
    return mt_real.pvalloc(size);
}

void *mt_valloc(size_t size)
{
    size_t page = mt_os_page_size();
    return aligned_common(mt_real.valloc ? valloc_adapter : NULL, page, size);
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
    return aligned_common(mt_real.pvalloc ? pvalloc_adapter : NULL, page,
                          mt_real.pvalloc ? size : rounded);
}

size_t mt_malloc_usable_size(void *ptr)
{
    if (ptr == NULL)
        return 0;
    if (mt_iheap_owns(ptr))
        return mt_iheap_usable(ptr);
    if (!mt_real.malloc_usable_size)
        mt_start();
    return mt_real.malloc_usable_size ? mt_real.malloc_usable_size(ptr) : 0;
}

/* ------------------------------------------------------------------------
 * Entry points beyond the C allocator's: the C++ operators, jemalloc's and
 * tcmalloc's extended APIs, C23's sized frees. Each forwards to its next
 * definition (mt_ext) with the pass-through depth raised, so that whatever
 * that calls (libstdc++'s operator new calls malloc) goes to the real
 * allocator untraced, and records or forgets the block once, here. A name
 * that no object after memtrace defines is emulated on the real malloc
 * family (README: "Entry points"), since the program may have found
 * memtrace's definition by probing for it. */

static inline void *ext(unsigned i)
{
    if (MT_UNLIKELY(!mt_atomic_load_acquire(&mt_ext_ready))) /* pairs with mt_ext_lookup's release */
        mt_ext_lookup();
    return mt_atomic_load_relaxed(&mt_ext[i]);
}

/* True when a free of PTR is finished here (NULL, or a block of the
 * internal heap); else PTR's record, if any, is gone and the caller hands
 * PTR to the real function. */
static inline bool free_handled(void *ptr, unsigned kind)
{
    if (MT_UNLIKELY(ptr == NULL))
        return true;
    if (MT_UNLIKELY(mt_iheap_owns(ptr))) {
        mt_iheap_free(ptr);
        return true;
    }
    if (MT_LIKELY(mt_atomic_load_acquire(&mt_phase) >= MT_READY && !mt_passthrough))
        forget(ptr, kind);
    else
        untraced_free();
    return false;
}

/* What an entry point returns: P, from its next definition, recorded with
 * SIZE and KIND when the call was TRACED, else passed on untraced. */
static inline void *entry_result(void *p, size_t size, unsigned kind, bool traced)
{
    if (p && traced)
        record(p, size, kind);
    else
        untraced_entry(p);
    return p;
}

/* A block the next function FN allocated: recorded with KIND unless this
 * call bypasses tracing. */
static inline void *alloc_next(void *(*fn)(size_t), size_t size, unsigned kind)
{
    bool traced = !bypass();
    void *p;
    {
        MT_PASSTHROUGH_SCOPE;
        p = fn(size);
        MT_PASSTHROUGH_KEEPS(p);
    }
    return entry_result(p, size, kind, traced);
}

/* ---- operator new and delete */

static MT_COLD MT_NOINLINE void new_failed_without_runtime(size_t size)
{
    mt_warn("operator new(%zu) failed, and no C++ runtime after memtrace defines operator new "
            "to throw std::bad_alloc: aborting",
            size);
    abort();
}

/* operator new when no object after memtrace defines the form: on the real
 * malloc family (the internal heap inside memtrace), as libstdc++'s does,
 * except that failure cannot throw std::bad_alloc without a C++ runtime:
 * the nothrow forms return NULL, the others abort with a word. */
static MT_COLD void *emulated_new(size_t size, size_t align, unsigned form)
{
    if (size == 0)
        size = 1;
    if (!(form & MT_FORM_ALIGNED) || align < sizeof(void *))
        align = sizeof(void *);
    void *p = NULL;
    if (mt_busy || !mt_real.malloc || !mt_real.posix_memalign)
        p = mt_iheap_alloc(size, align < 16 ? 16 : align);
    else if ((form & MT_FORM_ALIGNED) && mt_real.posix_memalign(&p, align, size) != 0)
        p = NULL;
    else if (!(form & MT_FORM_ALIGNED))
        p = mt_real.malloc(size);
    if (!p && !(form & MT_FORM_NOTHROW))
        new_failed_without_runtime(size);
    return p;
}

typedef void *(*new_fn)(size_t);
typedef void *(*new_nt_fn)(size_t, const void *);
typedef void *(*new_al_fn)(size_t, size_t);
typedef void *(*new_al_nt_fn)(size_t, size_t, const void *);

void *mt_new(size_t size, size_t align, const void *nothrow, unsigned op)
{
    bool traced = !bypass();
    void *fn = ext(MT_OP_FN(op));
    unsigned form = MT_OP_FORM(op);
    void *p;
    if (MT_LIKELY(fn != NULL)) {
        MT_PASSTHROUGH_SCOPE; /* also when the real one throws */
        switch (form & (MT_FORM_NOTHROW | MT_FORM_ALIGNED)) {
        case 0: p = ((new_fn)fn)(size); break;
        case MT_FORM_NOTHROW: p = ((new_nt_fn)fn)(size, nothrow); break;
        case MT_FORM_ALIGNED: p = ((new_al_fn)fn)(size, align); break;
        default: p = ((new_al_nt_fn)fn)(size, align, nothrow); break;
        }
        MT_PASSTHROUGH_KEEPS(p);
    } else {
        p = emulated_new(size, align, form);
    }
    return entry_result(p, size, MT_OP_KIND(op), traced);
}

typedef void (*del_fn)(void *);
typedef void (*del_sz_fn)(void *, size_t);
typedef void (*del_sz_al_fn)(void *, size_t, size_t);
typedef void (*del_nt_fn)(void *, const void *);
typedef void (*del_al_nt_fn)(void *, size_t, const void *);

void mt_delete(void *ptr, size_t size, size_t align, const void *nothrow, unsigned op)
{
    if (free_handled(ptr, MT_OP_KIND(op)))
        return;
    void *fn = ext(MT_OP_FN(op));
    if (MT_UNLIKELY(fn == NULL)) { /* emulated_new's block */
        if (mt_real.free)
            mt_real.free(ptr);
        return;
    }
    MT_PASSTHROUGH_SCOPE;
    switch (MT_OP_FORM(op)) {
    case 0: ((del_fn)fn)(ptr); break;
    case MT_FORM_SIZED: ((del_sz_fn)fn)(ptr, size); break;
    case MT_FORM_ALIGNED: ((del_sz_fn)fn)(ptr, align); break;
    case MT_FORM_SIZED | MT_FORM_ALIGNED: ((del_sz_al_fn)fn)(ptr, size, align); break;
    case MT_FORM_NOTHROW: ((del_nt_fn)fn)(ptr, nothrow); break;
    default: ((del_al_nt_fn)fn)(ptr, align, nothrow); break;
    }
}

/* ---- jemalloc's extended API: flags as in jemalloc.h */
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
    void *(*fn)(size_t, int) = (void *(*)(size_t, int))ext(MT_X_MALLOCX);
    if (MT_UNLIKELY(fn == NULL))
        return emulated_mallocx(size, flags);
    bool traced = !bypass();
    void *p;
    {
        MT_PASSTHROUGH_SCOPE;
        p = fn(size, flags);
        MT_PASSTHROUGH_KEEPS(p);
    }
    return entry_result(p, size, MT_KIND_MALLOC, traced);
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
    void *(*fn)(void *, size_t, int) = (void *(*)(void *, size_t, int))ext(MT_X_RALLOCX);
    if (MT_UNLIKELY(fn == NULL || mt_iheap_owns(ptr))) /* jemalloc never saw an */
        return emulated_rallocx(ptr, size, flags);        /* internal heap block */
    if (MT_UNLIKELY(bypass())) {
        if (!mt_busy && !mt_passthrough && mt_atomic_load_acquire(&mt_phase) >= MT_PAUSED)
            forget(ptr, MT_KIND_MALLOC); /* as realloc: no stale record */
        void *q;
        {
            MT_PASSTHROUGH_SCOPE;
            q = fn(ptr, size, flags);
        }
        return untraced_entry(q);
    }
    mt_live_entry old;
    bool had = mt_live_remove((uintptr_t)ptr, &old);
    void *q;
    {
        MT_PASSTHROUGH_SCOPE;
        q = fn(ptr, size, flags);
        MT_PASSTHROUGH_KEEPS(q);
    }
    resized(ptr, had, &old, q, size, false); /* rallocx never frees */
    return q;
}

/* xallocx resized PTR in place to REAL bytes, asked for SIZE (+ EXTRA if
 * it could): on success (REAL >= SIZE) the record keeps its stack and
 * number and takes the size the program may now use. */
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
    e.size = real < want ? real : want;
    if (mt_live_insert(&e))
        mt_site_alloc(e.stack, e.size);
}

size_t mt_xallocx(void *ptr, size_t size, size_t extra, int flags)
{
    size_t (*fn)(void *, size_t, size_t, int) =
        (size_t (*)(void *, size_t, size_t, int))ext(MT_X_XALLOCX);
    size_t real;
    if (fn && !mt_iheap_owns(ptr)) {
        MT_PASSTHROUGH_SCOPE;
        real = fn(ptr, size, extra, flags);
    } else {
        real = mt_malloc_usable_size(ptr); /* cannot resize: the size it has */
    }
    resized_in_place(ptr, size, extra, real);
    return real;
}

size_t mt_sallocx(const void *ptr, int flags)
{
    size_t (*fn)(const void *, int) = (size_t (*)(const void *, int))ext(MT_X_SALLOCX);
    return fn && !mt_iheap_owns(ptr) ? fn(ptr, flags) : mt_malloc_usable_size((void *)ptr);
}

size_t mt_nallocx(size_t size, int flags)
{
    size_t (*fn)(size_t, int) = (size_t (*)(size_t, int))ext(MT_X_NALLOCX);
    if (fn)
        return fn(size, flags);
    /* mallocx(SIZE) gives at least SIZE usable bytes; 0 where it would fail */
    return size > PTRDIFF_MAX ? 0 : size;
}

void mt_dallocx(void *ptr, int flags)
{
    void (*fn)(void *, int) = (void (*)(void *, int))ext(MT_X_DALLOCX);
    if (MT_UNLIKELY(fn == NULL)) {
        mt_free(ptr);
        return;
    }
    if (free_handled(ptr, MT_KIND_MALLOC))
        return;
    MT_PASSTHROUGH_SCOPE;
    fn(ptr, flags);
}

void mt_sdallocx(void *ptr, size_t size, int flags)
{
    void (*fn)(void *, size_t, int) = (void (*)(void *, size_t, int))ext(MT_X_SDALLOCX);
    if (MT_UNLIKELY(fn == NULL)) {
        mt_free(ptr);
        return;
    }
    if (free_handled(ptr, MT_KIND_MALLOC))
        return;
    MT_PASSTHROUGH_SCOPE;
    fn(ptr, size, flags);
}

/* ---- C23's sized frees, and tcmalloc's one-argument-more frees */

/* A free by the next FN taking PTR and one or two words more (free_sized,
 * free_aligned_sized, tc_free_sized...), or by free when there is none. */
static void free_next(unsigned i, void *ptr, size_t a, size_t b, int args)
{
    void *fn = ext(i);
    if (fn == NULL) {
        mt_free(ptr);
        return;
    }
    if (free_handled(ptr, MT_KIND_MALLOC))
        return;
    MT_PASSTHROUGH_SCOPE;
    switch (args) {
    case 0: ((del_fn)fn)(ptr); break;
    case 1: ((del_sz_fn)fn)(ptr, a); break;
    default: ((del_sz_al_fn)fn)(ptr, a, b); break;
    }
}

void mt_free_sized(void *ptr, size_t size)
{
    free_next(MT_X_FREE_SIZED, ptr, size, 0, 1);
}

void mt_free_aligned_sized(void *ptr, size_t align, size_t size)
{
    free_next(MT_X_FREE_ALIGNED_SIZED, ptr, align, size, 2);
}

/* ---- tcmalloc's tc_* C functions: each has its libc namesake's contract */

void *mt_tc_malloc(size_t size)
{
    void *(*fn)(size_t) = (void *(*)(size_t))ext(MT_X_TC_MALLOC);
    return fn ? alloc_next(fn, size, MT_KIND_MALLOC) : mt_malloc(size);
}

void mt_tc_free(void *ptr)
{
    free_next(MT_X_TC_FREE, ptr, 0, 0, 0);
}

void mt_tc_cfree(void *ptr)
{
    free_next(MT_X_TC_CFREE, ptr, 0, 0, 0);
}

void mt_tc_free_sized(void *ptr, size_t size)
{
    free_next(MT_X_TC_FREE_SIZED, ptr, size, 0, 1);
}

void *mt_tc_calloc(size_t n, size_t size)
{
    void *(*fn)(size_t, size_t) = (void *(*)(size_t, size_t))ext(MT_X_TC_CALLOC);
    size_t total;
    if (!fn || __builtin_mul_overflow(n, size, &total))
        return mt_calloc(n, size); /* says ENOMEM on overflow */
    bool traced = !bypass();
    void *p;
    {
        MT_PASSTHROUGH_SCOPE;
        p = fn(n, size);
        MT_PASSTHROUGH_KEEPS(p);
    }
    return entry_result(p, total, MT_KIND_MALLOC, traced);
}

void *mt_tc_realloc(void *ptr, size_t size)
{
    void *(*fn)(void *, size_t) = (void *(*)(void *, size_t))ext(MT_X_TC_REALLOC);
    return realloc_with(fn ? fn : mt_real.realloc, ptr, size);
}

void *mt_tc_memalign(size_t align, size_t size)
{
    void *(*fn)(size_t, size_t) = (void *(*)(size_t, size_t))ext(MT_X_TC_MEMALIGN);
    return aligned_common(fn ? fn : mt_real.memalign, align, size);
}

int mt_tc_posix_memalign(void **out, size_t align, size_t size)
{
    int (*fn)(void **, size_t, size_t) = (int (*)(void **, size_t, size_t))ext(MT_X_TC_POSIX_MEMALIGN);
    return posix_memalign_with(fn ? fn : mt_real.posix_memalign, out, align, size);
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
    if (!ext(MT_X_TC_VALLOC))
        return mt_valloc(size);
    return aligned_common(tc_valloc_adapter, mt_os_page_size(), size);
}

void *mt_tc_pvalloc(size_t size)
{
    if (!ext(MT_X_TC_PVALLOC))
        return mt_pvalloc(size);
    return aligned_common(tc_pvalloc_adapter, mt_os_page_size(), size);
}
