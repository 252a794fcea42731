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
 * the old one stays mapped (readers may be in it) but gives its pages back
 * (mt_os_retire): a reader still in it reads zeros (mask 0, keys 0), a
 * miss, and learns again into the new one. The tables ever mapped add up
 * to less than twice the current one in address space, and only the
 * current one is resident.
 *
 * x86-64 only: the rules are x86-64's registers, and the walk relies on
 * its frame layout. */
#include "capture/capture.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/config.h"
#include "base/lock.h"
#include "base/os.h"
#include "base/reentry.h"
#include "store/cfi.h"
#include "store/modules.h"
#include "store/stack_bounds.h"
#include "store/stack_store.h"

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

/* FIRST_LOG2: the table starts at 256 slots (4 KiB), as many as a
 * sampled run of a small program needs; a first table of 4096 had its
 * keys scattered over all of its 16 pages. It doubles at half load. */
enum { FIRST_LOG2 = 8, MAX_MODULES = 512, MAX_OWN_FRAMES = 64 };

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
 * keeps its last walk (the memo) and, where a new walk reaches a state the
 * memo went through, proves the rest of the memo still holds with a load
 * and compare per word read, instead of a rule lookup per frame.
 *
 * Layout: frames by height, 0 the outermost, so that a walk that keeps the
 * memo's outer frames writes only its own new inner ones (nothing is
 * copied or shifted). For each height h: the state the walk was in when
 * it reached that frame (ret[h], sp[h], bp[h]), the rule it used, the
 * stamp of the commit that wrote it, and the checks of its step: the
 * words the step read, where, and what they held (the return address at
 * CFA - 8 and, when the rule saves rbp, the rbp at CFA - rbp_slot; they
 * are the state at height h - 1, or the `end` state for height 0). The
 * memo covers the whole stack up to CAP frames, whatever a caller's max:
 * its heights then do not move when the depth asked for changes, and only
 * a stack deeper than CAP is cut (END_CUT).
 *
 * Contract (why a kept frame is the frame a fresh walk finds): a walk is
 * a function of its state, the rules and the words it reads. A step from
 * state (ret, sp, bp) under rule r reads the word at CFA - 8 and, if r
 * saves rbp, the word at CFA - rbp_slot, where CFA depends on sp, bp and
 * r only; the next state is (the first word, CFA, the second word or bp);
 * whether the walk stops or gives up there depends on r, bp, the first
 * word and the stack bounds only. So when the new walk reaches a state
 * equal to the memo's state at height h (all three words), and every
 * check of heights h down to 0 still reads what it read, the new walk
 * takes the memo's steps from there, frame for frame, as long as the
 * rules are the same. They are: the memo is used only while the table has
 * not been flushed since it was made (`forgets`), and a rule is the one
 * decoded for that return address from the same mapped module. The bounds
 * are the thread's, unchanged, and every word checked lies in [sp, CFA) of
 * a step the memo made, inside the stack. Nothing is assumed about which
 * frames are still live: the same function called from two sites of one
 * caller at one depth leaves the inner frames' states equal, and its
 * caller's return address (a check) tells them apart; a stale frame the
 * memory still matches is what a fresh walk would find too. Where a check
 * differs, the frames down to that one are the memo's and that frame's
 * step is made afresh; the walk may meet the memo again lower down.
 *
 * Interning without reading the whole stack (mt_unwind_cfi_stack): the
 * memo's clock counts its commits, and each height keeps the stamp of the
 * commit that last wrote it; a commit writes only heights above the ones
 * it keeps, so stamps never decrease with height, and the heights at or
 * below the last one stamped at most T are all unchanged since T. Each
 * thread keeps a few stacks it interned (`interned`: id, memo frames, its
 * innermost return address, the clock then); the record of id holds what
 * the memo held at that clock. A new stack of the same frame count is
 * that record if the heights stamped after T (the frames this thread
 * unwound afresh since) equal the record's frames there: an exact
 * comparison of the new frames only, no hash. Anything else (another
 * count, a frame that differs) goes to mt_stack_intern.
 *
 * The memo is the thread's alone: a capture runs with the re-entrancy flag
 * set, and `tl.walking` keeps a capture that interrupts another (a signal
 * handler's report) off it, from the walk to the interning.
 *
 * A thread has two memos: one for the stacks of its allocations, one for
 * those of its frees (MT_MEMO_FREE). A program allocates and frees at
 * different places, usually by turns: with one memo, each free's walk
 * replaced the frames of the allocation before it, and the next
 * allocation unwound them all again (churn: 7.5 frames unwound afresh a
 * malloc/free pair with one memo, 2.3 with two). Each memo is a memo as
 * above, with its own clock and interned stacks (a stamp compares only
 * with its own memo's clock); they share the rule cache, a copy of the
 * table's answers whoever asked. */
enum {
    CAP = MT_MAX_DEPTH, /* frames a memo holds */
    INTERNED = 1024,    /* stacks a memo remembers interning (32 KiB) */
};

/* How the memo's walk ended past height 0. */
enum {
    END_NOREAD = 1, /* at the outermost frame's rule: nothing read */
    END_READ,       /* its step read a return address below 0x4000 */
    END_FAIL,       /* the walk gave up there (no word read) */
    END_CUT,        /* CAP frames: its step made the `end` state */
};

typedef struct {
    const uintptr_t *at;
    uintptr_t want;
} check;

typedef struct {
    mt_stack_id id;       /* 0: none */
    uint16_t n;           /* the memo's frames then (CAP at most) */
    uint16_t depth;       /* the record's frames */
    uintptr_t inner;      /* its innermost return address */
    unsigned long stamp;  /* the memo's clock then */
    const uintptr_t *rec; /* the record's frames in the store, where a
                             record never moves or changes once made */
} interned;
_Static_assert(CAP <= UINT16_MAX, "an interned slot's counts");

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

typedef struct memo {
    struct memo *next_free;            /* of a thread that ended, for another */
    unsigned long forgets;             /* `forgets` when the memo was made */
    unsigned long clock;               /* commits that wrote a height */
    unsigned n;                        /* frames, heights [0, n); 0: none */
    unsigned end;                      /* END_*, with n > 0 */
    uintptr_t end_ret, end_sp, end_bp; /* END_READ, END_CUT */
    uintptr_t ret[CAP], sp[CAP], bp[CAP];
    mt_cfi_rule rule[CAP];
    unsigned long stamp[CAP];
    bool live[CAP]; /* whether bp[h] matters (see bp_live) */
    /* The checks of height h are checks[first_check[h] .. first_check[h + 1]). */
    unsigned first_check[CAP + 1];
    check checks[2 * CAP];
    /* The walk under way: its frames unwound afresh, innermost first. */
    uintptr_t f_ret[CAP], f_sp[CAP], f_bp[CAP];
    mt_cfi_rule f_rule[CAP];
    uintptr_t frames[CAP]; /* a stack for mt_stack_intern */
    /* The last stack interned from this memo: id LAST_ID of the innermost
     * LAST_DEPTH of its LAST_N frames, at clock LAST_CLOCK. While the clock
     * has not moved and the memo still holds LAST_N frames, those frames
     * are the ones interned then (a commit that writes a height moves the
     * clock; one that writes none only shortens n), so the same depth is
     * the same id: a thread that frees from one place again and again
     * interns without the slot's hash and comparison. */
    mt_stack_id last_id; /* 0: none */
    unsigned last_n, last_depth;
    unsigned long last_clock;
    interned cache[INTERNED];
    rule_cache rules; /* the thread's: its allocation memo's only */
} memo;

/* The thread's: together, so that a capture finds them at one address
 * (one look-up of the thread's offset, not one a variable). */
static MT_TLS struct {
    memo *mine;   /* the thread's memos, MT_MEMOS in a row */
    bool walking; /* a capture has the memo (see above) */
    bool gone;    /* no memo for good */
} tl;
static memo *memo_free; /* under lock */
static pthread_key_t memo_key;
static bool memo_key_made;

static uintptr_t self_lo, self_hi; /* memtrace's executable segment */
/* The slots of a memo's `cache` in use, less one: INTERNED - 1 when every
 * block is traced; in sample mode a quarter, 256 slots (8 KiB). A sampled
 * run captures a few thousand stacks, and its hashed slots made all 32
 * KiB of each memo's cache resident (8 pages a memo, two memos a thread:
 * sqlite3's memos held 27 of their 35 pages at the peak). Set once, by
 * mt_unwind_cfi_init; a slot is only a guess (memo_intern), so the count
 * changes no answer. */
static unsigned interned_mask = INTERNED - 1;

static void memo_release(void *m);

void mt_unwind_cfi_init(uintptr_t lo, uintptr_t hi)
{
    self_lo = lo;
    self_hi = hi;
    if (mt_cfg.sample)
        interned_mask = INTERNED / 4 - 1;
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
        /* Its pages go back; it stays mapped: a walk still holding it
         * reads zeros there, misses, and learns from the new table. */
        if (t)
            mt_os_retire(t, sizeof(table) + (t->mask + 1) * sizeof(slot));
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

/* Gives the calling thread its memo: a thread's that ended, else newly
 * mapped. False, for good, when none can be had or the thread is past its
 * exit destructor. */
static MT_NOINLINE bool memo_get(void)
{
    if (tl.gone)
        return false;
    memo *m = NULL;
    mt_lock_acquire(&lock);
    if (memo_free) {
        m = memo_free;
        memo_free = m->next_free;
    }
    mt_lock_release(&lock);
    if (m) {
        m->rules.forgets = 0;
        memset(m->rules.s, 0, sizeof m->rules.s);
        for (unsigned i = 0; i < MT_MEMOS; i++) {
            m[i].n = 0;
            m[i].last_id = 0;
            memset(m[i].cache, 0, (interned_mask + 1) * sizeof m[i].cache[0]);
        }
    } else {
        /* Zeroed already (mt_os_map): its pages are touched only as the
         * thread's walks use them, which a sampled run's few do sparsely
         * (a memset here made each thread's memos all resident). */
        m = mt_os_map(MT_MEMOS * sizeof(memo), "unwind memo");
    }
    if (!m) {
        tl.gone = true;
        return false;
    }
    tl.mine = m;
    if (memo_key_made) {
        int was = mt_enter();
        pthread_setspecific(memo_key, m);
        mt_leave(was);
    }
    return true;
}

/* The thread ends: its memo goes to the next thread that needs one (a
 * capture from a later destructor walks without it). */
static void memo_release(void *p)
{
    memo *m = p;
    tl.gone = true;
    tl.mine = NULL;
    mt_lock_acquire(&lock);
    m->next_free = memo_free;
    memo_free = m;
    mt_lock_release(&lock);
}

/* A walk's state: the frame returning to RET has stack pointer SP and
 * rbp BP. */
typedef struct {
    uintptr_t ret, sp, bp;
} walk_state;

/* The rule for S->ret: from the thread's rule cache MINE (if any), the
 * table *T (loaded here while NULL), or learnt. */
static inline mt_cfi_rule rule_of(uintptr_t ret, const table **t, rule_cache *mine)
{
    size_t c = (size_t)((ret * 0x9e3779b97f4a7c15ull) >> 55) & (RULE_CACHE - 1);
    if (mine && mine->s[c].ret == ret)
        return mine->s[c].rule;
    if (!*t) /* not loaded yet: a walk whose rules all come from MINE never does */
        *t = mt_atomic_load_acquire(&rules);
    mt_cfi_rule r = *t ? lookup(*t, ret) : 0;
    if (MT_UNLIKELY(r == 0)) {
        r = learn(ret);
        *t = mt_atomic_load_acquire(&rules);
    } else if (mine) {
        mine->s[c].ret = ret;
        mine->s[c].rule = r;
    }
    return r;
}

enum { STEP_ON, STEP_END_READ, STEP_END_NOREAD, STEP_FAIL };

/* One step from *S under R: STEP_ON with the caller's state in *S,
 * STEP_END_READ (the return address read ends the stack, *S holds what
 * was read), STEP_END_NOREAD (R ends the stack) or STEP_FAIL (this stack
 * cannot be unwound here); the last two read nothing. */
static inline int step(walk_state *s, mt_cfi_rule r, uintptr_t base)
{
    if (MT_UNLIKELY(mt_cfi_kind(r) != MT_CFI_STANDARD)) {
        if (mt_cfi_kind(r) == MT_CFI_LAST || (r == MT_CFI_NO_FDE && s->bp == 0))
            return STEP_END_NOREAD;
        return STEP_FAIL;
    }
    uintptr_t cfa = (mt_cfi_cfa_is_rbp(r) ? s->bp : s->sp) + (uintptr_t)mt_cfi_cfa_offset(r);
    /* The words read, at CFA - 8 and CFA - rbp_slot, lie in [SP, CFA),
     * and SP < CFA <= base keeps the walk moving up the stack: a frame
     * saves its registers above its own stack pointer. */
    uintptr_t above = cfa - s->sp;
    uintptr_t lowest = mt_cfi_rbp_saved(r) ? mt_cfi_rbp_slot(r) : 8;
    if (MT_UNLIKELY(above < lowest || above > base - s->sp))
        return STEP_FAIL;
    s->ret = ((const uintptr_t *)cfa)[-1];
    if (mt_cfi_rbp_saved(r))
        s->bp = *(const uintptr_t *)(cfa - mt_cfi_rbp_slot(r));
    s->sp = cfa;
    return s->ret < 0x4000 ? STEP_END_READ : STEP_ON; /* where libunwind stops too */
}

/* The walk without a memo (a capture interrupting another, or no memo to
 * be had): at most MAX frames into FRAMES, or -1. */
static MT_NOINLINE int walk_plain(uintptr_t *frames, unsigned max, walk_state s)
{
    const uintptr_t base = mt_stack_base;
    const table *t = mt_atomic_load_acquire(&rules);
    unsigned n = 0;
    while (n < max) {
        mt_cfi_rule r = rule_of(s.ret, &t, NULL);
        frames[n++] = s.ret;
        int how = step(&s, r, base);
        if (how == STEP_FAIL)
            return -1;
        if (how != STEP_ON)
            break;
    }
    return (int)n;
}

/* The highest height at or below H one of whose checks no longer reads
 * what it read, or -1 when they all do (the common case: one pass over
 * the checks, no branch per word). */
static inline __attribute__((always_inline)) int first_changed(const memo *m, int h)
{
    const check *k = m->checks, *p = k;
    unsigned n = m->first_check[h + 1];
    /* The pass that grows with the stack's depth: four instructions a
     * check, eight checks a turn after the odd ones (a jump into the
     * first turn's tail). */
    uintptr_t diff = 0;
#define MT_CHECK(i) (*p[i].at ^ p[i].want)
    switch (n & 7) {
    case 7: diff |= MT_CHECK(6); /* fall through */
    case 6: diff |= MT_CHECK(5); /* fall through */
    case 5: diff |= MT_CHECK(4); /* fall through */
    case 4: diff |= MT_CHECK(3); /* fall through */
    case 3: diff |= MT_CHECK(2); /* fall through */
    case 2: diff |= MT_CHECK(1); /* fall through */
    case 1: diff |= MT_CHECK(0); /* fall through */
    case 0: break;
    }
    p += n & 7;
    for (const check *end = k + n; p < end; p += 8)
        diff |= (MT_CHECK(0) | MT_CHECK(1)) | (MT_CHECK(2) | MT_CHECK(3)) |
                (MT_CHECK(4) | MT_CHECK(5)) | (MT_CHECK(6) | MT_CHECK(7));
#undef MT_CHECK
    if (MT_LIKELY(diff == 0))
        return -1;
    for (int g = h; g >= 0; g--)
        for (unsigned i = m->first_check[g]; i < m->first_check[g + 1]; i++)
            if (*k[i].at != k[i].want)
                return g;
    return -1; /* not reached: some word differed */
}

/* Whether the rbp of a state matters to the walk from it: a step under R
 * uses it (an rbp-based CFA, or the end test of a frame without FDE), or
 * passes it on unread (R does not restore rbp) to a state where it
 * matters, given LIVE_ABOVE for the caller's state (false past the
 * outermost frame: nothing reads the end state's rbp). A state's rbp that
 * does not matter is neither compared when meeting the memo nor read back
 * when checking it: any value leads to the same frames. */
static inline bool bp_live(mt_cfi_rule r, bool live_above)
{
    bool uses = (mt_cfi_kind(r) == MT_CFI_STANDARD && mt_cfi_cfa_is_rbp(r)) || r == MT_CFI_NO_FDE;
    return uses || (!(mt_cfi_kind(r) == MT_CFI_STANDARD && mt_cfi_rbp_saved(r)) && live_above);
}

/* Writes the walk into M: heights [0, KEEP] stay, the F frames unwound
 * afresh go above them, and when nothing stays (KEEP -1) the walk's END
 * and END_S become the memo's. */
static inline __attribute__((always_inline)) void commit(memo *m, int keep, unsigned f,
                                                         unsigned end, const walk_state *end_s,
                                                         unsigned long forgets_now)
{
    unsigned n = (unsigned)(keep + 1) + f;
    if (keep < 0) {
        m->end = end;
        m->end_ret = end_s->ret;
        m->end_sp = end_s->sp;
        m->end_bp = end_s->bp;
    }
    if (f == 0) {
        m->n = n; /* all kept: nothing written, no new stamp */
        return;
    }
    unsigned long stamp = ++m->clock;
    unsigned c = keep < 0 ? 0 : m->first_check[keep + 1];
    /* One pass upwards: height H's checks read the state at H - 1, kept
     * or written just before. */
    const uintptr_t *f_ret = m->f_ret + f, *f_sp = m->f_sp + f, *f_bp = m->f_bp + f;
    const mt_cfi_rule *f_rule = m->f_rule + f;
    bool live_below = keep >= 0 && m->live[keep];
    for (unsigned h = (unsigned)(keep + 1); h < n; h++) {
        --f_ret, --f_sp, --f_bp, --f_rule; /* fresh frame n - 1 - h */
        mt_cfi_rule r = *f_rule;
        m->ret[h] = *f_ret;
        m->sp[h] = *f_sp;
        m->bp[h] = *f_bp;
        m->rule[h] = r;
        m->stamp[h] = stamp;
        m->first_check[h] = c;
        walk_state next;
        if (MT_LIKELY(h > 0))
            next = (walk_state){ m->ret[h - 1], m->sp[h - 1], m->bp[h - 1] };
        else if (m->end == END_READ || m->end == END_CUT)
            next = (walk_state){ m->end_ret, m->end_sp, m->end_bp };
        else
            next = (walk_state){ 0, 0, 0 }; /* the last frame's step read nothing */
        if (next.sp) {
            m->checks[c++] = (check){ (const uintptr_t *)next.sp - 1, next.ret };
            if (mt_cfi_rbp_saved(r) && live_below)
                m->checks[c++] =
                    (check){ (const uintptr_t *)(next.sp - mt_cfi_rbp_slot(r)), next.bp };
        }
        live_below = m->live[h] = bp_live(r, live_below);
    }
    m->first_check[n] = c;
    m->n = n;
    m->forgets = forgets_now;
}

/* The walk from state S with one of the thread's memos M, which it leaves
 * holding this walk, and the thread's rule cache MINE. Returns the stack's
 * frames (up to CAP), with M->end saying how it ended. */
static inline __attribute__((always_inline)) unsigned walk_memo(memo *m, rule_cache *mine,
                                                                walk_state s)
{
    const uintptr_t base = mt_stack_base;
    unsigned long forgets_now = mt_atomic_load_acquire(&forgets);
    const table *t = NULL; /* loaded by rule_of on a miss of MINE */
    if (MT_UNLIKELY(mine->forgets != forgets_now)) {
        memset(mine->s, 0, sizeof mine->s);
        mine->forgets = forgets_now;
    }
    /* The memo's heights H and below may still be met: their stack
     * pointers are at or above S.sp (both walks go up the stack). */
    int h = m->n > 0 && m->forgets == forgets_now ? (int)m->n - 1 : -1;
    unsigned f = 0, end = END_FAIL;
    int keep = -1;
    walk_state end_s = { 0, 0, 0 };
    for (;;) {
        mt_cfi_rule r;
        while (h >= 0 && m->sp[h] < s.sp)
            h--;
        if (h >= 0 && m->sp[h] == s.sp && m->ret[h] == s.ret && (m->bp[h] == s.bp || !m->live[h])) {
            unsigned total = f + (unsigned)h + 1;
            if (MT_UNLIKELY(total > CAP || (m->end == END_CUT && total < CAP))) {
                h = -1; /* the cut would move: the rest is unwound afresh */
                continue;
            }
            int g = first_changed(m, h);
            if (MT_LIKELY(g < 0)) {
                keep = h;
                break;
            }
            /* Heights H down to G are the memo's; G's step is made afresh.
             * Their rbp is followed again from S's: the memo's may be one
             * that did not matter there (bp_live) and matters here. */
            uintptr_t bp = s.bp;
            for (int k = h; k >= g; k--, f++) {
                m->f_ret[f] = m->ret[k];
                m->f_sp[f] = m->sp[k];
                m->f_bp[f] = bp;
                m->f_rule[f] = m->rule[k];
                if (k > g && mt_cfi_rbp_saved(m->rule[k]))
                    bp = *(const uintptr_t *)(m->sp[k - 1] - mt_cfi_rbp_slot(m->rule[k]));
            }
            s = (walk_state){ m->ret[g], m->sp[g], bp };
            r = m->rule[g];
            h = g - 1;
        } else {
            if (MT_UNLIKELY(f == CAP)) {
                end = END_CUT;
                end_s = s;
                break;
            }
            r = rule_of(s.ret, &t, mine);
            m->f_ret[f] = s.ret;
            m->f_sp[f] = s.sp;
            m->f_bp[f] = s.bp;
            m->f_rule[f] = r;
            f++;
        }
        int how = step(&s, r, base);
        if (MT_LIKELY(how == STEP_ON))
            continue;
        end = how == STEP_END_READ ? END_READ : how == STEP_END_NOREAD ? END_NOREAD : END_FAIL;
        end_s = s;
        break;
    }
    commit(m, keep, f, end, &end_s, forgets_now);
    return m->n;
}

/* Whether a memo walk of N frames gives a stack of MAX frames at most:
 * one that gave up did so at its last frame, which a walk stopping at MAX
 * frames reaches only when N <= MAX. */
static inline bool memo_walk_ok(const memo *m, unsigned max)
{
    return m->end != END_FAIL || m->n > max;
}

/* Finds the frame the program called memtrace from: its return address
 * in *RET and the address of the saved rbp and return address of
 * memtrace's outermost frame in *FP. False when this stack cannot be
 * unwound here. Inline: the walk up memtrace's own frames starts from the
 * caller's. */
static inline __attribute__((always_inline)) bool start(uintptr_t fp, walk_state *s)
{
    if (MT_UNLIKELY(mt_stack_known == 0))
        mt_stack_find(fp);
    if (MT_UNLIKELY(mt_stack_known < 0))
        return false;
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
            return false;
        fp = ((const uintptr_t *)fp)[0];
        ret = ((const uintptr_t *)fp)[1];
    }
    if (MT_UNLIKELY(fp < low || fp > base - 16))
        return false;
    *s = (walk_state){ .ret = ret, .sp = fp + 16, .bp = ((const uintptr_t *)fp)[0] };
    return true;
}

/* Whether this capture may use the thread's memo (and takes it if so). */
static inline bool memo_take(void)
{
    if (MT_UNLIKELY(tl.walking || (!tl.mine && !memo_get())))
        return false;
    tl.walking = true;
    return true;
}

/* Copies the innermost DEPTH frames of the memo M to FRAMES. */
static void memo_frames(const memo *m, uintptr_t *frames, unsigned depth)
{
    for (unsigned j = 0; j < depth; j++)
        frames[j] = m->ret[m->n - 1 - j];
}

MT_NOINLINE int mt_unwind_cfi(uintptr_t *frames, unsigned max)
{
    walk_state s;
    if (!start((uintptr_t)__builtin_frame_address(0), &s))
        return -1;
    if (!memo_take())
        return walk_plain(frames, max, s);
    memo *m = tl.mine;
    unsigned n = walk_memo(m, &m->rules, s);
    int depth = memo_walk_ok(m, max) ? (int)(n < max ? n : max) : -1;
    if (depth > 0)
        memo_frames(m, frames, (unsigned)depth);
    tl.walking = false;
    return depth;
}

/* Where the memo M of N frames would have interned its stack: a slot
 * chosen by the innermost three return addresses and N. A program with
 * many sites has many stacks through one allocating function (a
 * compiler's), at the same depth: the innermost address alone (with 64
 * slots) let them evict each other, and 77% of cc1plus's captures went to
 * mt_stack_intern, whose index probe misses the cache (7% of its profile,
 * perf); keyed so, with 1024 slots, 45% do. A slot is only a guess: a hit
 * is proved by memo_intern's comparison, whatever the key. */
static inline interned *interned_slot(memo *m, unsigned n)
{
    uintptr_t key = m->ret[n - 1];
    if (n > 2)
        key ^= m->ret[n - 2] * 3 + m->ret[n - 3] * 5;
    return &m->cache[((unsigned)((key * 0x9e3779b97f4a7c15ull) >> 50) ^ n) & interned_mask];
}

/* ID, the memo M's innermost DEPTH frames now, as M's last stack. */
static inline mt_stack_id remember(memo *m, mt_stack_id id, unsigned depth)
{
    m->last_id = id;
    m->last_n = m->n;
    m->last_depth = depth;
    m->last_clock = m->clock;
    return id;
}

/* The id of the memo's innermost DEPTH frames (see "Interning without
 * reading the whole stack" above). */
static inline mt_stack_id memo_intern(memo *m, unsigned depth)
{
    unsigned n = m->n;
    if (m->last_clock == m->clock && m->last_n == n && m->last_depth == depth && m->last_id)
        return m->last_id;
    uintptr_t inner = m->ret[n - 1];
    interned *e = interned_slot(m, n);
    if (e->id && e->n == n && e->inner == inner && e->depth == depth) {
        const uintptr_t *rec = e->rec;
        /* Heights [n - depth, n) are the stack; those stamped after the
         * record was proved the memo's are compared, the rest are equal. */
        int h = (int)n - 1, lowest = (int)(n - depth);
        for (; h >= lowest && m->stamp[h] > e->stamp; h--)
            if (rec[n - 1 - (unsigned)h] != m->ret[h])
                goto miss;
        e->stamp = m->clock;
        return remember(m, e->id, depth);
    }
miss:
    memo_frames(m, m->frames, depth);
    mt_stack_id id = mt_stack_intern(m->frames, depth);
    const uintptr_t *rec;
    if (id && mt_stack_get(id, &rec) == depth)
        *e = (interned){ .id = id,
                         .n = (uint16_t)n,
                         .depth = (uint16_t)depth,
                         .inner = inner,
                         .stamp = m->clock,
                         .rec = rec };
    return remember(m, id, depth);
}

/* A capture that cannot use the memo: walks into a buffer of its own. */
static MT_NOINLINE int stack_plain(unsigned max, walk_state s, mt_stack_id *id, uintptr_t *frames)
{
    uintptr_t buf[MT_MAX_DEPTH];
    int depth = walk_plain(buf, max, s);
    if (depth < 0)
        return -1;
    if (frames)
        memcpy(frames, buf, (unsigned)depth * sizeof *buf);
    *id = mt_stack_intern(buf, (unsigned)depth);
    return depth;
}

MT_NOINLINE int mt_unwind_cfi_stack(unsigned max, unsigned which, mt_stack_id *id,
                                    uintptr_t *frames)
{
    walk_state s;
    if (max > MT_MAX_DEPTH)
        max = MT_MAX_DEPTH;
    if (!start((uintptr_t)__builtin_frame_address(0), &s))
        return -1;
    if (!memo_take())
        return stack_plain(max, s, id, frames);
    memo *m = tl.mine + which;
    unsigned n = walk_memo(m, &tl.mine->rules, s);
    int depth = -1;
    if (memo_walk_ok(m, max)) {
        depth = (int)(n < max ? n : max);
        *id = memo_intern(m, (unsigned)depth); /* depth > 0: a walk keeps its first frame */
        if (frames)
            memo_frames(m, frames, (unsigned)depth);
    }
    tl.walking = false;
    return depth;
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
