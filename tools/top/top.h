/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memtrace top: a live view of a process traced by memtrace, read out of
 * process (tools/tables_live.c) without stopping it. view.c reads a
 * refresh into the sites, screen.c draws them with ncurses, top.c has the
 * arguments, the batch output and the loop. */
#ifndef MT_TOOLS_TOP_H
#define MT_TOOLS_TOP_H

#include "tables.h"
#include "symbolize/symbolize.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum top_order { BY_LIVE, BY_ALLOCS, BY_TEMPORARY, BY_GROWTH };

/* One call site (the allocation stack), kept from its first refresh on:
 * its label is symbolized once. The figures are those of the last shown
 * refresh; start_bytes its live bytes at the view's first refresh (0 for
 * a site born since). */
struct top_site {
    uint32_t stack;
    uint64_t bytes, blocks, allocs, temps;
    uint64_t start_bytes;
    char *label; /* "FUNCTION at FILE:LINE"; NULL until symbolized */
    /* The refresh being read, moved into the above when it is whole. */
    uint64_t n_bytes, n_blocks, n_allocs, n_temps;
};

struct top_view {
    int pid;
    char comm[64];
    int mem_fd;
    mt_tables t;
    mt_tables_live l;
    mt_sym_state *sym;
    bool sym_tried; /* the modules were read again in this refresh */
    struct top_site *sites;
    size_t nsites, sites_cap;
    size_t *index; /* open addressing by stack, SIZE_MAX: empty */
    size_t index_cap;
    /* What the last shown refresh read. */
    unsigned refreshes;     /* shown so far */
    double when, prev_when; /* seconds on the monotonic clock */
    uint64_t bytes, blocks, prev_bytes, start_bytes;
    uint64_t allocations, prev_allocations;
    unsigned changing; /* shards read while they changed (in flux left out) */
    bool ring_overran; /* more frees since the last refresh than the freed history holds */
    bool sampled;
    /* The marks of the last refresh: each thread's next allocation number
     * (mark[0] the shared counter), the freed history's newest stamp. */
    uint64_t *mark, *new_mark;
    size_t nmark, nnew_mark;
    uint64_t ring_stamp;
};

/* Opens process PID: its memory, memtrace_state, the modules. False with
 * one "memtrace: ..." line in WHY when it cannot be watched. */
bool top_open(struct top_view *v, int pid, char *why, size_t size);

/* Reads one refresh: 1 read and now shown by the view's figures; 0
 * skipped (a shard changed under every read; WHY says which), the figures
 * as they were; -1 failed (WHY: one "memtrace: ..." line: the process
 * exited, or its tables cannot be read). */
int top_refresh(struct top_view *v, char *why, size_t size);

/* The sites to show, in ORDER, into *OUT (the caller frees): those with
 * live blocks or allocations in the last interval. */
size_t top_sorted(struct top_view *v, enum top_order order, struct top_site ***out);

/* The site's label, symbolized on first use. */
const char *top_label(struct top_view *v, struct top_site *s);

/* Growth of a site since the view's start. */
static inline int64_t top_growth(const struct top_site *s)
{
    return (int64_t)(s->bytes - s->start_bytes);
}

extern const char *const top_order_names[4];

/* The text both outputs show (top.c): the totals line, the notes line
 * ("" for none), the column heads and one site's line. */
void top_totals(const struct top_view *v, char *buf, size_t size);
void top_notes(const struct top_view *v, char *buf, size_t size);
extern const char top_columns[];
void top_site_line(struct top_view *v, struct top_site *s, char *buf, size_t size);

/* The ncurses screen (screen.c): until `q` or COUNT refreshes (0: no
 * end) (0), or a failed read (1, with its line printed after the screen
 * is gone). */
int top_screen(struct top_view *v, double interval, enum top_order order, unsigned long count);

#endif
