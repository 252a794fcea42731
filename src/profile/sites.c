/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The profiler's site table: one entry per stored stack, in the order the
 * stacks were stored, filled by walks that read each stack's counters
 * (site.h), and ranked for the reports. A walk reads from the stack store
 * only the stacks stored since the last one (mt_stack_foreach_new); the
 * known sites' counters are read by their site numbers. All of it under
 * mt_prof_report_lock, inside memtrace: its memory is the internal heap's. */
#include "profile/prof_internal.h"

#include "base/atomic.h"
#include "base/config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

mt_lock mt_prof_report_lock = MT_LOCK_INIT;

void mt_prof_lock(void)
{
    while (!mt_lock_try(&mt_prof_report_lock)) {
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
}

void mt_prof_unlock(void)
{
    mt_lock_release(&mt_prof_report_lock);
}

struct mt_prof_site *mt_prof_sites;
size_t mt_prof_nsites;
static size_t sites_cap;
/* Every stack stored before it has its site, in mt_prof_sites. */
static mt_stack_cursor walked;

/* The site table's first capacity (mt_prof_reserve_sites). */
#define SITES_FIRST 1024

/* mt_prof_largest's work array, one entry per site: grown with the site
 * table, so that ranking needs no memory when the heap is full. */
struct ranked {
    uint64_t key;
    struct mt_prof_site *site;
};
static struct ranked *rank_buf;

void mt_prof_reserve_sites(void)
{
    rank_buf = malloc(SITES_FIRST * sizeof *rank_buf);
    if (!rank_buf)
        return;
    mt_prof_sites = malloc(SITES_FIRST * sizeof *mt_prof_sites);
    if (!mt_prof_sites) {
        free(rank_buf);
        rank_buf = NULL;
        return;
    }
    sites_cap = SITES_FIRST;
}

/* A site for stack ID, the next stored; false when the internal heap is
 * full (the walk stops there, and the next one offers it again). */
static bool add_site(mt_stack_id id, const uintptr_t *frames, unsigned depth, void *ctx)
{
    (void)ctx;
    if (mt_prof_nsites == sites_cap) {
        size_t cap = sites_cap ? sites_cap * 2 : SITES_FIRST;
        struct ranked *rb = realloc(rank_buf, cap * sizeof *rb);
        if (!rb)
            return false;
        rank_buf = rb;
        struct mt_prof_site *s = realloc(mt_prof_sites, cap * sizeof *s);
        if (!s)
            return false;
        mt_prof_sites = s;
        sites_cap = cap;
    }
    struct mt_prof_site *s = &mt_prof_sites[mt_prof_nsites++];
    memset(s, 0, sizeof *s);
    s->id = id;
    s->frames = frames;
    s->depth = depth;
    s->number = mt_stack_site_number(id);
    return true;
}

void mt_prof_walk_sites(struct mt_prof_walk *w)
{
    memset(w, 0, sizeof *w);
    mt_stack_foreach_new(&walked, add_site, NULL);
    for (size_t i = 0; i < mt_prof_nsites; i++) {
        struct mt_prof_site *s = &mt_prof_sites[i];
        mt_site_read_number(s->number, &s->now);
        uint64_t live = mt_prof_live_bytes(&s->now);
        w->sum_live += live;
        w->sum_blocks += mt_prof_live_blocks(&s->now);
        w->events += s->now.alloc_blocks + s->now.freed_blocks;
        w->nlive += live > 0;
    }
}

void mt_prof_row(const struct mt_prof_site *s, bool since_start, mt_fmt_prof_site *row)
{
    const mt_site_counters *now = &s->now, *last = &s->last;
    *row = (mt_fmt_prof_site){
        .live_bytes = mt_prof_live_bytes(now),
        .live_blocks = mt_prof_live_blocks(now),
        .alloc_bytes = now->alloc_bytes,
        .alloc_blocks = now->alloc_blocks,
        .freed_bytes = now->freed_bytes,
        .freed_blocks = now->freed_blocks,
        .temp_blocks = now->temp_blocks,
        .peak_bytes = now->peak_bytes,
        .peak_blocks = now->peak_blocks,
    };
    if (!since_start) {
        row->alloc_bytes -= last->alloc_bytes;
        row->alloc_blocks -= last->alloc_blocks;
        row->freed_bytes -= last->freed_bytes;
        row->freed_blocks -= last->freed_blocks;
        row->temp_blocks -= last->temp_blocks;
    }
}

/* ------------------------------------------------------------ ranking */

uint64_t mt_prof_rank_key(int by, const struct mt_prof_site *s, bool since_start)
{
    switch (by) {
    case MT_TOP_BY_ALLOCS: return s->now.alloc_blocks - (since_start ? 0 : s->last.alloc_blocks);
    case MT_TOP_BY_TEMPORARY: return s->now.temp_blocks - (since_start ? 0 : s->last.temp_blocks);
    case MT_TOP_BY_PEAK: return s->now.peak_bytes; /* at the latest peak, whenever asked */
    default: return mt_prof_live_bytes(&s->now);
    }
}

/* Greatest key first; ties by live bytes, then in the order the stacks
 * were stored, so that a report is the same from run to run. */
static int by_key_desc(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? 1 : -1;
    uint64_t lx = mt_prof_live_bytes(&x->site->now), ly = mt_prof_live_bytes(&y->site->now);
    if (lx != ly)
        return lx < ly ? 1 : -1;
    return x->site < y->site ? -1 : x->site > y->site;
}

/* The heap of mt_prof_largest's bounded selection: R[0] ranks last of
 * the N kept (by_key_desc), as does every entry against its children. */
static void heap_down(struct ranked *r, size_t n, size_t i)
{
    for (;;) {
        size_t last = i, c = 2 * i + 1;
        if (c < n && by_key_desc(&r[c], &r[last]) > 0)
            last = c;
        if (c + 1 < n && by_key_desc(&r[c + 1], &r[last]) > 0)
            last = c + 1;
        if (last == i)
            return;
        struct ranked t = r[i];
        r[i] = r[last];
        r[last] = t;
        i = last;
    }
}

static void heap_up(struct ranked *r, size_t i)
{
    while (i > 0 && by_key_desc(&r[i], &r[(i - 1) / 2]) > 0) {
        struct ranked t = r[i];
        r[i] = r[(i - 1) / 2];
        r[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

/* In rank_buf. by_key_desc is a total order, so keeping the MAX first in
 * a heap and sorting them gives the same entries in the same order as
 * sorting them all, in O(sites log MAX): a periodic report ranks tens of
 * thousands of sites for its ten. */
struct mt_prof_site **mt_prof_largest(int by, size_t max, bool since_start, size_t *n)
{
    *n = 0;
    struct ranked *r = rank_buf;
    if (!r)
        return NULL;
    if (max == 0)
        return (struct mt_prof_site **)(void *)r;
    bool bounded = max < mt_prof_nsites;
    for (size_t i = 0; i < mt_prof_nsites; i++) {
        uint64_t key = mt_prof_rank_key(by, &mt_prof_sites[i], since_start);
        if (key == 0)
            continue;
        struct ranked e = { key, &mt_prof_sites[i] };
        if (!bounded || *n < max) {
            r[(*n)++] = e;
            if (bounded)
                heap_up(r, *n - 1);
        } else if (by_key_desc(&e, &r[0]) < 0) {
            r[0] = e;
            heap_down(r, *n, 0);
        }
    }
    qsort(r, *n, sizeof *r, by_key_desc);
    /* In place: v[i] overlaps r[i / 2], which has been read already. */
    struct mt_prof_site **v = (struct mt_prof_site **)(void *)r;
    for (size_t i = 0; i < *n; i++)
        v[i] = r[i].site;
    return v;
}
