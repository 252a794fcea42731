/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The leak scan (leak_scan.h): blocks sorted by start, a binary search per
 * word that falls between the lowest start and the highest end, and one
 * worklist of block indexes. Every block's contents are read at most three
 * times (twice while marking from the roots: as possibly lost, then again
 * if a start pointer makes it reachable; once while grouping the lost
 * ones), so the cost is the sort plus the words of the roots and the
 * blocks. The entries come from a table a wild write or a damaged core may
 * have changed: before marking, the blocks that wrap, lie outside the
 * mappings or overlap are dropped (drop_damaged), so the kept blocks are
 * disjoint and mapped, and no loop's bound comes from an entry alone.
 *
 * Invariants while it runs: in the first phase a block's class only rises,
 * UNSEEN -> POSSIBLE -> REACHABLE, and it is pushed on the worklist at each
 * rise, so at most twice (the worklist has 2 * NBLOCKS entries); a block
 * popped is scanned as its class is then (a rise while it waited only
 * means it is scanned again). UNSEEN blocks were reached by nothing scanned
 * so far. In the second phase an index is pushed at most once. Only
 * mmap'ed memory is used: this file links into the library and into
 * memtrace-symbolize alike, with no memtrace store behind it. */
#include "scan/leak_scan.h"

#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* A class value the caller never sees: not reached by anything scanned yet. */
#define UNSEEN 7u
/* An internal flag: the block's contents were read once (a block that
 * cannot be read is counted once). */
#define SCANNED 0x8000u

/* Bytes READ is asked for at a time when scanning a root region or a
 * large block: a region that is partly unreadable loses only the chunks
 * that fail. */
#define CHUNK ((size_t)64 << 10)

struct scan {
    mt_leak_block *b;
    size_t n;
    uintptr_t lo, hi; /* lowest start, highest end (+1 for an empty block) */
    uint32_t *work;
    size_t top;
    size_t leader; /* phase 2: the lost block whose group is being marked */
    int phase;
    bool definite;    /* phase 1: what is scanned is a root or a reachable block */
    bool starts_only; /* phase 1: what is scanned is a root with starts_only */
    const mt_leak_input *in;
    mt_leak_totals *t;
    /* Phase 1, the heuristics: per block, the offset + 1 of an interior
     * pointer from a root or a reachable block still to be tried (0:
     * none), and the blocks that have one, a stack of at most N (a block
     * is on it once at a time). */
    uint32_t *cand;
    uint32_t *pending;
    size_t npending;
};

ptrdiff_t mt_leak_find(const mt_leak_block *b, size_t n, uintptr_t addr)
{
    size_t lo = 0, hi = n; /* the answer is the last start <= addr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b[mid].ptr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    const mt_leak_block *e = &b[lo - 1];
    if (addr - e->ptr < e->size || addr == e->ptr)
        return (ptrdiff_t)(lo - 1);
    return -1;
}

/* WORD was found in a root (phase 1) or in a block being followed. */
static inline void hit(struct scan *s, uintptr_t word)
{
    if (word < s->lo || word >= s->hi)
        return;
    ptrdiff_t i = mt_leak_find(s->b, s->n, word);
    if (i < 0)
        return;
    mt_leak_block *e = &s->b[i];
    if (s->phase == 1) {
        /* memcheck's rule: a start pointer from a root or a reachable
         * block makes it reachable; any other pointer makes an unseen
         * block possibly lost. */
        bool start = word == e->ptr;
        if (e->class == MT_LEAK_REACHABLE || (!start && s->starts_only))
            return;
        if (!start && s->definite && !(word & 7)) {
            /* Tried after this scan (reading the block now would reuse
             * the buffer being scanned): the offsets of new[]'s count and
             * std::string's header first, any other for a second base. */
            uint64_t off = word - e->ptr;
            uint32_t had = s->cand[i];
            if (off < UINT32_MAX && (!had || off == 8 || off == 24)) {
                if (!had)
                    s->pending[s->npending++] = (uint32_t)i;
                s->cand[i] = (uint32_t)off + 1;
            }
        }
        if (start && s->definite)
            e->class = MT_LEAK_REACHABLE;
        else if (e->class == UNSEEN)
            e->class = MT_LEAK_POSSIBLE;
        else
            return;
    } else {
        /* Reached and possibly lost blocks and the group's own leader stay
         * as they are; a block an earlier leader reached is already
         * INDIRECT; an earlier leader (DEFINITE) joins this group with
         * what it holds, which is in the group already, so it is not
         * followed again. */
        if ((size_t)i == s->leader || e->class == MT_LEAK_REACHABLE ||
            e->class == MT_LEAK_POSSIBLE || e->class == MT_LEAK_INDIRECT)
            return;
        mt_leak_block *leader = &s->b[s->leader];
        bool follow = e->class == UNSEEN;
        leader->held_bytes += e->size + e->held_bytes;
        leader->held_blocks += 1 + e->held_blocks;
        e->held_bytes = 0;
        e->held_blocks = 0;
        e->class = MT_LEAK_INDIRECT;
        if (!follow)
            return;
    }
    s->work[s->top++] = (uint32_t)i;
}

static void scan_words(struct scan *s, const void *p, size_t len)
{
    const uintptr_t *w = p;
    for (size_t k = 0; k < len / sizeof *w; k++)
        hit(s, w[k]);
}

/* Reads [LO, HI) in chunks, 8-byte aligned inside; returns the bytes READ
 * refused or the mappings do not hold. With IN->region, only the readable
 * pieces are asked for, so the loop runs once per piece and per chunk read,
 * however far HI is. */
static uint64_t scan_range(struct scan *s, uintptr_t lo, uintptr_t hi)
{
    uint64_t refused = 0;
    lo = (lo + 7) & ~(uintptr_t)7;
    hi &= ~(uintptr_t)7;
    for (uintptr_t a = lo; a < hi;) {
        uintptr_t stop = hi;
        int kind = MT_MEM_READABLE;
        if (s->in->region) {
            uintptr_t end = 0;
            kind = s->in->region(s->in->read_ctx, a, &end);
            if (end > a && end < hi)
                stop = end; /* else the piece reaches past HI (or a bad answer: skip all) */
        }
        if (kind != MT_MEM_READABLE) {
            refused += stop - a;
            a = (stop + 7) & ~(uintptr_t)7;
            continue;
        }
        stop &= ~(uintptr_t)7;
        while (a < stop) {
            size_t len = stop - a < CHUNK ? stop - a : CHUNK;
            const void *p = s->in->read(s->in->read_ctx, a, len);
            if (p)
                scan_words(s, p, len);
            else
                refused += len;
            a += len;
        }
        a = (a + 7) & ~(uintptr_t)7;
    }
    return refused;
}

/* scan_range over the pieces of [LO, HI) that no kept block covers. */
static uint64_t scan_outside_blocks(struct scan *s, uintptr_t lo, uintptr_t hi)
{
    size_t k = 0, top = s->n; /* the first block ending above LO */
    while (k < top) {
        size_t mid = k + (top - k) / 2;
        if (s->b[mid].ptr + s->b[mid].size <= lo)
            k = mid + 1;
        else
            top = mid;
    }
    uint64_t refused = 0;
    for (uintptr_t a = lo; a < hi; k++) {
        uintptr_t stop = k < s->n && s->b[k].ptr < hi ? s->b[k].ptr : hi;
        if (stop > a)
            refused += scan_range(s, a, stop);
        if (stop == hi)
            break;
        uintptr_t end = s->b[k].ptr + s->b[k].size;
        if (end > a)
            a = end;
    }
    return refused;
}

/* The word at ADDR of the target into *V. */
static bool word_at(struct scan *s, uintptr_t addr, uintptr_t *v)
{
    const void *p = s->in->read(s->in->read_ctx, addr, sizeof *v);
    if (p)
        memcpy(v, p, sizeof *v);
    return p != NULL;
}

/* Whether an interior pointer OFF bytes into E counts as a start pointer
 * by one of memcheck's heuristics (leak_scan.h). Reads up to 4 words. */
static bool heuristic(struct scan *s, const mt_leak_block *e, uint64_t off)
{
    uintptr_t w0, w1, inner;
    if (e->size < 8 || !word_at(s, e->ptr, &w0))
        return false;
    if (off == 8 && w0 > 0 && ((e->size - 8) == w0 || (e->size - 8) % w0 == 0))
        return true; /* length64, newarray */
    if (off == 24 && e->size > 24 && word_at(s, e->ptr + 8, &w1) && 25 + w1 == e->size && w0 <= w1)
        return true; /* stdstring */
    if (s->in->vtable && off + 8 <= e->size && word_at(s, e->ptr + off, &inner) && !(inner & 7) &&
        inner >= 4096 && !(w0 & 7) && w0 >= 4096 && s->in->vtable(s->in->read_ctx, inner) &&
        s->in->vtable(s->in->read_ctx, w0))
        return true; /* multipleinheritance */
    return false;
}

static void drain(struct scan *s);

/* Phase 1's last step: the interior pointers kept for the heuristics are
 * tried; a block one of them matches becomes reachable, and what it
 * reaches is marked (which may keep more to try). */
static void drain_heuristics(struct scan *s)
{
    while (s->npending) {
        uint32_t i = s->pending[--s->npending];
        uint64_t off = (uint64_t)s->cand[i] - 1;
        s->cand[i] = 0;
        mt_leak_block *e = &s->b[i];
        if (e->class == MT_LEAK_REACHABLE || !heuristic(s, e, off))
            continue;
        e->class = MT_LEAK_REACHABLE;
        s->work[s->top++] = i;
        drain(s);
    }
}

static void drain(struct scan *s)
{
    while (s->top) {
        mt_leak_block *e = &s->b[s->work[--s->top]];
        s->definite = e->class == MT_LEAK_REACHABLE;
        s->starts_only = false;
        if (scan_range(s, e->ptr, e->ptr + e->size) && !(e->flags & SCANNED))
            s->t->unreadable_blocks++;
        e->flags |= SCANNED;
    }
}

static bool less(const mt_leak_block *a, const mt_leak_block *b)
{
    return a->ptr < b->ptr;
}

static void sift(mt_leak_block *b, size_t root, size_t n)
{
    for (;;) {
        size_t c = 2 * root + 1;
        if (c >= n)
            return;
        if (c + 1 < n && less(&b[c], &b[c + 1]))
            c++;
        if (!less(&b[root], &b[c]))
            return;
        mt_leak_block t = b[root];
        b[root] = b[c];
        b[c] = t;
        root = c;
    }
}

/* Heapsort: no recursion, no extra memory, n log n at worst (qsort may
 * call malloc, which is what is being examined). Blocks already in order
 * (mt_leak_gather_heap sorted them for an attached process) cost one pass. */
static void sort_blocks(mt_leak_block *b, size_t n)
{
    size_t sorted = 1;
    while (sorted < n && b[sorted - 1].ptr <= b[sorted].ptr)
        sorted++;
    if (sorted >= n)
        return;
    for (size_t i = n / 2; i-- > 0;)
        sift(b, i, n);
    for (size_t end = n; end > 1; end--) {
        mt_leak_block t = b[0];
        b[0] = b[end - 1];
        b[end - 1] = t;
        sift(b, 0, end - 1);
    }
}

/* How many pieces a block may span before it counts as damaged: a heap
 * block lies in one mapping, or a few where the program changed the
 * protection of part of it. */
#define MAX_PIECES 64

/* True if [PTR, PTR + SIZE) lies in mapped memory (readable or not). */
static bool in_mappings(const mt_leak_input *in, uintptr_t ptr, uint64_t size)
{
    if (!in->region)
        return true;
    uintptr_t a = ptr, end = ptr + (size ? size : 1);
    for (int k = 0; k < MAX_PIECES; k++) {
        uintptr_t piece_end = 0;
        if (in->region(in->read_ctx, a, &piece_end) == MT_MEM_NONE || piece_end <= a)
            return false;
        if (piece_end >= end)
            return true;
        a = piece_end;
    }
    return false;
}

/* Whether INNER, a block of the program's pool, lies whole in OUTER, a
 * block that is not: OUTER is then the pool's storage (MT_LEAK_FLAG_POOL). */
static bool pool_within(const mt_leak_block *inner, const mt_leak_block *outer)
{
    return (inner->flags & MT_LEAK_FLAG_POOL) && !(outer->flags & MT_LEAK_FLAG_POOL) &&
           inner->ptr >= outer->ptr && inner->ptr - outer->ptr <= outer->size &&
           inner->size <= outer->size - (inner->ptr - outer->ptr);
}

/* Moves the good blocks of the sorted B[0..N) to its front, keeping their
 * order, and returns how many; counts the others in T. One pass with the
 * kept blocks as a stack: a block overlapping the last kept one drops both
 * (which of the two lies cannot be told), and the next is compared with
 * the kept block before them, whose end is at or below its start, so one
 * bad size drops two entries, not every block it covers. The exception is
 * a pool block inside a block that is not one (either order: both may
 * start at one address): the outer block, the pool's storage, is dropped
 * alone; the pool's next blocks then meet only each other. */
static size_t drop_damaged(const mt_leak_input *in, mt_leak_block *b, size_t n, mt_leak_totals *t)
{
    size_t kept = 0;
    uintptr_t first = UINTPTR_MAX;
    for (size_t i = 0; i < n; i++) {
        mt_leak_block e = b[i];
        uintptr_t end = e.ptr + (e.size ? e.size : 1);
        bool bad = (e.flags & MT_LEAK_FLAG_DAMAGED) || end < e.ptr ||
                   !in_mappings(in, e.ptr, e.size);
        if (!bad && kept && pool_within(&b[kept - 1], &e) && e.ptr == b[kept - 1].ptr) {
            t->pool_storage++; /* E is the storage of the pool block kept */
            continue;
        }
        while (!bad && kept && pool_within(&e, &b[kept - 1])) {
            t->pool_storage++; /* the storage goes, E stays */
            kept--;
        }
        if (!bad && kept) {
            const mt_leak_block *last = &b[kept - 1];
            if (e.ptr < last->ptr + (last->size ? last->size : 1)) {
                bad = true;
                t->damaged++;
                if (last->ptr < first)
                    first = last->ptr;
                kept--;
            }
        }
        if (bad) {
            t->damaged++;
            if (e.ptr < first)
                first = e.ptr;
            continue;
        }
        b[kept++] = e;
    }
    t->first_damaged = t->damaged ? first : 0;
    return kept;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void mt_leak_sort(mt_leak_block *blocks, size_t n)
{
    sort_blocks(blocks, n);
}

bool mt_leak_scan(const mt_leak_input *in, mt_leak_totals *out)
{
    *out = (mt_leak_totals){ 0 };
    double start = now_seconds();
    size_t n = in->nblocks;
    if (n > UINT32_MAX)
        return false;
    /* The worklist (2 N), then the heuristics' CAND and PENDING (N each). */
    size_t work_bytes = (n ? 4 * n : 1) * sizeof(uint32_t);
    uint32_t *work =
        mmap(NULL, work_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (work == MAP_FAILED)
        return false;
    sort_blocks(in->blocks, n);
    n = drop_damaged(in, in->blocks, n, out);
    struct scan s = { .b = in->blocks,
                      .n = n,
                      .work = work,
                      .phase = 1,
                      .in = in,
                      .t = out,
                      .cand = work + 2 * in->nblocks,
                      .pending = work + 3 * in->nblocks };
    s.lo = n ? s.b[0].ptr : 1;
    for (size_t i = 0; i < n; i++) {
        s.b[i].class = UNSEEN;
        s.b[i].held_bytes = 0;
        s.b[i].held_blocks = 0;
        uintptr_t end = s.b[i].ptr + (s.b[i].size ? s.b[i].size : 1);
        if (end > s.hi)
            s.hi = end;
    }

    /* Phase 1: everything the roots reach, through any number of blocks. */
    for (size_t i = 0; i < n; i++) {
        if (s.b[i].flags & MT_LEAK_FLAG_ROOT) {
            s.b[i].class = MT_LEAK_REACHABLE;
            s.work[s.top++] = (uint32_t)i;
        }
    }
    drain(&s);
    for (size_t r = 0; r < in->nroots; r++) {
        s.definite = true;
        s.starts_only = in->roots[r].starts_only;
        if (in->roots[r].outside_blocks)
            out->unreadable_root_bytes += scan_outside_blocks(&s, in->roots[r].lo, in->roots[r].hi);
        else
            out->unreadable_root_bytes += scan_range(&s, in->roots[r].lo, in->roots[r].hi);
        drain(&s);
    }
    for (size_t k = 0; k < in->nwords; k++) {
        s.definite = true;
        s.starts_only = false;
        hit(&s, in->words[k]);
        drain(&s);
    }
    s.definite = true;
    drain_heuristics(&s);

    /* Phase 2, as valgrind's memcheck groups lost blocks ("cliques"): each
     * block not reached yet leads a group and marks INDIRECT every lost
     * block it reaches but itself (by a start or an interior pointer,
     * alike), counting them in its HELD fields; a leader reached by a later
     * leader joins that one's group with what it held. The last leader of any chain of groups is
     * never reached by a later one, so every lost structure, a cycle included, keeps one DEFINITE
     * block and none vanishes. */
    s.phase = 2;
    s.npending = 0;
    for (size_t i = 0; i < n; i++) {
        if (s.b[i].class != UNSEEN)
            continue;
        s.b[i].class = MT_LEAK_DEFINITE;
        s.leader = i;
        s.work[s.top++] = (uint32_t)i;
        drain(&s);
    }
    for (size_t i = 0; i < n; i++) {
        s.b[i].flags &= (uint16_t)~SCANNED;
        out->bytes[s.b[i].class] += s.b[i].size;
        out->blocks[s.b[i].class]++;
    }
    munmap(work, work_bytes);
    out->seconds = now_seconds() - start;
    return true;
}
