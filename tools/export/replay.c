/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The replay of a timeline (timeline.h): its events sorted by time, then
 * two passes of a table of the live blocks by address: (1) the totals,
 * the series of the whole, each site's live bytes at the peak; (2) the
 * series of the top sites by those. A
 * free of an address not live (a block from before the timeline began,
 * or made while recording was off) is no event of the timeline; an allocation at a live
 * address ends that block first (its free was missed). */
#include "timeline.h"
#include "store/temporary.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t addr; /* 0: empty slot */
    uint64_t size, t;
    uint32_t site, thread;
} live;

typedef struct {
    live *slot;
    size_t cap, n;
} table;

static size_t home(const table *tb, uint64_t addr)
{
    return (size_t)((addr >> 4) * 0x9e3779b97f4a7c15ull >> 20) & (tb->cap - 1);
}

static size_t find(const table *tb, uint64_t addr)
{
    size_t j = home(tb, addr);
    while (tb->slot[j].addr && tb->slot[j].addr != addr)
        j = (j + 1) & (tb->cap - 1);
    return j;
}

static void put(table *tb, const live *e);

static void grow(table *tb)
{
    table old = *tb;
    tb->cap = old.cap ? old.cap * 2 : 1 << 16;
    tb->slot = calloc(tb->cap, sizeof *tb->slot);
    if (!tb->slot)
        die_oom();
    tb->n = 0;
    for (size_t i = 0; i < old.cap; i++)
        if (old.slot[i].addr)
            put(tb, &old.slot[i]);
    free(old.slot);
}

static void put(table *tb, const live *e)
{
    if (2 * (tb->n + 1) > tb->cap)
        grow(tb);
    size_t j = find(tb, e->addr);
    if (!tb->slot[j].addr)
        tb->n++;
    tb->slot[j] = *e;
}

static void take(table *tb, size_t j)
{
    size_t m = tb->cap - 1;
    tb->slot[j].addr = 0;
    tb->n--;
    for (size_t k = (j + 1) & m; tb->slot[k].addr; k = (k + 1) & m) {
        size_t h = home(tb, tb->slot[k].addr);
        if (((k - h) & m) >= ((k - j) & m)) {
            tb->slot[j] = tb->slot[k];
            tb->slot[k].addr = 0;
            j = k;
        }
    }
}

static int by_time(const void *a, const void *b)
{
    const tl_event *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

static int by_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    tl_file *r;
    tl_timeline *t;
    uint32_t *ids; /* the sites' stack ids, sorted: a site's index */
    size_t nids;
    tl_site *by_index;
    table live;
    mt_temp_state *last; /* per thread: its latest allocation's kind (store/temporary.h) */
    size_t nlast;
    uint64_t epoch; /* raises of the peak so far (touch) */
} replay;

static uint32_t site_of(const replay *rp, uint32_t stack)
{
    const uint32_t *p = bsearch(&stack, rp->ids, rp->nids, sizeof *p, by_u32);
    return (uint32_t)(p - rp->ids);
}

/* Before a change to site S: its live bytes saved as its value at the
 * latest peak, when it has not changed since (the profiler's copy on
 * write, store/site.h: EPOCH counts the raises of the peak). */
static void touch(replay *rp, tl_site *s)
{
    if (s->epoch != rp->epoch) {
        s->peak_bytes = s->live;
        s->epoch = rp->epoch;
    }
}

static mt_temp_state *last_of(replay *rp, uint32_t thread)
{
    if (thread >= rp->nlast) {
        size_t n = thread + 64;
        rp->last = tl_xrealloc(rp->last, n * sizeof *rp->last);
        memset(rp->last + rp->nlast, 0, (n - rp->nlast) * sizeof *rp->last);
        rp->nlast = n;
    }
    return &rp->last[thread];
}

/* One event of pass PASS: the live table and *BYTES, *BLOCKS moved, the
 * sites' numbers counted (pass 1) or their live bytes (pass 2). */
static void step(replay *rp, const tl_event *e, int pass, uint64_t *bytes, uint64_t *blocks)
{
    tl_timeline *t = rp->t;
    int kind = (int)(e->thread_kind & 0xff);
    uint32_t thread = e->thread_kind >> 8;
    if (kind == EV_CULLED) {
        if (pass == 1) {
            tl_site *s = &rp->by_index[e->stack];
            uint32_t temps = thread; /* timeline.h: a culled count's thread bits */
            s->allocations += e->addr;
            s->allocated_bytes += e->size;
            s->temporary += temps;
            t->allocations += e->addr;
            t->frees += e->addr;
            t->allocated_bytes += e->size;
            t->temporary += temps;
        }
        return;
    }
    if (pass == 1 && kind == EV_FREE_ARMED) /* the culled events' latest kind */
        mt_temp_alloc(last_of(rp, thread), e->stack, e->size);
    else if (pass == 1 && kind == EV_FREE_DISARMED)
        last_of(rp, thread)->armed = false;
    size_t j = find(&rp->live, e->addr);
    if (rp->live.slot[j].addr) { /* a free, or a missed one */
        live *b = &rp->live.slot[j];
        tl_site *s = &rp->by_index[b->site];
        if (pass == 1)
            touch(rp, s);
        *bytes -= b->size;
        *blocks -= 1;
        s->live -= b->size;
        if (pass == 1 && ev_is_free(kind)) {
            t->frees++;
            if (mt_temp_free(last_of(rp, thread), b->site, b->size)) {
                t->temporary++;
                s->temporary++;
            }
        }
        take(&rp->live, j);
    }
    if (kind != EV_ALLOC)
        return;
    live b = { e->addr, e->size, e->t, e->stack, thread };
    put(&rp->live, &b);
    *bytes += e->size;
    *blocks += 1;
    tl_site *s = &rp->by_index[b.site];
    if (pass == 1)
        touch(rp, s);
    s->live += e->size;
    if (pass == 1) {
        s->allocations++;
        s->allocated_bytes += e->size;
        t->allocations++;
        t->allocated_bytes += e->size;
        mt_temp_alloc(last_of(rp, thread), b.site, e->size);
    }
}

static void reset(replay *rp)
{
    free(rp->live.slot);
    memset(&rp->live, 0, sizeof rp->live);
    grow(&rp->live);
    for (size_t i = 0; i < rp->nids; i++)
        rp->by_index[i].live = 0;
}

static int by_peak(const void *a, const void *b)
{
    const tl_site *x = a, *y = b;
    if (x->peak_bytes != y->peak_bytes)
        return x->peak_bytes > y->peak_bytes ? -1 : 1;
    if (x->allocated_bytes != y->allocated_bytes)
        return x->allocated_bytes > y->allocated_bytes ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The sites: one per stack id of an allocation, by id. */
static void make_sites(replay *rp)
{
    tl_file *r = rp->r;
    rp->ids = tl_xrealloc(NULL, (r->nev + 1) * sizeof *rp->ids);
    for (size_t i = 0; i < r->nev; i++)
        if (ev_has_stack((int)(r->ev[i].thread_kind & 0xff)))
            rp->ids[rp->nids++] = r->ev[i].stack;
    qsort(rp->ids, rp->nids, sizeof *rp->ids, by_u32);
    size_t n = 0;
    for (size_t i = 0; i < rp->nids; i++)
        if (n == 0 || rp->ids[i] != rp->ids[n - 1])
            rp->ids[n++] = rp->ids[i];
    rp->nids = n;
    rp->by_index = calloc(n + 1, sizeof *rp->by_index);
    if (!rp->by_index)
        die_oom();
    for (size_t i = 0; i < n; i++)
        rp->by_index[i].id = rp->ids[i];
    for (size_t i = 0; i < r->nev; i++) /* from here on an event names its site's index */
        if (ev_has_stack((int)(r->ev[i].thread_kind & 0xff)))
            r->ev[i].stack = site_of(rp, r->ev[i].stack);
}

/* The sample times: evenly from 0 to the end, at most MAX. */
static void make_samples(const tl_file *r, tl_timeline *t, size_t max)
{
    size_t ns = max < 2 ? 2 : max;
    if (r->duration_ns < ns)
        ns = (size_t)r->duration_ns + 1;
    t->nsamples = ns;
    t->times = tl_xrealloc(NULL, ns * sizeof(uint64_t));
    t->bytes = calloc(ns, sizeof(uint64_t));
    t->blocks = calloc(ns, sizeof(uint64_t));
    t->allocs = calloc(ns, sizeof(uint64_t));
    if (!t->bytes || !t->blocks || !t->allocs)
        die_oom();
    for (size_t i = 0; i < ns; i++)
        t->times[i] = ns == 1 ? 0 : (uint64_t)((unsigned __int128)r->duration_ns * i / (ns - 1));
}

/* Pass 1: the totals, the whole's series, the leaks, each site's bytes
 * at the peak; the peak's event. */
static size_t pass_totals(replay *rp)
{
    tl_file *r = rp->r;
    tl_timeline *t = rp->t;
    uint64_t bytes = 0, blocks = 0;
    size_t peak_at = SIZE_MAX, si = 0, ns = t->nsamples;
    reset(rp);
    for (size_t i = 0; i < r->nev; i++) {
        const tl_event *e = &r->ev[i];
        while (si < ns && t->times[si] < e->t) {
            t->bytes[si] = bytes;
            t->blocks[si] = blocks;
            si++;
        }
        uint64_t before = t->allocations;
        step(rp, e, 1, &bytes, &blocks);
        if (si < ns)
            t->allocs[si] += t->allocations - before;
        if (bytes > t->peak_bytes) {
            t->peak_bytes = bytes;
            t->peak_blocks = blocks;
            t->peak_time = e->t;
            peak_at = i;
            rp->epoch++;
        }
    }
    for (; si < ns; si++) {
        t->bytes[si] = bytes;
        t->blocks[si] = blocks;
    }
    t->leaked_bytes = bytes;
    t->leaked_blocks = blocks;
    for (size_t j = 0; j < rp->live.cap; j++)
        if (rp->live.slot[j].addr) {
            tl_site *s = &rp->by_index[rp->live.slot[j].site];
            s->leaked_bytes += rp->live.slot[j].size;
            s->leaked_blocks++;
        }
    for (size_t i = 0; i < rp->nids; i++) /* unchanged since the peak: live then */
        if (rp->by_index[i].epoch != rp->epoch)
            rp->by_index[i].peak_bytes = rp->by_index[i].live;
    return peak_at;
}

/* Pass 2: the series of SORTED's first TOP sites. */
static void pass_series(replay *rp, tl_site *sorted, size_t top)
{
    tl_file *r = rp->r;
    tl_timeline *t = rp->t;
    size_t ns = t->nsamples, si = 0;
    uint64_t bytes = 0, blocks = 0;
    uint32_t *idx = tl_xrealloc(NULL, (top + 1) * sizeof *idx);
    for (size_t k = 0; k < top; k++)
        if (!(rp->by_index[idx[k] = site_of(rp, sorted[k].id)].bytes =
                  calloc(ns, sizeof(uint64_t))))
            die_oom();
    reset(rp);
    for (size_t i = 0; i <= r->nev; i++) {
        uint64_t te = i < r->nev ? r->ev[i].t : UINT64_MAX;
        for (; si < ns && t->times[si] < te; si++)
            for (size_t k = 0; k < top; k++) {
                tl_site *s = &rp->by_index[idx[k]];
                s->bytes[si] = s->live;
            }
        if (i < r->nev)
            step(rp, &r->ev[i], 2, &bytes, &blocks);
    }
    for (size_t k = 0; k < top; k++)
        sorted[k].bytes = rp->by_index[idx[k]].bytes;
    free(idx);
}

void tl_sort(tl_file *r)
{
    qsort(r->ev, r->nev, sizeof *r->ev, by_time);
}

bool tl_replay(tl_file *r, tl_timeline *t, size_t max_samples)
{
    memset(t, 0, sizeof *t);
    tl_sort(r);
    replay rp = { .r = r, .t = t };
    make_sites(&rp);
    if (r->nev && r->ev[r->nev - 1].t > r->duration_ns)
        r->duration_ns = r->ev[r->nev - 1].t;
    make_samples(r, t, max_samples);
    pass_totals(&rp);

    tl_site *sorted = tl_xrealloc(NULL, (rp.nids + 1) * sizeof *sorted);
    memcpy(sorted, rp.by_index, rp.nids * sizeof *sorted);
    qsort(sorted, rp.nids, sizeof *sorted, by_peak);
    pass_series(&rp, sorted, rp.nids < TL_TOP_SERIES ? rp.nids : TL_TOP_SERIES);
    t->sites = sorted;
    t->nsites = rp.nids;
    free(rp.by_index);
    free(rp.ids);
    free(rp.live.slot);
    free(rp.last);
    return true;
}
