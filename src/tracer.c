/* The hot path: every allocation and free of the program comes through here.
 *
 * Contract: the program sees the real allocator's results unchanged (same
 * pointers, same errno); memtrace only adds records. A thread already inside
 * memtrace (its `busy` flag set: unwinding, interning, symbolizing) gets its
 * allocations from the internal heap, untraced, so nothing recurses and no
 * allocator lock is taken from inside memtrace. The same holds before the real
 * allocator has been looked up (dlsym itself calls calloc). */
#include "tracer.h"

#include "capture.h"
#include "common.h"
#include "config.h"
#include "freed_history.h"
#include "internal_heap.h"
#include "os.h"
#include "live_table.h"
#include "lock.h"
#include "modules.h"
#include "profiler.h"
#include "report.h"
#include "site.h"
#include "stack_store.h"
#include "state.h"
#include "symbolize.h"
#include "threads.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

static struct {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*malloc_usable_size)(void *);
} real;

/* READY: recording. STOPPED: a metadata mapping failed; new blocks go
 * unrecorded, records of freed blocks are still removed. */
enum { UNINIT, INITIALIZING, READY, STOPPED };
static int state = UNINIT;

static MT_TLS int busy;
/* Set in the forking thread between our fork handlers: other libraries'
 * prepare handlers (run after ours) may allocate, and memtrace's locks are
 * held, so such calls go to the real allocator untraced. */
static MT_TLS int forking;
static MT_TLS uint32_t thread_number;
static uint32_t next_thread = 1;
static uint64_t next_seq = 1;

int mt_enter(void)
{
    int was = busy;
    busy = 1;
    return was;
}

void mt_leave(int previous)
{
    busy = previous;
}

uint32_t mt_thread_number(void)
{
    if (MT_UNLIKELY(thread_number == 0)) {
        thread_number = __atomic_fetch_add(&next_thread, 1, __ATOMIC_RELAXED);
        mt_threads_register(thread_number);
    }
    return thread_number;
}

const uint64_t *mt_seq_counter(void)
{
    return &next_seq;
}

void mt_metadata_failed(const char *what, size_t size, int err)
{
    if (__atomic_exchange_n(&state, STOPPED, __ATOMIC_ACQ_REL) == STOPPED)
        return;
    mt_warn("stopped recording at allocation #%lu: could not map %zu bytes for the %s (%s); "
            "the program runs on untraced",
            (unsigned long)__atomic_load_n(&next_seq, __ATOMIC_RELAXED), size, what,
            strerror(err));
}

int mt_recording_stopped(void)
{
    return __atomic_load_n(&state, __ATOMIC_ACQUIRE) == STOPPED;
}

/* The locks this thread's fork_prepare took. A fork from a signal handler
 * that interrupted memtrace in this thread skips the locks that code holds:
 * it releases them itself once the handler returns, in both processes. */
static MT_TLS struct {
    bool modules, iheap, stack;
    uint64_t shards;
} fork_took;

static void fork_prepare(void)
{
    fork_took.modules = mt_modules_lock();
    fork_took.iheap = mt_iheap_lock();
    fork_took.stack = mt_stack_lock();
    fork_took.shards = mt_live_lock_all();
    forking = 1;
}

static void fork_release(void)
{
    forking = 0;
    mt_live_unlock_all(fork_took.shards);
    if (fork_took.stack)
        mt_stack_unlock();
    if (fork_took.iheap)
        mt_iheap_unlock();
    if (fork_took.modules)
        mt_modules_unlock();
}

static void fork_child(void)
{
    bool took_all = fork_took.modules && fork_took.iheap && fork_took.stack &&
                    fork_took.shards == UINT64_MAX;
    fork_release();
    if (took_all) /* else the interrupted code's locks carry the old token */
        mt_lock_forget_token();
}

static void *next_symbol(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

/* Looks up the real allocator and sets everything up, once. Runs on the
 * first allocation of the process, before any thread but the main one
 * exists; a call from another thread meanwhile sees INITIALIZING and is
 * served by the internal heap. */
static MT_COLD void init(void)
{
    int expected = UNINIT;
    if (!__atomic_compare_exchange_n(&state, &expected, INITIALIZING, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return;
    int was = mt_enter();
    real.malloc = next_symbol("malloc");
    real.free = next_symbol("free");
    real.calloc = next_symbol("calloc");
    real.realloc = next_symbol("realloc");
    real.posix_memalign = next_symbol("posix_memalign");
    real.aligned_alloc = next_symbol("aligned_alloc");
    real.memalign = next_symbol("memalign");
    real.valloc = next_symbol("valloc");
    real.pvalloc = next_symbol("pvalloc");
    real.malloc_usable_size = next_symbol("malloc_usable_size");
    if (!real.malloc || !real.free || !real.calloc || !real.realloc ||
        !real.posix_memalign) {
        /* Without a real allocator there is nothing to forward to: stay in
         * INITIALIZING and serve everything from the internal heap. */
        mt_leave(was);
        return;
    }
    mt_config_load();
    mt_freed_init(mt_cfg.freed);
    mt_thread_number();
    mt_state_publish();
    mt_capture_init();
    mt_sym_set_unloaded_lookup(mt_modules_find_unloaded, mt_modules_generation);
    pthread_atfork(fork_prepare, fork_release, fork_child);
    mt_leave(was);
    expected = INITIALIZING; /* not if a mapping failed meanwhile */
    __atomic_compare_exchange_n(&state, &expected, READY, false, __ATOMIC_ACQ_REL,
                                __ATOMIC_RELAXED);
    mt_profiler_start();
}

__attribute__((constructor)) static void mt_constructor(void)
{
    if (state == UNINIT)
        init();
}

/* True when this call must bypass tracing (and, if the real allocator is
 * not known yet, the real allocator too). */
static inline int bypass(void)
{
    if (MT_LIKELY(__atomic_load_n(&state, __ATOMIC_ACQUIRE) == READY))
        return busy | forking;
    if (!busy && __atomic_load_n(&state, __ATOMIC_ACQUIRE) == UNINIT)
        init();
    return busy || forking || __atomic_load_n(&state, __ATOMIC_ACQUIRE) != READY;
}

static inline mt_stack_id capture_stack(void)
{
    uintptr_t frames[MT_MAX_DEPTH];
    unsigned depth = mt_capture(frames, mt_cfg.depth);
    return mt_stack_intern(frames, depth);
}

/* Records a new block. Never fails the allocation: when the tables cannot
 * grow the block just goes unrecorded. */
static MT_NOINLINE void record(void *p, size_t size)
{
    busy = 1;
    mt_live_entry e = {
        .ptr = (uintptr_t)p,
        .size = size,
        .seq = __atomic_fetch_add(&next_seq, 1, __ATOMIC_RELAXED),
        .stack = capture_stack(),
        .thread = mt_thread_number(),
    };
    if (mt_live_insert(&e)) /* a block not recorded must not count as live */
        mt_site_alloc(e.stack, size);
    busy = 0;
}

/* The block E was freed (or moved away by realloc) by this thread: it
 * leaves the site totals, and enters the freed history when recording,
 * unless this thread is already inside memtrace (a free from libunwind or
 * dlinfo must not unwind again from there). */
static MT_NOINLINE void retire(const mt_live_entry *e)
{
    mt_site_free(e->stack, e->size);
    if (busy || __atomic_load_n(&state, __ATOMIC_RELAXED) != READY || !mt_freed_enabled())
        return;
    busy = 1;
    mt_freed_record r = {
        .ptr = e->ptr,
        .size = e->size,
        .alloc_seq = e->seq,
        .free_seq = __atomic_load_n(&next_seq, __ATOMIC_RELAXED) - 1,
        .alloc_stack = e->stack,
        .free_stack = capture_stack(),
        .alloc_thread = e->thread,
        .free_thread = mt_thread_number(),
    };
    mt_freed_push(&r);
    busy = 0;
}

static inline void forget(void *p)
{
    mt_live_entry e;
    if (mt_live_remove((uintptr_t)p, &e))
        retire(&e);
}

void *mt_malloc(size_t size)
{
    if (MT_UNLIKELY(bypass()))
        return real.malloc && !busy ? real.malloc(size) : mt_iheap_alloc(size, 16);
    void *p = real.malloc(size);
    if (MT_LIKELY(p != NULL))
        record(p, size);
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
    if (MT_LIKELY(__atomic_load_n(&state, __ATOMIC_ACQUIRE) >= READY && !forking)) {
        /* Before the real free: once freed, the address can be handed to
         * another thread, whose new record must not be the one removed. */
        forget(ptr);
        real.free(ptr);
    } else if (real.free) {
        /* Made by the real allocator while another thread initialised. */
        real.free(ptr);
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
        if (real.calloc && !busy)
            return real.calloc(n, size);
        void *p = mt_iheap_alloc(total, 16);
        if (p)
            memset(p, 0, total);
        return p;
    }
    void *p = real.calloc(n, size);
    if (MT_LIKELY(p != NULL))
        record(p, total);
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
        if (!busy && !forking && __atomic_load_n(&state, __ATOMIC_ACQUIRE) == STOPPED)
            forget(ptr);
        return real.realloc ? real.realloc(ptr, size) : NULL;
    }
    /* The old record goes first, for the same reason as in mt_free, and
     * comes back if the real realloc fails (the old block is then intact). */
    mt_live_entry old;
    bool had = mt_live_remove((uintptr_t)ptr, &old);
    void *q = real.realloc(ptr, size);
    if (had && q == ptr) /* resized in place: the old size leaves the */
        mt_site_free(old.stack, old.size); /* totals before the new one enters */
    if (q != NULL)
        record(q, size);
    if (had && (q != NULL || size == 0)) {
        if (q != ptr)
            retire(&old); /* moved, or realloc(p, 0) freed it */
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
        if (real.posix_memalign && !busy)
            return real.posix_memalign(out, align, size);
        if (!valid_alignment(align) || align % sizeof(void *) != 0)
            return EINVAL;
        void *p = mt_iheap_alloc(size, align);
        if (!p)
            return ENOMEM;
        *out = p;
        return 0;
    }
    int rc = real.posix_memalign(out, align, size);
    if (rc == 0)
        record(*out, size);
    return rc;
}

/* The aligned entry points that return the block: each forwards to its own
 * real function when it exists (they differ in what they accept), else to
 * posix_memalign with the alignment they imply. */
static void *aligned_common(void *(*fn)(size_t, size_t), size_t align, size_t size)
{
    bool traced = !bypass();
    if (MT_UNLIKELY(!traced && (busy || !real.posix_memalign))) {
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
        int rc = real.posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size);
        if (rc != 0) {
            errno = rc;
            p = NULL;
        }
    }
    if (p && traced)
        record(p, size);
    return p;
}

void *mt_aligned_alloc(size_t align, size_t size)
{
    return aligned_common(real.aligned_alloc, align, size);
}

void *mt_memalign(size_t align, size_t size)
{
    return aligned_common(real.memalign, align, size);
}

static void *valloc_adapter(size_t align, size_t size)
{
    (void)align;
    return real.valloc(size);
}

static void *pvalloc_adapter(size_t align, size_t size)
{
    (void)align;
    return real.pvalloc(size);
}

void *mt_valloc(size_t size)
{
    size_t page = mt_os_page_size();
    return aligned_common(real.valloc ? valloc_adapter : NULL, page, size);
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
    return aligned_common(real.pvalloc ? pvalloc_adapter : NULL, page,
                          real.pvalloc ? size : rounded);
}

int mt_dlclose(void *handle)
{
    static int (*real_dlclose)(void *);
    if (!real_dlclose)
        real_dlclose = (int (*)(void *))next_symbol("dlclose");
    if (!real_dlclose)
        return -1;
    int was = mt_enter();
    mt_modules_note_dlclose(handle);
    mt_leave(was);
    int rc = real_dlclose(handle);
    mt_modules_note_unloaded();
    return rc;
}

size_t mt_malloc_usable_size(void *ptr)
{
    if (ptr == NULL)
        return 0;
    if (mt_iheap_owns(ptr))
        return mt_iheap_usable(ptr);
    if (!real.malloc_usable_size)
        init();
    return real.malloc_usable_size ? real.malloc_usable_size(ptr) : 0;
}
