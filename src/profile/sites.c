/* The profiler's site table: one entry per stored stack, found by stack id
 * through an open-addressed index (count * 2 <= cap), filled by a walk of
 * the stack store that reads each stack's counters (site.h), and ranked
 * for the reports. All of it under mt_prof_report_lock, inside memtrace:
 * its memory is the internal heap's. */
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
static uint32_t *site_index; /* slot: site number + 1, 0 = empty */
static size_t index_cap;

static uint32_t hash_id(mt_stack_id id)
{
    return (uint32_t)((id * 0x9E3779B97F4A7C15ull) >> 32);
}

static void index_put(uint32_t n)
{
    size_t mask = index_cap - 1;
    for (size_t i = hash_id(mt_prof_sites[n].id) & mask;; i = (i + 1) & mask) {
        if (site_index[i] == 0) {
            site_index[i] = n + 1;
            return;
        }
    }
}

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
    site_index = calloc(SITES_FIRST * 2, sizeof *site_index);
    if (!mt_prof_sites || !site_index) {
        free(mt_prof_sites);
        free(site_index);
        free(rank_buf);
        mt_prof_sites = NULL;
        site_index = NULL;
        rank_buf = NULL;
        return;
    }
    sites_cap = SITES_FIRST;
    index_cap = SITES_FIRST * 2;
}

/* The site of stack ID, added if new; NULL when the internal heap is full. */
static struct mt_prof_site *site_of(mt_stack_id id, const uintptr_t *frames, unsigned depth)
{
    if (index_cap) {
        size_t mask = index_cap - 1;
        for (size_t i = hash_id(id) & mask; site_index[i]; i = (i + 1) & mask)
            if (mt_prof_sites[site_index[i] - 1].id == id)
                return &mt_prof_sites[site_index[i] - 1];
    }
    if (mt_prof_nsites == sites_cap) {
        size_t cap = sites_cap ? sites_cap * 2 : SITES_FIRST;
        struct ranked *rb = realloc(rank_buf, cap * sizeof *rb);
        if (!rb)
            return NULL;
        rank_buf = rb;
        struct mt_prof_site *s = realloc(mt_prof_sites, cap * sizeof *s);
        if (!s)
            return NULL;
        mt_prof_sites = s;
        sites_cap = cap;
    }
    if ((mt_prof_nsites + 1) * 2 > index_cap) {
        size_t cap = index_cap ? index_cap * 2 : SITES_FIRST * 2;
        uint32_t *ix = calloc(cap, sizeof *ix);
        if (!ix)
            return NULL;
        free(site_index);
        site_index = ix;
        index_cap = cap;
        for (uint32_t n = 0; n < mt_prof_nsites; n++)
            index_put(n);
    }
    struct mt_prof_site *s = &mt_prof_sites[mt_prof_nsites];
    memset(s, 0, sizeof *s);
    s->id = id;
    s->frames = frames;
    s->depth = depth;
    index_put((uint32_t)mt_prof_nsites++);
    return s;
}

static void walk_one(mt_stack_id id, const uintptr_t *frames, unsigned depth, void *ctx)
{
    struct mt_prof_walk *w = ctx;
    mt_site_counters c;
    if (!mt_site_read(id, &c))
        return;
    struct mt_prof_site *s = site_of(id, frames, depth);
    if (!s)
        return;
    s->now = c;
    uint64_t live = mt_prof_live_bytes(&s->now);
    w->sum_live += live;
    w->sum_blocks += mt_prof_live_blocks(&s->now);
    w->events += s->now.alloc_blocks + s->now.freed_blocks;
    w->nlive += live > 0;
}

void mt_prof_walk_sites(struct mt_prof_walk *w)
{
    memset(w, 0, sizeof *w);
    mt_stack_foreach(walk_one, w);
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
    case MT_TOP_BY_ALLOCS:
        return s->now.alloc_blocks - (since_start ? 0 : s->last.alloc_blocks);
    case MT_TOP_BY_TEMPORARY:
        return s->now.temp_blocks - (since_start ? 0 : s->last.temp_blocks);
    case MT_TOP_BY_PEAK:
        return s->now.peak_bytes; /* at the latest peak, whenever asked */
    default:
        return mt_prof_live_bytes(&s->now);
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

/* In rank_buf. */
struct mt_prof_site **mt_prof_largest(int by, size_t max, bool since_start, size_t *n)
{
    *n = 0;
    struct ranked *r = rank_buf;
    if (!r)
        return NULL;
    for (size_t i = 0; i < mt_prof_nsites; i++) {
        uint64_t key = mt_prof_rank_key(by, &mt_prof_sites[i], since_start);
        if (key > 0)
            r[(*n)++] = (struct ranked){ key, &mt_prof_sites[i] };
    }
    qsort(r, *n, sizeof *r, by_key_desc);
    if (*n > max)
        *n = max;
    /* In place: v[i] overlaps r[i / 2], which has been read already. */
    struct mt_prof_site **v = (struct mt_prof_site **)(void *)r;
    for (size_t i = 0; i < *n; i++)
        v[i] = r[i].site;
    return v;
}
