/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the hot path (capture/) shares with start-up (startup.c) and every
 * entry point's file with the others (defined in state.c): the next
 * allocator's functions (mt_real, mt_ext) and the one way to call them,
 * frees as data, the tracer's phase, the pass-through and held scopes, the
 * untraced accounting, and which copy of memtrace is in charge. startup.c
 * fills the allocator's in once, before the phase becomes READY; the hot
 * path only reads them. */
#ifndef MT_STATE_H
#define MT_STATE_H

#include "base/atomic.h"
#include "base/common.h"
#include "base/hot.h"
#include "base/upcalls.h"
#include "store/live_table.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The next allocator in lookup order (RTLD_NEXT): glibc's, or whatever the
 * program preloaded after memtrace. One member, next_NAME, for each row
 * of capture/interposed.def whose NEXT is NEXT_REAL, with its signature.
 * Written before the phase leaves UNINIT's start-up (release on mt_phase),
 * read after an acquire of it. */
/* NOLINTNEXTLINE(bugprone-macro-parentheses): PARAMS is a parameter list */
#define NEXT_REAL(ret, name, params) ret(*next_##name) params;
#define NEXT_NONE(ret, name, params)
#define NEXT_EXT(e) NEXT_NONE
#define MT_INTERPOSE(cls, next, ret, name, params, body) next(ret, name, params)
typedef struct {
#include "capture/interposed.def"
} mt_real_allocator;
#undef MT_INTERPOSE
#undef NEXT_EXT
#undef NEXT_NONE
#undef NEXT_REAL

extern mt_real_allocator mt_real MT_HIDDEN;

/* The next malloc and free are glibc's (libc.so.6's): a block's chunk
 * header, the word before it, may be read (mt_glibc_mmapped below,
 * sample.h's mt_glibc_*). Set by mt_sample_start at start-up, after
 * mt_real. */
extern bool mt_real_glibc MT_HIDDEN;

/* glibc's chunk header, the size word before a block, keeps flags in its 3
 * low bits; this one says the chunk is a mapping of its own (IS_MMAPPED). */
#define MT_GLIBC_MMAPPED 2

/* Whether P, a block glibc handed out, is a chunk glibc mapped for it
 * alone (whole pages, which the program may have made read-only). */
static inline bool mt_glibc_mmapped(const void *p)
{
    return ((const size_t *)p)[-1] & MT_GLIBC_MMAPPED;
}

/* UNINIT -> INITIALIZING -> READY or PAUSED (MEMTRACE_START=0); READY
 * -> PAUSED when recording is turned off, PAUSED -> RESUMING -> READY when
 * it is turned on (recording.c: RESUMING, which the hot path treats as
 * PAUSED, lets one caller move mt_untraced_seq with no READY in between),
 * RESUMING -> PAUSED when it is turned off meanwhile; and to STOPPED from
 * INITIALIZING, READY, PAUSED or RESUMING when a metadata mapping fails. In PAUSED and STOPPED new
 * blocks go unrecorded and records of freed blocks are still removed (no freed history, no bad-free
 * reports); only READY records. The hot path tests for READY alone, so turning recording off costs
 * it nothing. STOPPED is never left. */
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
/* mt_passthrough: a member of base/hot.h's mt_hot, one GOT load with the
 * hot path's other thread-local words. */

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
 * store, no syscall: the hot path pays two stores and one test. A member
 * of base/hot.h's mt_hot. */

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
#define MT_HELD_SCOPE \
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
 * real allocator returned, before the program gets the block (malloc.c). */
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
#define MT_PASSTHROUGH_SCOPE                        \
    mt_passthrough_scope_t mt_passthrough_scope     \
        __attribute__((cleanup(mt_passthrough_end), \
                       unused)) = { (mt_passthrough++, mt_passthrough_allocs), 0 }
#define MT_PASSTHROUGH_KEEPS(p) (mt_passthrough_scope.keeps = (p) != NULL)

/* The next definitions of the entry points beyond the C allocator's (the
 * C++ operators, jemalloc's and tcmalloc's extended APIs, C23's sized
 * frees): MT_X_E for each row of capture/interposed.def whose NEXT is
 * NEXT_EXT(E), in the list's order. */
#define NEXT_EXT(e) MT_X_##e,
#define NEXT_REAL
#define NEXT_NONE
#define MT_INTERPOSE(cls, next, ret, name, params, body) next
enum {
#include "capture/interposed.def"
    MT_EXT_COUNT
};
#undef MT_INTERPOSE
#undef NEXT_NONE
#undef NEXT_REAL
#undef NEXT_EXT
_Static_assert(MT_X_NEW == 0 && MT_X_DELA_AL_NT == 19, "the C++ operators come first, together");

/* mt_ext[i]: the next definition (RTLD_NEXT) of the I-th NEXT_EXT row of interposed.def,
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
 * one (malloc.c's next_seq): every number handed out is below it, and
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
 * this copy is the one in charge. Defined in state.c; mt_aside is set
 * once by start-up (startup.c's stand_aside), before the program's main. */
extern bool mt_aside MT_HIDDEN;
void *mt_owner(const char *name);

/* ---- calling the next allocator */

/* mt_ext's I-th next definition, looked up on the first call of any. */
static inline void *mt_ext_get(unsigned i)
{
    if (MT_UNLIKELY(
            !mt_atomic_load_acquire(&mt_ext_ready))) /* pairs with mt_ext_lookup's release */
        mt_ext_lookup();
    return mt_atomic_load_relaxed(&mt_ext[i]);
}

/* How an entry point's next function is called (HOW below):
 * MT_NEXT_PLAIN: directly. For functions that call no interposed name: the
 *   C allocator (mt_real), tcmalloc's C functions with libc's contracts.
 * MT_NEXT_SCOPED: in a pass-through scope (state.h), so that whatever it
 *   calls in turn (libstdc++'s and jemalloc's operator new call malloc)
 *   goes to the real allocator untraced, and the block is recorded or
 *   forgotten once, by the entry point; the scope ends also when an
 *   exception (std::bad_alloc) leaves the call. For the next definitions
 *   of the names beyond the C allocator's (mt_ext). */
enum { MT_NEXT_PLAIN, MT_NEXT_SCOPED };

/* The one way an entry point calls the next allocator: runs STMT, the call,
 * as HOW says (a constant); KEPT, read after STMT, is true when it
 * returned a block the entry point goes on to account for (MT_NEXT_ALLOC;
 * false for a free), so that the scope does not count it as lost. */
#define MT_NEXT_CALL(how, stmt, kept)            \
    do {                                         \
        if ((how) == MT_NEXT_SCOPED) {           \
            MT_PASSTHROUGH_SCOPE;                \
            stmt;                                \
            mt_passthrough_scope.keeps = (kept); \
        } else {                                 \
            stmt;                                \
        }                                        \
    } while (0)

/* A call that frees a block, as data: the quarantine makes it when the
 * block leaves. FN takes the block and the arguments SHAPE says, A and B
 * (a pointer or int argument passed in the word); SHAPE's MT_FC_SIZE_A or
 * MT_FC_SIZE_B bit marks the argument that is the block's size, to which
 * the redzone is added for a block that has one (a sized free must name
 * the size the next allocator was asked for). MT_FC_REAL is mt_real.next_free,
 * called directly; the others are next definitions, called in a
 * pass-through scope (record.h's MT_NEXT_SCOPED). */
enum {
    MT_FC_REAL, /* mt_real.next_free(ptr) */
    MT_FC_P,    /* fn(ptr) */
    MT_FC_PA,   /* fn(ptr, a) */
    MT_FC_PAB,  /* fn(ptr, a, b) */
    MT_FC_PI,   /* fn(ptr, (int)a) */
    MT_FC_PAI,  /* fn(ptr, a, (int)b) */
    MT_FC_PP,   /* fn(ptr, (const void *)a) */
    MT_FC_PAP,  /* fn(ptr, a, (const void *)b) */
    MT_FC_SHAPE = 0xff,
    MT_FC_SIZE_A = 0x100,
    MT_FC_SIZE_B = 0x200,
};

typedef struct {
    void *fn;
    uintptr_t a, b;
    unsigned shape;
} mt_free_call;

#define MT_FREE_CALL(fn_, shape_, a_, b_)  \
    ((mt_free_call){ .fn = (void *)(fn_),  \
                     .a = (uintptr_t)(a_), \
                     .b = (uintptr_t)(b_), \
                     .shape = (shape_) })

/* C's size argument, if it has one, made the size the next allocator was
 * asked for: REDZONE more. */
static inline void mt_free_call_pad(mt_free_call *c, size_t redzone)
{
    if (!(c->shape & (MT_FC_SIZE_A | MT_FC_SIZE_B)))
        return; /* the common case, told by one test */
    if (c->shape & MT_FC_SIZE_A)
        c->a += redzone;
    if (c->shape & MT_FC_SIZE_B)
        c->b += redzone;
}

/* Makes the free call C of PTR (quarantine.h's mt_free_call): mt_real.next_free
 * directly, a next definition in a pass-through scope. */
typedef void (*mt_fc_p)(void *);
typedef void (*mt_fc_pa)(void *, uintptr_t);
typedef void (*mt_fc_pab)(void *, uintptr_t, uintptr_t);
typedef void (*mt_fc_pi)(void *, int);
typedef void (*mt_fc_pai)(void *, uintptr_t, int);
typedef void (*mt_fc_pp)(void *, const void *);
typedef void (*mt_fc_pap)(void *, uintptr_t, const void *);

static inline void mt_free_call_scoped(void *ptr, const mt_free_call *c)
{
    switch (c->shape & MT_FC_SHAPE) {
    case MT_FC_P: ((mt_fc_p)c->fn)(ptr); break;
    case MT_FC_PA: ((mt_fc_pa)c->fn)(ptr, c->a); break;
    case MT_FC_PAB: ((mt_fc_pab)c->fn)(ptr, c->a, c->b); break;
    case MT_FC_PI: ((mt_fc_pi)c->fn)(ptr, (int)c->a); break;
    case MT_FC_PAI: ((mt_fc_pai)c->fn)(ptr, c->a, (int)c->b); break;
    case MT_FC_PP: ((mt_fc_pp)c->fn)(ptr, (const void *)c->a); break;
    default: ((mt_fc_pap)c->fn)(ptr, c->a, (const void *)c->b); break;
    }
}

static inline void mt_free_call_run(void *ptr, const mt_free_call *c)
{
    if ((c->shape & MT_FC_SHAPE) == MT_FC_REAL)
        mt_real.next_free(ptr);
    else
        MT_NEXT_CALL(MT_NEXT_SCOPED, mt_free_call_scoped(ptr, c), false);
}

#endif
