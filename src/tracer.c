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
 * startup.c, reached through real.h. */
#include "tracer.h"

#include "atomic.h"
#include "capture.h"
#include "common.h"
#include "config.h"
#include "freed_history.h"
#include "internal_heap.h"
#include "live_table.h"
#include "os.h"
#include "real.h"
#include "reentry.h"
#include "site.h"
#include "stack_store.h"
#include "threads.h"

#include <errno.h>
#include <string.h>

mt_real_allocator mt_real;
mt_atomic(int) mt_phase = MT_UNINIT;
MT_TLS int mt_busy;
MT_TLS int mt_forking;
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

/* The real allocator handed out or took back a block untraced (see
 * mt_untraced_seq): only a fork window while recording matters, as no
 * record precedes the phase READY and none is consulted after it. Called
 * after the real allocator returned, before the program gets the block. */
static MT_COLD MT_NOINLINE void note_untraced(void)
{
    if (mt_atomic_load_relaxed(&mt_phase) != MT_READY)
        return;
    uint64_t now = mt_atomic_load_relaxed(&mt_next_seq) - 1;
    uint64_t seen = mt_atomic_load_relaxed(&mt_untraced_seq);
    while (seen < now && !mt_atomic_cas_acq_rel(&mt_untraced_seq, &seen, now)) {
    }
}

/* A result of the real allocator that goes untraced: notes it if not NULL. */
static inline void *untraced(void *p)
{
    if (p)
        note_untraced();
    return p;
}

/* True when this call must bypass tracing (and, if the real allocator is
 * not known yet, the real allocator too). */
static inline int bypass(void)
{
    if (MT_LIKELY(mt_atomic_load_acquire(&mt_phase) == MT_READY))
        return mt_busy | mt_forking;
    if (!mt_busy && mt_atomic_load_acquire(&mt_phase) == MT_UNINIT)
        mt_start();
    return mt_busy || mt_forking || mt_atomic_load_acquire(&mt_phase) != MT_READY;
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
        mt_site_alloc(e.stack, size);
    mt_busy = 0;
}

/* The block E was freed (or moved away by realloc) by this thread: it
 * leaves the site totals, and enters the freed history when recording,
 * unless this thread is already inside memtrace (a free from libunwind or
 * dlinfo must not unwind again from there). */
static MT_NOINLINE void note_freed(const mt_live_entry *e)
{
    mt_site_free(e->stack, e->size);
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
        note_freed(&e);
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
    if (MT_LIKELY(mt_atomic_load_acquire(&mt_phase) >= MT_READY && !mt_forking)) {
        /* Before the real free: once freed, the address can be handed to
         * another thread, whose new record must not be the one removed. */
        forget(ptr, MT_KIND_MALLOC);
        mt_real.free(ptr);
    } else if (mt_real.free) {
        /* Made by the real allocator while another thread initialised, or
         * freed in a fork window: its record, if any, stays behind, stale. */
        mt_real.free(ptr);
        note_untraced();
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

void *mt_realloc(void *ptr, size_t size)
{
    if (ptr == NULL)
        return mt_malloc(size);
    if (MT_UNLIKELY(mt_iheap_owns(ptr)))
        return realloc_from_iheap(ptr, size);
    if (MT_UNLIKELY(bypass())) {
        if (!mt_busy && !mt_forking && mt_atomic_load_acquire(&mt_phase) == MT_STOPPED)
            forget(ptr, MT_KIND_MALLOC);
        return mt_real.realloc ? untraced(mt_real.realloc(ptr, size)) : NULL;
    }
    /* The old record goes first, for the same reason as in mt_free, and
     * comes back if the real realloc fails (the old block is then intact). */
    mt_live_entry old;
    bool had = mt_live_remove((uintptr_t)ptr, &old);
    MT_ASSERT(!had || old.ptr == (uintptr_t)ptr);
    if (MT_UNLIKELY(!had || mt_entry_kind(&old) != MT_KIND_MALLOC))
        mt_bad_free(ptr, MT_KIND_MALLOC | MT_FREE_BY_REALLOC, had ? &old : NULL);
    void *q = mt_real.realloc(ptr, size);
    if (had && q == ptr) /* resized in place: the old size leaves the */
        mt_site_free(old.stack, old.size); /* totals before the new one enters */
    if (q != NULL)
        record(q, size, MT_KIND_MALLOC);
    if (had && (q != NULL || size == 0)) {
        if (q != ptr)
            note_freed(&old); /* moved, or realloc(p, 0) freed it */
    } else if (had) {
        mt_live_insert(&old); /* failed: the old block is intact */
    }
    return q;
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

int mt_posix_memalign(void **out, size_t align, size_t size)
{
    if (MT_UNLIKELY(bypass())) {
        if (mt_real.posix_memalign && !mt_busy) {
            int rc = mt_real.posix_memalign(out, align, size);
            if (rc == 0)
                note_untraced();
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
    int rc = mt_real.posix_memalign(out, align, size);
    if (rc == 0)
        record(*out, size, MT_KIND_MALLOC);
    return rc;
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
    else if (p)
        note_untraced();
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
