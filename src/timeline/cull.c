/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Culling as the timeline is written (MEMTRACE_RECORD_CULL_MS,
 * bytehound's idea): an allocation is held back for CULL_NS; when its
 * free comes within that time, neither is written and its stack's count
 * of culled blocks grows (a C record per stack and drain). Held back in arrival order (a FIFO,
 * which each drain writes out from its old end) with an index by address
 * (open addressing, backward-shift deletion). The rings are drained in
 * turn, so a free by another thread may come before its allocation: it is
 * then written as it is, and so is the allocation, later (the reader
 * sorts by time). Under the drain lock only. */
#include "timeline/emit.h"

#include <string.h>
#include <sys/mman.h>

#define HOLD_NS 50000000ull

typedef struct {
    uint64_t t, addr, size;
    uint32_t stack, thread;
    bool culled;
} pending;

/* culled per stack since the last drain; TEMPS of them temporary */
typedef struct {
    uint32_t stack;
    uint64_t count, bytes, t, temps;
} count;

static struct {
    uint64_t cull_ns;
    pending *fifo; /* [head, tail) in use, indexes mod cap */
    uint64_t head, tail, cap;
    struct slot {
        uint64_t addr, pos1;
    } * index; /* pos1: fifo position + 1, 0 empty */
    uint64_t index_cap;
    count *counts;
    size_t counts_cap, counts_n;
} C;

static void *map(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

bool mt_tl_cull_init(uint64_t cull_ns)
{
    C.cull_ns = cull_ns;
    C.cap = 1 << 16;
    C.index_cap = 1 << 17;
    C.counts_cap = 1 << 8; /* a linear search: small */
    C.fifo = map(C.cap * sizeof *C.fifo);
    C.index = map(C.index_cap * sizeof *C.index);
    C.counts = map(C.counts_cap * sizeof *C.counts);
    return C.fifo && C.index && C.counts;
}

static uint64_t slot_of(uint64_t addr, uint64_t cap)
{
    return (addr >> 4) * 0x9e3779b97f4a7c15ull >> 17 & (cap - 1);
}

static pending *at(uint64_t pos)
{
    return &C.fifo[pos & (C.cap - 1)];
}

static void index_put(struct slot *index, uint64_t cap, uint64_t addr, uint64_t pos)
{
    uint64_t j = slot_of(addr, cap);
    while (index[j].pos1 && index[j].addr != addr)
        j = (j + 1) & (cap - 1);
    index[j] = (struct slot){ addr, pos + 1 };
}

/* The slot holding ADDR, or the empty one ending its probe. */
static uint64_t index_find(uint64_t addr)
{
    uint64_t j = slot_of(addr, C.index_cap);
    while (C.index[j].pos1 && C.index[j].addr != addr)
        j = (j + 1) & (C.index_cap - 1);
    return j;
}

static void index_remove(uint64_t j)
{
    uint64_t m = C.index_cap - 1;
    C.index[j].pos1 = 0;
    for (uint64_t k = (j + 1) & m; C.index[k].pos1; k = (k + 1) & m) {
        uint64_t home = slot_of(C.index[k].addr, C.index_cap);
        /* K's entry may move to J when J lies on its probe (home .. K) */
        if (((k - home) & m) >= ((k - j) & m)) {
            C.index[j] = C.index[k];
            C.index[k].pos1 = 0;
            j = k;
        }
    }
}

/* Doubles the FIFO (and the index with it); false when no memory. */
static bool grow(void)
{
    uint64_t cap = C.cap * 2, icap = C.index_cap * 2;
    pending *f = map(cap * sizeof *f);
    struct slot *ix = map(icap * sizeof *ix);
    if (!f || !ix) {
        if (f)
            munmap(f, cap * sizeof *f);
        if (ix)
            munmap(ix, icap * sizeof *ix);
        return false;
    }
    for (uint64_t pos = C.head; pos < C.tail; pos++)
        f[pos & (cap - 1)] = *at(pos);
    munmap(C.fifo, C.cap * sizeof *f);
    C.fifo = f;
    C.cap = cap;
    for (uint64_t j = 0; j < C.index_cap; j++)
        if (C.index[j].pos1)
            index_put(ix, icap, C.index[j].addr, C.index[j].pos1 - 1);
    munmap(C.index, C.index_cap * sizeof *ix);
    C.index = ix;
    C.index_cap = icap;
    return true;
}

/* Writes the oldest held allocation out. */
static void pop(void)
{
    pending *e = at(C.head);
    if (!e->culled) {
        uint64_t j = index_find(e->addr);
        if (C.index[j].pos1 == C.head + 1)
            index_remove(j);
        mt_tl_emit_alloc(e->thread, e->t, e->addr, e->size, e->stack);
    }
    C.head++;
}

void mt_tl_cull_alloc(uint32_t thread, uint64_t t, uint64_t addr, uint64_t size, uint32_t stack)
{
    if (C.tail - C.head == C.cap || 2 * (C.tail - C.head + 1) > C.index_cap) {
        if (!grow())
            pop();
    }
    *at(C.tail) = (pending){ t, addr, size, stack, thread, false };
    index_put(C.index, C.index_cap, addr, C.tail);
    C.tail++;
}

static void count_culled(const pending *e, bool temp)
{
    size_t i = 0;
    while (i < C.counts_n && C.counts[i].stack != e->stack)
        i++;
    if (i == C.counts_n) {
        if (C.counts_n == C.counts_cap) { /* full: written now, counting goes on */
            mt_tl_emit_culled(e->t, e->stack, 1, e->size, temp);
            return;
        }
        C.counts[C.counts_n++] = (count){ e->stack, 0, 0, 0, 0 };
    }
    count *c = &C.counts[i];
    c->count++;
    c->bytes += e->size;
    c->temps += temp;
    if (e->t > c->t)
        c->t = e->t;
    if (c->count == MT_TL_CULLED_MAX) { /* the record's bound: written now */
        mt_tl_emit_culled(c->t, c->stack, c->count, c->bytes, c->temps);
        c->count = c->bytes = c->temps = 0;
    }
}

bool mt_tl_cull_free(uint64_t t, uint64_t addr, mt_temp_state *latest)
{
    uint64_t j = index_find(addr);
    if (!C.index[j].pos1)
        return false;
    pending *e = at(C.index[j].pos1 - 1);
    index_remove(j);
    if (t < e->t || t - e->t > C.cull_ns)
        return false; /* the allocation is written when its time comes, then this free */
    e->culled = true;
    count_culled(e, mt_temp_free(latest, e->stack, e->size));
    return true;
}

void mt_tl_cull_expire(uint64_t now)
{
    /* what a thread appended just before this drain began is older than
     * NOW by about a drain (10 ms, more on a busy machine): held HOLD_NS
     * more, its free can still come */
    while (C.head < C.tail && (now == UINT64_MAX || at(C.head)->t + C.cull_ns + HOLD_NS < now))
        pop();
    for (size_t i = 0; i < C.counts_n; i++)
        if (C.counts[i].count)
            mt_tl_emit_culled(C.counts[i].t, C.counts[i].stack, C.counts[i].count,
                              C.counts[i].bytes, C.counts[i].temps);
    C.counts_n = 0;
}
