/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the hot path (capture/) shares with start-up (startup.c): the real
 * allocator's functions and the tracer's phase. startup.c fills them in
 * once, before the phase becomes READY; the hot path only reads them. */
#ifndef MT_REAL_H
#define MT_REAL_H

#include "base/atomic.h"
#include "base/common.h"
#include "store/live_table.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The next allocator in lookup order (RTLD_NEXT): glibc's, or whatever the
 * program preloaded after memtrace. Written before the phase leaves
 * UNINIT's start-up (release on mt_phase), read after an acquire of it. */
typedef struct {
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
} mt_real_allocator;

extern mt_real_allocator mt_real MT_HIDDEN;

/* The next malloc and free are glibc's (libc.so.6's): a block's chunk
 * header, the word before it, may be read (sample.h's mt_glibc_*). Set by
 * mt_sample_start at start-up, after mt_real. */
extern bool mt_real_glibc MT_HIDDEN;

/* UNINIT -> INITIALIZING -> READY or PAUSED (MEMTRACE_START=0); READY
 * -> PAUSED when recording is turned off, PAUSED -> RESUMING -> READY when
 * it is turned on (recording.c: RESUMING, which the hot path treats as
 * PAUSED, lets one caller move mt_untraced_seq with no READY in between),
 * RESUMING -> PAUSED when it is turned off meanwhile; and to STOPPED from
 * INITIALIZING, READY, PAUSED or RESUMING when a metadata mapping fails. In PAUSED and STOPPED new blocks go unrecorded and records of
 * freed blocks are still removed (no freed history, no bad-free reports);
 * only READY records. The hot path tests for READY alone, so turning
 * recording off costs it nothing. STOPPED is never left. */
enum { MT_UNINIT, MT_INITIALIZING, MT_READY, MT_PAUSED, MT_RESUMING, MT_STOPPED };
extern mt_atomic(int) mt_phase MT_HIDDEN;

/* Pass-through depth of the calling thread: while it is not 0, this
 * thread's calls go to the real allocator untraced (no record, no forget).
 * Raised around every call memtrace forwards to a next definition that may
 * itself call the interposed names (libstdc++'s operator new calls malloc,
 * its operator delete free), so a block is recorded and forgotten once, at
 * the outermost entry point; and between memtrace's fork handlers, where
 * other libraries' prepare handlers (run after memtrace's) may allocate
 * while memtrace's locks are held. A counter, so that the two nest. */
extern MT_TLS int mt_passthrough MT_HIDDEN;

/* Held-call depth of the calling thread: raised for the whole traced part
 * of an entry point (MT_HELD_SCOPE), from its first table lock or record
 * to the next allocator's return. A call that finds it raised outside any
 * pass-through scope comes from a signal handler that interrupted such a
 * part of its own thread (memtrace's own calls have mt_busy): a lock of
 * the tables (a live-table shard, the stack store, a quarantine ring) may
 * be held by the code it interrupted, which cannot run again before the
 * handler returns, and the next allocator (glibc's is not
 * async-signal-safe) may be in the middle of a call. Such a call goes
 * untraced and touches neither (mt_own_heap): an allocation comes from the
 * internal heap, a free of another block goes to the next allocator, its
 * record, if any, left behind stale. (With another allocator than glibc's,
 * which may call interposed names from inside its own calls, an
 * allocation found so goes to it, untraced.) A counter set with a TLS
 * store, no syscall: the hot path pays two stores and one test. */
extern MT_TLS int mt_held MT_HIDDEN;

/* Ends a held scope. The signal fences keep the compiler from moving the
 * scope's work across the counter's stores (a handler reads it). */
static inline void mt_held_end(int *unused)
{
    (void)unused;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    mt_held--;
}

static inline int mt_held_begin(void)
{
    mt_held++;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    return 0;
}

/* Raises mt_held until the end of the enclosing block, also when an
 * exception leaves it (as MT_PASSTHROUGH_SCOPE). */
#define MT_HELD_SCOPE                                                          \
    int mt_held_scope __attribute__((cleanup(mt_held_end), unused)) = mt_held_begin()

/* Raised in the forking thread between memtrace's fork handlers (with
 * mt_passthrough): the blocks the real allocator hands out or takes back
 * then move mt_untraced_seq. A counter, for a fork from a signal handler
 * inside the window. */
extern MT_TLS int mt_fork_window MT_HIDDEN;

/* Blocks the real allocator handed out untraced inside pass-through
 * scopes (outside fork windows), counted by this thread. */
extern MT_TLS unsigned mt_passthrough_allocs MT_HIDDEN;

/* The real allocator handed out or took back a block untraced in a fork
 * window or a pass-through scope (see mt_untraced_seq); called after the
 * real allocator returned, before the program gets the block (tracer.c). */
MT_COLD void mt_note_untraced(void);

/* A pass-through scope: the count of untraced blocks at its start, and how
 * many of those made inside it the entry point records itself (KEEPS: 1
 * once the next definition returned the block it records, 0 before, so
 * also when an exception leaves the scope). */
typedef struct {
    unsigned allocs, keeps;
} mt_passthrough_scope_t;

/* Ends a scope. An untraced block made inside it that the entry point does
 * not record (the std::bad_alloc that libstdc++'s operator new throws, what
 * a new_handler allocates) moves mt_untraced_seq, as a fork window's do:
 * freeing it later must not look like a double free. */
static inline void mt_passthrough_end(mt_passthrough_scope_t *scope)
{
    mt_passthrough--;
    if (MT_UNLIKELY(mt_passthrough_allocs - scope->allocs > scope->keeps))
        mt_note_untraced();
    if (!mt_passthrough)
        mt_passthrough_allocs = 0;
}

/* Raises the pass-through depth until the end of the enclosing block, also
 * when an exception (std::bad_alloc from a real operator new) leaves it:
 * the files that use it are built with -fexceptions. MT_PASSTHROUGH_KEEPS
 * says the call returned the block the entry point records. */
#define MT_PASSTHROUGH_SCOPE                                                   \
    mt_passthrough_scope_t mt_passthrough_scope                               \
        __attribute__((cleanup(mt_passthrough_end), unused)) = {             \
            (mt_passthrough++, mt_passthrough_allocs), 0                       \
        }
#define MT_PASSTHROUGH_KEEPS(p) (mt_passthrough_scope.keeps = (p) != NULL)

/* The next definitions of the entry points beyond the C allocator's: the
 * C++ operators, jemalloc's and tcmalloc's extended APIs, C23's sized
 * frees. X(ENUM, "symbol"). */
#define MT_EXT_FUNCS(X)                                                     \
    X(NEW, "_Znwm") X(NEW_NT, "_ZnwmRKSt9nothrow_t")                        \
    X(NEW_AL, "_ZnwmSt11align_val_t") X(NEW_AL_NT, "_ZnwmSt11align_val_tRKSt9nothrow_t") \
    X(NEWA, "_Znam") X(NEWA_NT, "_ZnamRKSt9nothrow_t")                      \
    X(NEWA_AL, "_ZnamSt11align_val_t") X(NEWA_AL_NT, "_ZnamSt11align_val_tRKSt9nothrow_t") \
    X(DEL, "_ZdlPv") X(DEL_SZ, "_ZdlPvm") X(DEL_AL, "_ZdlPvSt11align_val_t") \
    X(DEL_SZ_AL, "_ZdlPvmSt11align_val_t") X(DEL_NT, "_ZdlPvRKSt9nothrow_t") \
    X(DEL_AL_NT, "_ZdlPvSt11align_val_tRKSt9nothrow_t")                     \
    X(DELA, "_ZdaPv") X(DELA_SZ, "_ZdaPvm") X(DELA_AL, "_ZdaPvSt11align_val_t") \
    X(DELA_SZ_AL, "_ZdaPvmSt11align_val_t") X(DELA_NT, "_ZdaPvRKSt9nothrow_t") \
    X(DELA_AL_NT, "_ZdaPvSt11align_val_tRKSt9nothrow_t")                    \
    X(MALLOCX, "mallocx") X(RALLOCX, "rallocx") X(XALLOCX, "xallocx")       \
    X(SALLOCX, "sallocx") X(DALLOCX, "dallocx") X(SDALLOCX, "sdallocx")     \
    X(NALLOCX, "nallocx")                                                   \
    X(FREE_SIZED, "free_sized") X(FREE_ALIGNED_SIZED, "free_aligned_sized") \
    X(TC_MALLOC, "tc_malloc") X(TC_FREE, "tc_free") X(TC_FREE_SIZED, "tc_free_sized") \
    X(TC_CFREE, "tc_cfree") X(TC_CALLOC, "tc_calloc") X(TC_REALLOC, "tc_realloc") \
    X(TC_MEMALIGN, "tc_memalign") X(TC_POSIX_MEMALIGN, "tc_posix_memalign") \
    X(TC_VALLOC, "tc_valloc") X(TC_PVALLOC, "tc_pvalloc")                   \
    X(TC_NEW, "tc_new") X(TC_NEW_NT, "tc_new_nothrow")                      \
    X(TC_NEW_AL, "tc_new_aligned") X(TC_NEW_AL_NT, "tc_new_aligned_nothrow") \
    X(TC_NEWA, "tc_newarray") X(TC_NEWA_NT, "tc_newarray_nothrow")          \
    X(TC_NEWA_AL, "tc_newarray_aligned") X(TC_NEWA_AL_NT, "tc_newarray_aligned_nothrow") \
    X(TC_DEL, "tc_delete") X(TC_DEL_SZ, "tc_delete_sized") X(TC_DEL_AL, "tc_delete_aligned") \
    X(TC_DEL_SZ_AL, "tc_delete_sized_aligned") X(TC_DEL_NT, "tc_delete_nothrow") \
    X(TC_DEL_AL_NT, "tc_delete_aligned_nothrow")                            \
    X(TC_DELA, "tc_deletearray") X(TC_DELA_SZ, "tc_deletearray_sized")      \
    X(TC_DELA_AL, "tc_deletearray_aligned") X(TC_DELA_SZ_AL, "tc_deletearray_sized_aligned") \
    X(TC_DELA_NT, "tc_deletearray_nothrow") X(TC_DELA_AL_NT, "tc_deletearray_aligned_nothrow")

#define MT_EXT_ENUM(e, name) MT_X_##e,
enum { MT_EXT_FUNCS(MT_EXT_ENUM) MT_EXT_COUNT };
#undef MT_EXT_ENUM

/* mt_ext[i]: the next definition (RTLD_NEXT) of MT_EXT_FUNCS' i-th name,
 * or NULL when no object after memtrace defines it. All are looked up
 * together, on the first call of any of them (not at start-up: a C++
 * runtime or an allocator may be loaded after the first malloc), by
 * mt_ext_lookup, which then sets mt_ext_ready (release; the hot path
 * acquires it before reading mt_ext). Racing lookups store the same
 * values. A name not found then stays NULL: its callers emulate it on the
 * real malloc family, consistently for the rest of the process. */
extern mt_atomic(void *) mt_ext[MT_EXT_COUNT] MT_HIDDEN;
extern mt_atomic(int) mt_ext_ready MT_HIDDEN;

/* True when the program replaces a C++ operator new or delete (MT_X_NEW to
 * MT_X_DELA_AL_NT): a symbol lookup of one finds a definition neither
 * memtrace's nor after it (the executable's own). The runtime's other
 * forms then call the program's, and the program's may free with free:
 * memtrace's operators only forward (cxx.c), and the blocks are recorded
 * and freed by the malloc and free the program's operators call, with
 * every operator delete made at once. Set by mt_ext_lookup before
 * mt_ext_ready; never cleared. */
extern bool mt_cxx_replaced MT_HIDDEN;
/* mt_ext_lookup, mt_start and mt_bad_free, the hot path's calls up into
 * the slow path: base/upcalls.h. */

/* An upper bound of the allocation numbers handed out (mt_next_seq - 1) when the real
 * allocator last returned or freed a block without memtrace recording it
 * while recording (in a fork window, mt_fork_window), read after the real
 * call returned and stored before the program saw its result. Only grows. A freed-history
 * record whose free_seq is not above it may have been followed by such a
 * block at its address, and a live record whose seq is not above it may
 * be stale: neither is enough to call a free bad. */
extern mt_atomic(uint64_t) mt_untraced_seq MT_HIDDEN;

/* The allocation numbers handed out to the threads' batches so far, plus
 * one (tracer.c's next_seq): every number handed out is below it, and
 * after mt_seq_new_epoch every number a thread then hands out is at least
 * the value read before. */
extern mt_atomic(uint64_t) mt_next_seq MT_HIDDEN;

/* The greatest allocation number handed out so far (0 for none): the
 * last allocation made, in a single-threaded program. Exact when no
 * other thread is allocating. */
uint64_t mt_seq_last(void);

/* When another copy of memtrace owns malloc in this process (a program
 * linked with -lmemtrace run under the preloaded profiler, say), this copy
 * stands aside: it records nothing and says nothing, and its API
 * functions call the owner's, which mt_owner returns by NAME; NULL when
 * this copy is the one in charge. Defined in owner.c; mt_aside is set
 * once by start-up (startup.c's stand_aside), before the program's main. */
extern bool mt_aside MT_HIDDEN;
void *mt_owner(const char *name);

#endif
