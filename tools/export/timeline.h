/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memtrace-export's view of a timeline (src/timeline/record_format.h):
 * read whole into memory (tl_read.c), replayed in time order into the
 * series and sites the exports write (replay.c). */
#ifndef MT_EXPORT_TIMELINE_H
#define MT_EXPORT_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* EV_FREE_ARMED, EV_FREE_DISARMED: a free (a G record) after which the
 * thread's latest kind (store/temporary.h) was (SIZE, STACK), or none. */
enum { EV_ALLOC = 1, EV_FREE = 2, EV_CULLED = 3, EV_FREE_ARMED = 4, EV_FREE_DISARMED = 5 };

static inline bool ev_is_free(int kind)
{
    return kind == EV_FREE || kind == EV_FREE_ARMED || kind == EV_FREE_DISARMED;
}

/* Whether an event names a stack (an allocation's, a culled count's, a
 * latest kind's): every other is a free. */
static inline bool ev_has_stack(int kind)
{
    return kind == EV_ALLOC || kind == EV_CULLED || kind == EV_FREE_ARMED;
}

/* One event; for EV_CULLED, ADDR is the count, SIZE the bytes and the
 * thread's bits of THREAD_KIND how many were temporary (< 2^24). */
typedef struct {
    uint64_t t, addr, size;
    uint32_t stack;
    uint32_t thread_kind; /* thread << 8 | kind */
} tl_event;

typedef struct {
    const char *function, *file; /* NULL: unknown */
    uint64_t line;
} tl_row;

typedef struct {
    uint64_t addr;
    unsigned nrows;
    tl_row *rows;
} tl_symbol;

typedef struct {
    uint64_t bias, low, high;
    char *path;
    char build_id[129]; /* hex, "" none */
} tl_module;

typedef struct {
    uint32_t id;
    unsigned depth;
    uint64_t *frames; /* innermost first */
} tl_stack;

typedef struct {
    const char *path; /* as given to tl_read */
    /* the head */
    uint64_t pid, start_unix_ns, cull_ns, duration_ns;
    /* MEMTRACE_SAMPLE's mean bytes between the allocations recorded (the
     * R record); 0: every allocation is (no R, as in older timelines) */
    uint64_t sample_rate;
    char *command;
    bool truncated;  /* no end record: a prefix */
    const char *why; /* what ended the reading early, for the truncated line */
    tl_event *ev;
    size_t nev, capev;
    tl_stack *stacks; /* sorted by id after reading */
    size_t nstacks, capstacks;
    tl_module *mods;
    size_t nmods, capmods;
    tl_symbol *syms; /* sorted by address after reading */
    size_t nsyms, capsyms;
} tl_file;

/* Reads PATH into R; false (with one memtrace-export: line) when it is no
 * timeline at all. A cut or damaged file reads up to its damage, with
 * R->truncated set. */
bool tl_read(const char *path, tl_file *r);
/* Symbolizes the frames R has no symbols for (a timeline cut short) from
 * its modules' files (tl_symbolize.c); one line for each module that
 * cannot be used. */
void tl_symbolize(tl_file *r);
const tl_stack *tl_stack_of(const tl_file *r, uint32_t id);
const tl_symbol *tl_symbol_of(const tl_file *r, uint64_t addr);
const tl_module *tl_module_of(const tl_file *r, uint64_t addr);

/* ---- the replay (replay.c) */

/* Sites given a series of their live bytes: the first by peak bytes, as
 * many as the JSON lists by that ranking, so that the page can group them
 * by the name it shows (a large program's top sites by name hold most of
 * the peak only when their stacks are summed). */
#define TL_TOP_SERIES TL_SITES_PER_RANK
/* Sites the JSON lists: this many by each ranking (json.c). */
#define TL_SITES_PER_RANK 200

typedef struct {
    uint32_t id;
    uint64_t allocations, allocated_bytes, peak_bytes, leaked_bytes, leaked_blocks, temporary;
    uint64_t live, epoch; /* while replaying */
    uint64_t *bytes;      /* series: for the top TL_TOP_SERIES by peak_bytes, else NULL */
} tl_site;

typedef struct {
    size_t nsamples;
    uint64_t *times, *bytes, *blocks, *allocs;
    uint64_t peak_time, peak_bytes, peak_blocks;
    uint64_t allocations, frees, allocated_bytes, leaked_bytes, leaked_blocks, temporary;
    tl_site *sites; /* sorted by peak_bytes descending, then id */
    size_t nsites;
} tl_timeline;

/* Sorts R's events by time. */
void tl_sort(tl_file *r);
/* Sorts R's events by time and replays them into T; from then on an
 * event's stack is its site's index in the replay, not its stack id. */
bool tl_replay(tl_file *r, tl_timeline *t, size_t max_samples);

/* The exports: false (one line said) when OUT cannot be written. */
bool export_json(const tl_file *r, const tl_timeline *t, FILE *out);
bool export_heaptrack(const tl_file *r, const char *out_path);

/* OUT_PATH created (or truncated) for writing, mode 0600, a symbolic link
 * not followed (main.c); -1 with one line said. */
int export_open(const char *out_path);

void die_oom(void) __attribute__((noreturn));
void *tl_xrealloc(void *p, size_t n);

#endif
