/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memtrace's own unwinder: one compact rule per return address (cfi.h),
 * looked up in a process-wide table, so a frame costs a lookup, a CFA and
 * two loads.
 *
 * The walk starts from this function's own frame and follows memtrace's
 * frame-pointer chain (the library is built with -fno-omit-frame-pointer)
 * to the first return address outside memtrace: the program's call site.
 * The CFA of memtrace's outermost frame is the caller's stack pointer, and
 * the rbp saved in that frame is the caller's rbp, so the walk into the
 * program needs no frame pointer of the program's. Every word read lies in
 * the thread's stack mapping (stack_bounds.h) or in a module's mapped
 * segments; anything else gives up the capture (-1: the caller falls back
 * to libunwind).
 *
 * The table: open addressing, key = return address, value = rule; 0 is
 * empty. Readers take no lock. A writer (a thread that missed) decodes the
 * rule without any lock, then inserts under `lock`: the rule, then the key,
 * both with release. A reader loads the key (acquire), the rule (acquire),
 * and the key again: a slot cleared and reused meanwhile (only after a
 * library was unloaded, see forget_all) shows a different key and counts
 * as a miss. Growth copies into a table twice the size and publishes it;
 * the old one stays mapped (readers may be in it), so the tables ever
 * mapped add up to less than twice the current one.
 *
 * x86-64 only: the rules are x86-64's registers, and the walk relies on
 * its frame layout. */
#include "capture/capture.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/lock.h"
#include "base/os.h"
#include "base/reentry.h"
#include "store/cfi.h"
#include "store/modules.h"
#include "store/stack_bounds.h"

#include <pthread.h>
#include <string.h>

typedef struct {
    mt_atomic(uintptr_t) key;
    mt_atomic(uint64_t) rule;
} slot;

typedef struct {
    size_t mask; /* capacity - 1, a power of two */
    size_t used; /* slots with a key, under lock */
    slot s[];
} table;

enum { FIRST_LOG2 = 12, MAX_MODULES = 512, MAX_OWN_FRAMES = 64 };

static mt_atomic(table *) rules;
/* Held while inserting, growing, flushing and using the module cache;
 * never while calling dl_iterate_phdr (a thread inside dlopen holds the
 * loader's lock and may be waiting for this one). */
static mt_lock lock = MT_LOCK_INIT;
/* mt_modules_unloads_begun when the table was last flushed: a library may
 * have been unloaded since (and another loaded at its addresses). */
static mt_atomic(unsigned long) flushed_at;
/* The loader's unload count (mt_cfi_loader_subs) when the table and the
 * module cache were last checked against it; under lock. */
static unsigned long long loader_subs;
static mt_cfi_module *modules; /* MAX_MODULES, mapped on first use; under lock */
static unsigned module_count;
static mt_atomic(unsigned long) fallbacks;
/* Times the table was flushed (forget_all): a thread's memo of its last
 * walk and its rule cache (below) hold only while this has not moved. */
static mt_atomic(unsigned long) forgets;

/* ------------------------------------------- the thread's last walk
 *
 * Consecutive captures on a thread share most outer frames. Each thread
 * keeps its last successful walk (the memo): for each frame i the state
 * the walk was in when it reached it (ret[i], sp[i], bp[i]), the rule it
 * used, and in entry n the state the last frame's step produced.
 *
 * Contract (why a replayed frame is the frame a fresh walk finds): a walk
 * is a function of its state, the rules and the words it reads. A step
 * from state (ret, sp, bp) under rule r reads the word at CFA - 8 and, if
 * r saves rbp, the word at CFA - rbp_slot, where CFA depends on sp, bp and
 * r only; the next state is (that first word, CFA, the second word or
 * bp); whether the walk stops or gives up there depends on r, bp, the
 * first word and the stack bounds only. So when the new walk reaches a
 * state equal to the memo's state i (all three words), and for each
 * memo frame from i on the words its step read still hold what they held,
 * the new walk takes the memo's steps, frame for frame, as long as the
 * rules are the same. They are: the memo is used only while the table has
 * not been flushed since it was made (`forgets`), and a rule is the one
 * decoded for that return address from the same mapped module. The bounds
 * are the thread's, unchanged, and every word read lies in [sp[i], CFA) of
 * a step the memo made, so inside the stack. Verification reads exactly
 * those words; a word that differs ends the replay at that frame, which is
 * then unwound by lookup as any other. Nothing is assumed about which
 * frames are still live: a stale frame the memory still matches is what
 * a fresh walk would find too.
 *
 * The memo is the thread's alone: a capture runs with the re-entrancy flag
 * set, and `walking` keeps a capture that interrupts another (a signal
 * handler's report) off it. Two buffers: the walk reads the old one and
 * writes the new one, and they swap when it succeeds; the thread's rule
 * cache follows them in the same mapping. */
typedef struct memo {
    struct memo *next_free; /* of a thread that ended, for another */
    unsigned long forgets;  /* `forgets` when this walk began */
    unsigned n;             /* frames; 0: no walk */
    uintptr_t ret[MT_MAX_DEPTH + 1], sp[MT_MAX_DEPTH + 1], bp[MT_MAX_DEPTH + 1];
    mt_cfi_rule rule[MT_MAX_DEPTH];
} memo;

/* The thread's own copy of the rules it used lately: direct-mapped, a
 * rule copied from the table (never one `learn` did not keep), the whole
 * cache cleared when `forgets` moves. Between two flushes the table maps
 * a return address to one rule for good (a slot is only ever cleared by
 * forget_all), so a copy is the table's answer; it saves the probe into a
 * table too large to stay in cache, which the frames a memo cannot give
 * (the innermost ones, whose depth moves) would pay. */
enum { RULE_CACHE = 512 };
typedef struct {
    unsigned long forgets; /* `forgets` its rules were copied under */
    struct {
        uintptr_t ret;
        mt_cfi_rule rule;
    } s[RULE_CACHE];
} rule_cache;

static MT_TLS memo *memo_old, *memo_new;
static MT_TLS rule_cache *rules_mine;
static MT_TLS bool walking, memo_gone;
static memo *memo_free; /* under lock */
static pthread_key_t memo_key;
static bool memo_key_made;

static uintptr_t self_lo, self_hi; /* memtrace's executable segment */

static void memo_release(void *pair);

void mt_unwind_cfi_init(uintptr_t lo, uintptr_t hi)
{
    self_lo = lo;
    self_hi = hi;
    memo_key_made = pthread_key_create(&memo_key, memo_release) == 0;
}

static inline size_t home(const table *t, uintptr_t ret)
{
    return (size_t)((ret * 0x9e3779b97f4a7c15ull) >> 40) & t->mask;
}

/* The rule for RET, or 0 if the table has none. */
static inline mt_cfi_rule lookup(const table *t, uintptr_t ret)
{
    for (size_t i = home(t, ret);; i = (i + 1) & t->mask) {
        uintptr_t k = mt_atomic_load_acquire(&t->s[i].key);
        if (MT_LIKELY(k == ret)) {
            mt_cfi_rule r = mt_atomic_load_acquire(&t->s[i].rule);
            return mt_atomic_load_relaxed(&t->s[i].key) == ret ? r : 0;
        }
        if (k == 0)
            return 0;
    }
}

static table *new_table(size_t log2)
{
    size_t cap = (size_t)1 << log2;
    table *t = mt_os_map(sizeof(table) + cap * sizeof(slot), "unwind rule table");
    if (t)
        t->mask = cap - 1;
    return t;
}

/* Under lock. */
static void put(table *t, uintptr_t ret, mt_cfi_rule r)
{
    size_t i = home(t, ret);
    for (;; i = (i + 1) & t->mask) {
        uintptr_t k = mt_atomic_load_relaxed(&t->s[i].key);
        if (k == ret)
            return; /* another thread learned it first */
        if (k == 0)
            break;
    }
    /* Release, both: a reader that acquires this rule also sees this key
     * (or a later one) when it loads the key again, whatever clears and
     * reuses of the slot came before (see lookup). */
    mt_atomic_store_release(&t->s[i].rule, r);
    mt_atomic_store_release(&t->s[i].key, ret);
    t->used++;
}

/* Under lock: keeps the load under one half, growing the table. If no
 * memory is left the rule is simply not kept. */
static void insert(uintptr_t ret, mt_cfi_rule r)
{
    table *t = mt_atomic_load_relaxed(&rules);
    if (!t || (t->used + 1) * 2 > t->mask + 1) {
        size_t log2 = t ? (size_t)__builtin_ctzll(t->mask + 1) + 1 : FIRST_LOG2;
        table *bigger = new_table(log2);
        if (!bigger)
            return;
        for (size_t i = 0; t && i <= t->mask; i++) {
            uintptr_t k = mt_atomic_load_relaxed(&t->s[i].key);
            if (k)
                put(bigger, k, mt_atomic_load_relaxed(&t->s[i].rule));
        }
        mt_atomic_store_release(&rules, bigger);
        t = bigger;
    }
    put(t, ret, r);
}

/* Under lock: forgets every rule and module once a dlclose has begun since
 * the last flush. The table is cleared in place (lookup's second key load
 * makes a reader racing with this see a miss). */
static void forget_all(void)
{
    table *t = mt_atomic_load_relaxed(&rules);
    for (size_t i = 0; t && i <= t->mask; i++) {
        mt_atomic_store_relaxed(&t->s[i].key, 0);
        mt_atomic_store_relaxed(&t->s[i].rule, 0);
    }
    if (t)
        t->used = 0;
    module_count = 0;
    mt_atomic_store_release(&forgets, mt_atomic_load_relaxed(&forgets) + 1);
}

static void flush_if_unloading(void)
{
    unsigned long begun = mt_modules_unloads_begun();
    if (begun == mt_atomic_load_relaxed(&flushed_at))
        return;
    forget_all();
    mt_atomic_store_release(&flushed_at, begun);
}

/* Whether what is learnt now may be kept: no dlclose in progress, none
 * begun since the flush at FLUSHED. While one is in progress a library's
 * mappings may go away and another take its addresses before anything
 * tells: rules are then decoded afresh, from modules found afresh. */
static bool may_keep(unsigned long flushed)
{
    return mt_modules_generation() == flushed && mt_modules_unloads_begun() == flushed;
}

/* Under lock. */
static const mt_cfi_module *cached_module(uintptr_t pc)
{
    for (unsigned i = 0; i < module_count; i++)
        if (pc >= modules[i].lo && pc < modules[i].hi)
            return &modules[i];
    return NULL;
}

/* A miss: finds RET's module (from the cache, else from the loader),
 * decodes its rule, and keeps both. An address in no module (JIT code, a
 * garbage return address) is a fallback, not kept: code may be mapped
 * there later.
 *
 * Libraries can go without a dlclose memtrace sees (glibc unloads its own
 * iconv modules; a failed dlopen unmaps what it mapped): each miss first
 * asks the loader how many libraries it has unloaded, and forgets every
 * module and rule when that count moved. A module record is only ever
 * used after that check, so the decoder never reads a library that is
 * gone. A rule kept in the table can still be hit, before the next miss,
 * for a library loaded where one went that way: that frame and those
 * above it are then wrong (never read outside the stack), as libunwind's
 * cache would have them. */
static MT_NOINLINE mt_cfi_rule learn(uintptr_t ret)
{
    mt_cfi_module m;
    unsigned long long subs = mt_cfi_loader_subs();
    mt_lock_acquire(&lock);
    if (subs > loader_subs) {
        forget_all();
        loader_subs = subs;
    }
    flush_if_unloading();
    unsigned long flushed = mt_atomic_load_relaxed(&flushed_at);
    const mt_cfi_module *c = may_keep(flushed) ? cached_module(ret - 1) : NULL;
    bool cached = c != NULL;
    if (c)
        m = *c;
    mt_lock_release(&lock);
    if (!cached && !mt_cfi_module_of(ret - 1, &m))
        return MT_CFI_FALLBACK;
    /* Reads the module's own mapped memory: it holds a frame of this
     * stack, so it cannot be unloaded under us by a correct program. */
    mt_cfi_rule r = mt_cfi_rule_for(&m, ret);
    mt_lock_acquire(&lock);
    flush_if_unloading();
    if (may_keep(flushed)) { /* also: no flush since the lookup above */
        if (!cached) {
            if (!modules)
                modules = mt_os_map(MAX_MODULES * sizeof *modules, "unwind module cache");
            if (modules && module_count < MAX_MODULES && !cached_module(ret - 1))
                modules[module_count++] = m;
        }
        insert(ret, r);
    }
    mt_lock_release(&lock);
    return r;
}

/* Gives the calling thread its memo buffers and rule cache: a thread's
 * that ended, else newly mapped. False, for good, when none can be had or
 * the thread is past its exit destructor. */
static MT_NOINLINE bool memo_get(void)
{
    if (memo_gone)
        return false;
    memo *m = NULL;
    mt_lock_acquire(&lock);
    if (memo_free) {
        m = memo_free;
        memo_free = m->next_free->next_free;
    }
    mt_lock_release(&lock);
    if (!m)
        m = mt_os_map(2 * sizeof(memo) + sizeof(rule_cache), "unwind memo");
    if (!m) {
        memo_gone = true;
        return false;
    }
    m[0].n = m[1].n = 0;
    m[0].next_free = &m[1];
    memo_old = &m[0];
    memo_new = &m[1];
    rules_mine = (rule_cache *)&m[2];
    if (memo_key_made) {
        int was = mt_enter();
        pthread_setspecific(memo_key, m);
        mt_leave(was);
    }
    return true;
}

/* The thread ends: its buffers go to the next thread that needs them (a
 * capture from a later destructor walks without them). */
static void memo_release(void *pair)
{
    memo *m = pair;
    memo_gone = true;
    memo_old = memo_new = NULL;
    rules_mine = NULL;
    m[0].next_free = &m[1];
    mt_lock_acquire(&lock);
    m[1].next_free = memo_free;
    memo_free = m;
    mt_lock_release(&lock);
}

/* A walk's state: the frame returning to RET has stack pointer SP and
 * rbp BP; N frames are stored. */
typedef struct {
    uintptr_t ret, sp, bp;
    unsigned n;
} walk_state;

/* Stores frame S->n, unwound by rule R, in FRAMES and in the memo NW. */
static inline void keep(uintptr_t *frames, memo *nw, walk_state *s, mt_cfi_rule r)
{
    frames[s->n] = s->ret;
    if (nw) {
        nw->ret[s->n] = s->ret;
        nw->sp[s->n] = s->sp;
        nw->bp[s->n] = s->bp;
        nw->rule[s->n] = r;
    }
    s->n++;
}

/* S is the memo OLD's state *AT: takes its steps from there while each
 * reads what it read then (see the contract), keeping its frames as
 * this walk's. True when the walk ended there; false to go on unwinding
 * from S, at the memo's frame whose words differ, at the end of a memo
 * cut at its max, or at this walk's MAX, with *AT the memo's state S is
 * then in. */
static inline bool replay(uintptr_t *frames, unsigned max, memo *nw, const memo *old, unsigned *at,
                          walk_state *s)
{
    for (unsigned i = *at;; *at = ++i) {
        /* S is the memo's state i. */
        mt_cfi_rule r = old->rule[i];
        if (mt_cfi_kind(r) != MT_CFI_STANDARD) { /* where the memo's walk stopped */
            keep(frames, nw, s, r);
            return true;
        }
        uintptr_t cfa = old->sp[i + 1];
        if (((const uintptr_t *)cfa)[-1] != old->ret[i + 1] ||
            (mt_cfi_rbp_saved(r) &&
             *(const uintptr_t *)(cfa - mt_cfi_rbp_slot(r)) != old->bp[i + 1]))
            return false;
        keep(frames, nw, s, r);
        s->ret = old->ret[i + 1];
        s->sp = cfa;
        s->bp = old->bp[i + 1];
        if (s->ret < 0x4000)
            return true;
        if (s->n == max || i + 1 == old->n) {
            *at = i + 1;
            return false;
        }
    }
}

/* The walk from the frame returning to RET whose saved rbp and return
 * address are at FP (mt_unwind_cfi). With OLD, the thread's memo: replays
 * its frames where it can, records this walk in memo_new and makes it the
 * memo if the walk succeeds. */
static inline __attribute__((always_inline)) int walk(uintptr_t *frames, unsigned max, uintptr_t fp,
                                                      uintptr_t ret, memo *old)
{
    const uintptr_t base = mt_stack_base;
    /* Invariant: low <= S.sp <= base. */
    walk_state s = { .ret = ret, .sp = fp + 16, .bp = ((const uintptr_t *)fp)[0], .n = 0 };
    unsigned long forgets_now = mt_atomic_load_acquire(&forgets);
    memo *nw = old ? memo_new : NULL;
    /* The memo's frames from J up have their stack pointer at or above S.sp
     * (both walks go up the stack); ON frames in all, 0 if stale. */
    unsigned j = 0, on = old && old->forgets == forgets_now ? old->n : 0;
    const table *t = mt_atomic_load_acquire(&rules);
    rule_cache *mine = old ? rules_mine : NULL;
    if (mine && MT_UNLIKELY(mine->forgets != forgets_now)) {
        memset(mine->s, 0, sizeof mine->s);
        mine->forgets = forgets_now;
    }
    while (s.n < max) {
        /* cppcheck-suppress nullPointer ; ON is 0 when OLD is NULL */
        while (j < on && old->sp[j] < s.sp)
            j++;
        /* cppcheck-suppress nullPointer ; ON is 0 when OLD is NULL */
        if (j < on && old->sp[j] == s.sp && old->ret[j] == s.ret && old->bp[j] == s.bp) {
            if (replay(frames, max, nw, old, &j, &s))
                break;
            j++; /* S is the memo's state J, unwound afresh */
            continue;
        }
        mt_cfi_rule r;
        size_t c = (size_t)((s.ret * 0x9e3779b97f4a7c15ull) >> 55) & (RULE_CACHE - 1);
        if (mine && mine->s[c].ret == s.ret) {
            r = mine->s[c].rule;
        } else {
            r = t ? lookup(t, s.ret) : 0;
            if (MT_UNLIKELY(r == 0)) {
                r = learn(s.ret);
                t = mt_atomic_load_acquire(&rules);
            } else if (mine) {
                mine->s[c].ret = s.ret;
                mine->s[c].rule = r;
            }
        }
        keep(frames, nw, &s, r);
        if (MT_UNLIKELY(mt_cfi_kind(r) != MT_CFI_STANDARD)) {
            if (mt_cfi_kind(r) == MT_CFI_LAST || (r == MT_CFI_NO_FDE && s.bp == 0))
                break;
            return -1;
        }
        uintptr_t cfa = (mt_cfi_cfa_is_rbp(r) ? s.bp : s.sp) + (uintptr_t)mt_cfi_cfa_offset(r);
        /* The words read, at CFA - 8 and CFA - rbp_slot, lie in [SP, CFA),
         * and SP < CFA <= base keeps the walk moving up the stack: a frame
         * saves its registers above its own stack pointer. */
        uintptr_t above = cfa - s.sp;
        uintptr_t lowest = mt_cfi_rbp_saved(r) ? mt_cfi_rbp_slot(r) : 8;
        if (MT_UNLIKELY(above < lowest || above > base - s.sp))
            return -1;
        s.ret = ((const uintptr_t *)cfa)[-1];
        if (mt_cfi_rbp_saved(r))
            s.bp = *(const uintptr_t *)(cfa - mt_cfi_rbp_slot(r));
        s.sp = cfa;
        if (s.ret < 0x4000) /* where libunwind stops too */
            break;
    }
    if (nw) {
        nw->ret[s.n] = s.ret; /* the state the last step produced, if it read */
        nw->sp[s.n] = s.sp;
        nw->bp[s.n] = s.bp;
        nw->n = s.n;
        nw->forgets = forgets_now;
        memo_new = old;
        memo_old = nw;
    }
    return (int)s.n;
}

MT_NOINLINE int mt_unwind_cfi(uintptr_t *frames, unsigned max)
{
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    if (MT_UNLIKELY(mt_stack_known == 0))
        mt_stack_find(fp);
    if (MT_UNLIKELY(mt_stack_known < 0))
        return -1;
    if (MT_UNLIKELY(mt_modules_unloads_begun() != mt_atomic_load_acquire(&flushed_at))) {
        mt_lock_acquire(&lock);
        flush_if_unloading();
        mt_lock_release(&lock);
    }
    const uintptr_t low = mt_stack_low, base = mt_stack_base;
    /* memtrace's own frames, [saved rbp][return address] each, up to the
     * first return address outside memtrace. Every function of the library
     * keeps a frame pointer, so this chain is exact and needs no checks;
     * only where it ends is checked: off the thread's stack (a signal stack
     * or a fiber's) the walk gives up. */
    uintptr_t ret = ((const uintptr_t *)fp)[1];
    for (unsigned i = 0; ret - self_lo < self_hi - self_lo; i++) {
        if (MT_UNLIKELY(i == MAX_OWN_FRAMES))
            return -1;
        fp = ((const uintptr_t *)fp)[0];
        ret = ((const uintptr_t *)fp)[1];
    }
    if (MT_UNLIKELY(fp < low || fp > base - 16))
        return -1;
    if (MT_UNLIKELY(walking || max > MT_MAX_DEPTH || (!memo_old && !memo_get())))
        return walk(frames, max, fp, ret, NULL);
    walking = true;
    int n = walk(frames, max, fp, ret, memo_old);
    walking = false;
    return n;
}

void mt_unwind_cfi_fell_back(void)
{
    mt_atomic_add_relaxed(&fallbacks, 1);
}

unsigned long mt_unwind_fallbacks(void)
{
    return mt_atomic_load_relaxed(&fallbacks);
}

const mt_atomic(unsigned long) * mt_unwind_fallback_counter(void)
{
    return &fallbacks;
}

bool mt_unwind_cfi_lock(void)
{
    return mt_lock_acquire_unless_mine(&lock);
}

void mt_unwind_cfi_unlock(void)
{
    mt_lock_release(&lock);
}
