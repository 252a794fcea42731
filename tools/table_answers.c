/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The tables requests of memtrace-symbolize (table_answers.h). Each answer
 * is gathered whole from the tables first and written after, so that a
 * damaged table answers with its one "memtrace:" line and nothing else.
 * Only what the answer shows is read (a hidden freed record's stacks are
 * not), so a damage elsewhere does not stop it. */
#include "table_answers.h"

#include "tags/tags_format.h"
#include "request.h"

#include "base/common.h"
#include "report/format.h"
#include "report/pprof.h"
#include "store/sample_weight.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char UNLOCKED_SHARD[] =
    "  (a table shard was read without its lock: a stopped thread was changing it; totals "
    "may be off)\n";

static void ok(mt_out *out)
{
    mt_out_write(out, "\0@@\n", 4);
}

static void error(mt_out *out)
{
    mt_out_write(out, "\0@@ error\n", 10);
}

/* The answer of a request that failed to read the tables. */
static void failed(mt_tables *t, mt_out *out)
{
    mt_out_printf(out, "memtrace: %s\n", mt_tables_error(t));
    error(out);
}

/* mt_stack_writer for the target: CTX is its symbolizer (mt_sym_state). */
static void put_stack(void *ctx, mt_out *out, const uintptr_t *frames, unsigned depth)
{
    mt_fmt_stack(out, ctx, false, frames, depth);
}

static const char *blocks_word(uint64_t n)
{
    return n == 1 ? "block" : "blocks";
}

/* ------------------------------------------------------------ describe */

static bool stack_ref(mt_tables *t, uint32_t id, mt_fmt_stack_ref *s)
{
    return mt_tables_stack(t, id, &s->frames, &s->depth);
}

static bool live_of(mt_tables *t, const mt_tables_entry *e, mt_fmt_live *l)
{
    *l = (mt_fmt_live){ .ptr = e->ptr,
                        .size = e->size,
                        .seq = e->seq,
                        .thread = { e->thread, NULL } };
    return mt_tables_thread_name(t, e->thread, &l->thread.name) &&
           stack_ref(t, e->stack, &l->stack);
}

/* Freed record S as the formatter takes it; its stacks only with STACKS
 * (a record counted, not shown, leaves them unread). */
static bool freed_of(mt_tables *t, const mt_tables_ring_slot *s, bool stacks, mt_fmt_freed *f)
{
    mt_tables_freed r;
    if (!mt_tables_freed_record(t, s, &r))
        return false;
    *f = (mt_fmt_freed){ .ptr = r.ptr,
                         .size = r.size,
                         .alloc_seq = r.alloc_seq,
                         .free_seq = r.free_seq,
                         .alloc_thread = { r.alloc_thread, NULL },
                         .free_thread = { r.free_thread, NULL } };
    return mt_tables_thread_name(t, r.free_thread, &f->free_thread.name) &&
           mt_tables_thread_name(t, r.alloc_thread, &f->alloc_thread.name) &&
           (!stacks || (stack_ref(t, r.free_stack, &f->free_stack) &&
                        stack_ref(t, r.alloc_stack, &f->alloc_stack)));
}

struct described {
    bool live, has_below, has_above, unlocked;
    mt_fmt_live block, below, above;
    mt_fmt_freed *covering, near[MT_NEAR_FREED_MAX];
    size_t ncovering, nnear;
};

/* The live block holding ADDR or, when none does, the live blocks around
 * it within MT_NEAR_BYTES. */
static bool gather_live(mt_tables *t, uintptr_t addr, struct described *d)
{
    mt_tables_entry e, below, above;
    bool inside = false, locked;
    int found = mt_tables_find_exact(t, addr, &e, &d->unlocked);
    if (found < 0)
        return false;
    if (!found) {
        if (!mt_tables_around(t, addr, &below, &above, &inside, &locked))
            return false;
        d->unlocked |= locked;
        if (inside)
            e = below, found = 1;
    }
    if (found)
        return (d->live = true, live_of(t, &e, &d->block));
    /* The formatter shows only those within the bound: the others' stacks
     * are not worth reading. */
    if (below.ptr && mt_block_gap(addr, below.ptr, below.size) <= MT_NEAR_BYTES) {
        if (!live_of(t, &below, &d->below))
            return false;
        d->has_below = true;
    }
    if (above.ptr && mt_block_gap(addr, above.ptr, above.size) <= MT_NEAR_BYTES) {
        if (!live_of(t, &above, &d->above))
            return false;
        d->has_above = true;
    }
    return true;
}

/* The freed records covering ADDR and the newest MT_NEAR_FREED_MAX near
 * it (mt_freed_find_around's rule), newest first. */
static bool gather_freed(mt_tables *t, uintptr_t addr, unsigned history, struct described *d)
{
    const mt_tables_ring_slot *ring;
    size_t n;
    if (!mt_tables_ring(t, &ring, &n))
        return false;
    for (size_t i = 0; i < n; i++) {
        uint64_t gap = mt_block_gap(addr, ring[i].ptr, ring[i].size);
        if (gap == UINT64_MAX) {
            d->covering = mt_request_grow(d->covering, d->ncovering, sizeof *d->covering);
            bool shown = !d->live || d->ncovering < history;
            if (!freed_of(t, &ring[i], shown, &d->covering[d->ncovering++]))
                return false;
        } else if (d->nnear < MT_NEAR_FREED_MAX && gap <= MT_NEAR_BYTES) {
            if (!freed_of(t, &ring[i], true, &d->near[d->nnear++]))
                return false;
        }
    }
    return true;
}

/* "describe ADDR HISTORY": print_trace's answer about ADDR, showing at
 * most HISTORY freed records of a live block, then the recording line. */
static void describe(mt_tables *t, mt_sym_state *dwfl, const char *p, const char *line, mt_out *out)
{
    uint64_t v[2];
    if (!mt_request_numbers(&p, v, 2) || v[1] > MT_HISTORY_ALL)
        mt_request_malformed(line);
    uintptr_t addr = v[0];
    struct described d = { 0 };
    uint64_t rec[4];
    bool has_rec;
    if ((addr && (!gather_live(t, addr, &d) || !gather_freed(t, addr, (unsigned)v[1], &d))) ||
        !mt_tables_recording(t, rec, &has_rec)) {
        free(d.covering);
        failed(t, out);
        return;
    }
    mt_answer a;
    bool known = mt_answer_begin(&a, out, addr, put_stack, dwfl);
    a.history = (unsigned)v[1];
    a.sampled = t->d.sample_rate;
    if (known) {
        mt_answer_lookup(&a, d.live ? &d.block : NULL, d.unlocked);
        for (size_t i = 0; i < d.ncovering; i++)
            mt_answer_freed(&a, &d.covering[i]);
        mt_answer_near(&a, d.has_below ? &d.below : NULL, d.has_above ? &d.above : NULL);
        for (size_t i = 0; i < d.nnear; i++)
            mt_answer_near_freed(&a, &d.near[i]);
        known = mt_answer_end(&a);
    }
    free(d.covering);
    mt_table_recording_line(t, out);
    if (known)
        ok(out);
    else
        error(out);
}

/* "live-block ADDR": "START SIZE" of the live block that starts at or holds
 * ADDR, or nothing. */
static void live_block(mt_tables *t, const char *p, const char *line, mt_out *out)
{
    uint64_t addr;
    if (!mt_request_numbers(&p, &addr, 1))
        mt_request_malformed(line);
    mt_tables_entry e, above;
    bool locked, inside = false;
    int found = mt_tables_find_exact(t, addr, &e, &locked);
    if (found == 0 && mt_tables_around(t, addr, &e, &above, &inside, &locked))
        found = inside;
    if (t->failed) {
        failed(t, out);
        return;
    }
    if (found > 0)
        mt_out_printf(out, "%" PRIx64 " %" PRIx64 "\n", e.ptr, e.size);
    ok(out);
}

/* ------------------------------------------------------------ groups */

/* Live blocks grouped by a key, in the order the groups were first met
 * (shard by shard, slot by slot). */
struct group {
    uint64_t key, bytes, blocks;
    uint32_t stack, thread, tag;
};

struct groups {
    struct group *g;
    size_t n;
    size_t *index; /* open addressing over g, SIZE_MAX: empty */
    size_t cap;
    uint64_t blocks, bytes;
    bool unlocked;
};

static struct group *group_of(struct groups *s, uint64_t key)
{
    if (2 * (s->n + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 1024;
        free(s->index);
        if (!(s->index = malloc(cap * sizeof *s->index))) {
            fprintf(stderr, "memtrace-symbolize: out of memory\n");
            exit(2);
        }
        memset(s->index, 0xff, cap * sizeof *s->index);
        s->cap = cap;
        for (size_t i = 0; i < s->n; i++) {
            size_t j = (size_t)(s->g[i].key * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
            while (s->index[j] != SIZE_MAX)
                j = (j + 1) & (cap - 1);
            s->index[j] = i;
        }
    }
    size_t j = (size_t)(key * 0x9E3779B97F4A7C15ull >> 20) & (s->cap - 1);
    while (s->index[j] != SIZE_MAX && s->g[s->index[j]].key != key)
        j = (j + 1) & (s->cap - 1);
    if (s->index[j] == SIZE_MAX) {
        s->g = mt_request_grow(s->g, s->n, sizeof *s->g);
        s->g[s->n] = (struct group){ .key = key };
        s->index[j] = s->n++;
    }
    return &s->g[s->index[j]];
}

/* Every live block numbered SINCE or later into S, by stack (BY_THREAD: by
 * stack and thread); in sample mode, each as the estimate it stands for
 * (store/sample_weight.h). */
static bool gather_since(mt_tables *t, bool by_thread, uint64_t since, struct groups *s)
{
    for (size_t n = 0; n < mt_tables_shard_count(t); n++) {
        const mt_tables_entry *e;
        size_t k;
        uintptr_t base;
        uint64_t count;
        bool locked;
        if (!mt_tables_shard_slots(t, n, &base, &count, &locked) ||
            !mt_tables_shard_entries(t, n, &e, &k))
            return false;
        s->unlocked |= locked;
        for (size_t i = 0; i < k; i++) {
            if (e[i].seq < since)
                continue;
            /* By thread: and by tag node, whose thread is the block's
             * (bit 31: a node's id; thread numbers have 24 bits). */
            uint32_t low = e[i].tag ? 0x80000000u | e[i].tag : e[i].thread;
            struct group *g =
                group_of(s, by_thread ? (uint64_t)e[i].stack << 32 | low : e[i].stack);
            g->stack = e[i].stack;
            g->thread = e[i].thread;
            mt_sample_estimate est = { e[i].size, 1 };
            if (t->d.sample_rate)
                est = mt_sample_scale(e[i].size, t->d.sample_rate);
            g->tag = by_thread ? e[i].tag : 0;
            g->bytes += est.bytes;
            g->blocks += est.blocks;
            s->bytes += est.bytes;
            s->blocks += est.blocks;
        }
    }
    return true;
}

static void free_groups(struct groups *s)
{
    free(s->g);
    free(s->index);
}

static bool gather_groups(mt_tables *t, bool by_thread, struct groups *s)
{
    return gather_since(t, by_thread, 0, s);
}

/* ------------------------------------------------------------ top, stats */

static int by_bytes(const void *a, const void *b)
{
    const struct group *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    if (x->blocks != y->blocks)
        return x->blocks > y->blocks ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* In sample mode, the line saying the figures before and after it are
 * estimates; one wording for every answer that scales sampled blocks. */
static void put_estimates(mt_tables *t, mt_out *out)
{
    if (t->d.sample_rate)
        mt_out_printf(out,
                      "memtrace: sampled (MEMTRACE_SAMPLE=%" PRIu64
                      "): bytes and blocks are estimates\n",
                      t->d.sample_rate);
}

/* "top N": the N call sites holding the most live bytes. */
/* In sample mode, the exact totals (descriptor's live_exact words) as the
 * threads have flushed them; nothing from a process without them. */
static void put_exact(mt_tables *t, mt_out *out)
{
    uint64_t lu, pu;
    if (!t->d.sample_rate || !t->d.live_exact || !t->d.live_exact_peak ||
        !mt_tables_read_u64(t, t->d.live_exact, &lu) ||
        !mt_tables_read_u64(t, t->d.live_exact_peak, &pu))
        return;
    int64_t l = (int64_t)lu, p = (int64_t)pu;
    mt_out_printf(out,
                  "memtrace: sampled, but exact, every block counted: %" PRId64
                  " bytes live, peak %" PRId64 " bytes (as the threads last flushed "
                  "them: within %" PRIu64 " bytes per thread still running)\n",
                  l, p > l ? p : l, t->d.live_exact_slack);
}

static void top(mt_tables *t, mt_sym_state *dwfl, const char *p, const char *line, mt_out *out)
{
    uint64_t n;
    if (!mt_request_numbers(&p, &n, 1))
        mt_request_malformed(line);
    struct groups s = { 0 };
    uint64_t rec[4];
    bool has_rec, read = gather_groups(t, false, &s);
    if (read && s.n)
        qsort(s.g, s.n, sizeof *s.g, by_bytes);
    size_t shown = n < s.n ? (size_t)n : s.n;
    mt_fmt_stack_ref *stacks = mt_request_grow(NULL, 0, (shown ? shown : 1) * sizeof *stacks);
    for (size_t i = 0; read && i < shown; i++)
        read = stack_ref(t, s.g[i].stack, &stacks[i]);
    if (!read || !mt_tables_recording(t, rec, &has_rec)) {
        failed(t, out);
    } else {
        mt_out_printf(out,
                      "memtrace: top %zu of %zu call sites by live bytes (%" PRIu64
                      " bytes in %" PRIu64 " live %s in all)\n",
                      shown, s.n, s.bytes, s.blocks, blocks_word(s.blocks));
        if (s.unlocked)
            mt_out_write(out, UNLOCKED_SHARD, sizeof UNLOCKED_SHARD - 1);
        put_estimates(t, out);
        put_exact(t, out);
        for (size_t i = 0; i < shown; i++) {
            mt_out_printf(out,
                          "memtrace: site %zu: %" PRIu64 " bytes in %" PRIu64 " %s allocated at:\n",
                          i + 1, s.g[i].bytes, s.g[i].blocks, blocks_word(s.g[i].blocks));
            mt_fmt_block_stack(out, put_stack, dwfl, &stacks[i]);
        }
        mt_table_recording_line(t, out);
        ok(out);
    }
    free(stacks);
    free_groups(&s);
}

/* "stats": the totals. */
static void stats(mt_tables *t, mt_out *out)
{
    struct groups s = { 0 };
    uint64_t nstacks, threads, allocations, fallbacks, rec[4];
    const mt_tables_ring_slot *ring;
    size_t nfreed;
    bool has_fallbacks, has_rec;
    if (!gather_groups(t, false, &s) || !mt_tables_counts(t, &nstacks, &threads, &allocations) ||
        !mt_tables_ring(t, &ring, &nfreed) ||
        !mt_tables_unwind_fallbacks(t, &fallbacks, &has_fallbacks) ||
        !mt_tables_recording(t, rec, &has_rec)) {
        free_groups(&s);
        failed(t, out);
        return;
    }
    mt_out_printf(out,
                  "memtrace: %" PRIu64 " live blocks, %" PRIu64 " live bytes, %zu call "
                  "sites with live blocks\n",
                  s.blocks, s.bytes, s.n);
    put_estimates(t, out);
    put_exact(t, out);
    mt_out_printf(out,
                  "memtrace: %" PRIu64 " distinct stacks, %" PRIu64 " allocations "
                  "recorded, %" PRIu64 " threads seen\n",
                  nstacks, allocations, threads);
    mt_out_printf(out, "memtrace: %zu freed-history records (capacity %" PRIu64 "%s)\n", nfreed,
                  t->d.freed_capacity, t->d.freed_capacity ? "" : ", MEMTRACE_FREED=0: off");
    if (has_fallbacks)
        mt_out_printf(out,
                      "memtrace: %" PRIu64 " stack captures unwound by libunwind instead "
                      "of cfi\n",
                      fallbacks);
    if (s.unlocked)
        mt_out_write(out, UNLOCKED_SHARD, sizeof UNLOCKED_SHARD - 1);
    mt_table_recording_line(t, out);
    ok(out);
    free_groups(&s);
}

/* ------------------------------------------------------------ snapshots */

/* A snapshot's name, hex-encoded in a request ("-" for none), into NAME
 * (room for MT_SNAPSHOT_NAME_MAX + 1 bytes); false if malformed. */
#define MT_SNAPSHOT_NAME_MAX 63
static bool hex_name(const char **p, char *name)
{
    size_t n = 0;
    while (**p == ' ')
        (*p)++;
    if (**p == '-') {
        (*p)++;
    } else {
        for (; isxdigit((unsigned char)(*p)[0]) && isxdigit((unsigned char)(*p)[1]); *p += 2) {
            if (n == MT_SNAPSHOT_NAME_MAX)
                return false;
            char hex[3] = { (*p)[0], (*p)[1], 0 };
            name[n++] = (char)strtoul(hex, NULL, 16);
        }
    }
    name[n] = '\0';
    return true;
}

/* Slot I of the snapshots: its mark and name (NAME: room for
 * MT_SNAPSHOT_NAME_MAX + 1 bytes). False with the error set. */
static bool snapshot_at(mt_tables *t, uint64_t i, uint64_t *mark, char *name)
{
    const char *raw =
        mt_tables_read_at(t, t->d.snapshots + i * t->d.snapshot_size, (size_t)t->d.snapshot_size);
    if (!raw)
        return mt_tables_fail(t, "snapshot slot %" PRIu64 " at %#" PRIx64 " unreadable", i,
                              t->d.snapshots + i * t->d.snapshot_size);
    memcpy(mark, raw, 8);
    size_t n = (size_t)t->d.snapshot_name_size;
    if (n > MT_SNAPSHOT_NAME_MAX)
        n = MT_SNAPSHOT_NAME_MAX;
    memcpy(name, raw + t->d.snapshot_name, n);
    name[n] = '\0';
    return true;
}

/* The slot of the snapshot NAME ("": the newest, by mark) into *SLOT and
 * *MARK; false when there is none (*SLOT then a free slot, or
 * UINT64_MAX), or with the error set when a slot cannot be read. The
 * names taken go to NAMES (CAP bytes), comma-separated. */
static bool find_snapshot(mt_tables *t, const char *name, uint64_t *slot, uint64_t *mark,
                          char *names, size_t cap)
{
    *slot = UINT64_MAX;
    *mark = 0;
    size_t used = 0;
    names[0] = '\0';
    bool found = false;
    for (uint64_t i = 0; i < t->d.snapshot_count; i++) {
        uint64_t m = 0;
        char n[MT_SNAPSHOT_NAME_MAX + 1];
        if (!snapshot_at(t, i, &m, n))
            return false;
        if (m == 0) {
            if (!found && *slot == UINT64_MAX)
                *slot = i;
            continue;
        }
        if (n[0] != '(' && used + strlen(n) + 3 < cap)
            used += (size_t)snprintf(names + used, cap - used, "%s%s", used ? ", " : "", n);
        if (name[0] ? strcmp(n, name) == 0 : m > *mark) {
            *slot = i;
            *mark = m;
            found = true;
        }
    }
    return found;
}

/* "snapshot NAME": where gdb writes the snapshot NAME (its slot, taken
 * anew or reused) and what: "SLOT MARK NAME_OFFSET NAME_SIZE EPOCH_ADDR
 * EPOCH", MARK the shared allocation counter (above every number handed
 * out), EPOCH the epoch word's value now (gdb writes it plus 1). */
static void snapshot(mt_tables *t, const char *p, const char *line, mt_out *out)
{
    char name[MT_SNAPSHOT_NAME_MAX + 1], names[512];
    if (!hex_name(&p, name) || !name[0])
        mt_request_malformed(line);
    if (!t->d.snapshots || !t->d.seq_epoch) {
        mt_out_printf(out, "memtrace: snapshot: this memtrace library keeps no snapshots "
                           "(older than this helper)\n");
        error(out);
        return;
    }
    uint64_t slot, mark, counter;
    uint32_t epoch;
    find_snapshot(t, name, &slot, &mark, names, sizeof names);
    bool read = mt_tables_read_u64(t, t->d.seq_counter, &counter) &&
                mt_tables_read_u32(t, t->d.seq_epoch, &epoch);
    if (t->failed || !read) {
        if (!t->failed)
            mt_tables_fail(t, "the allocation counter or its epoch is unreadable");
        failed(t, out);
        return;
    }
    if (slot == UINT64_MAX) {
        mt_out_printf(out,
                      "memtrace: snapshot: all %" PRIu64 " snapshots are taken (%s); "
                      "take one again by its name to move it\n",
                      t->d.snapshot_count, names);
        error(out);
        return;
    }
    mt_out_printf(out, "%" PRIx64 " %" PRIx64 " %" PRIx64 " %" PRIx64 " %" PRIx64 " %" PRIx32 "\n",
                  t->d.snapshots + slot * t->d.snapshot_size, counter ? counter : 1,
                  t->d.snapshot_name, t->d.snapshot_name_size, t->d.seq_epoch, epoch);
    ok(out);
}

/* The live blocks numbered SINCE or later, of stack STACK, listed. */
static void put_blocks(mt_tables *t, uint64_t since, uint32_t stack, mt_out *out)
{
    for (size_t n = 0; n < mt_tables_shard_count(t); n++) {
        const mt_tables_entry *e;
        size_t k;
        uintptr_t base;
        uint64_t count;
        bool locked;
        if (!mt_tables_shard_slots(t, n, &base, &count, &locked) ||
            !mt_tables_shard_entries(t, n, &e, &k))
            return;
        for (size_t i = 0; i < k; i++)
            if (e[i].seq >= since && e[i].stack == stack)
                mt_out_printf(out,
                              "  block %#" PRIx64 ": %" PRIu64 " bytes, allocation #%" PRIu64
                              ", thread %" PRIu32 "\n",
                              e[i].ptr, e[i].size, e[i].seq, e[i].thread);
    }
}

/* "growth NAME N ALL": the live blocks allocated since the snapshot NAME
 * ("-": the newest), grouped by stack, the N holding most bytes first;
 * ALL nonzero lists each group's blocks. "since NAME" for a name:
 * "MARK" (0: no such snapshot), for `memtrace leaks new`. */
static void growth(mt_tables *t, mt_sym_state *dwfl, const char *p, const char *line, mt_out *out)
{
    char name[MT_SNAPSHOT_NAME_MAX + 1], names[512];
    uint64_t v[2], slot, mark;
    if (!hex_name(&p, name) || !mt_request_numbers(&p, v, 2))
        mt_request_malformed(line);
    if (!t->d.snapshots) {
        mt_out_printf(out, "memtrace: growth: this memtrace library keeps no snapshots "
                           "(older than this helper)\n");
        error(out);
        return;
    }
    bool found = find_snapshot(t, name, &slot, &mark, names, sizeof names);
    if (t->failed) {
        failed(t, out);
        return;
    }
    if (v[0] == 0) { /* the mark alone */
        mt_out_printf(out, "%" PRIx64 "\n", found ? mark : 0);
        ok(out);
        return;
    }
    if (!found) {
        if (name[0])
            mt_out_printf(out, "memtrace: growth: no snapshot named \"%s\" (%s%s)\n", name,
                          names[0] ? "taken: " : "none taken", names);
        else
            mt_out_printf(out, "memtrace: growth: no snapshot taken (memtrace snapshot [NAME] "
                               "takes one)\n");
        error(out);
        return;
    }
    struct groups s = { 0 };
    bool read = gather_since(t, false, mark, &s);
    if (read && s.n)
        qsort(s.g, s.n, sizeof *s.g, by_bytes);
    size_t shown = v[0] < s.n ? (size_t)v[0] : s.n;
    mt_fmt_stack_ref *stacks = mt_request_grow(NULL, 0, (shown ? shown : 1) * sizeof *stacks);
    for (size_t i = 0; read && i < shown; i++)
        read = stack_ref(t, s.g[i].stack, &stacks[i]);
    char shown_name[MT_SNAPSHOT_NAME_MAX + 1];
    uint64_t m;
    if (read && !snapshot_at(t, slot, &m, shown_name))
        read = false;
    if (!read) {
        failed(t, out);
    } else {
        mt_out_printf(out,
                      "memtrace: growth since snapshot \"%s\" (allocation #%" PRIu64
                      " on): %" PRIu64 " bytes in %" PRIu64 " live %s at %zu call %s; "
                      "top %zu\n",
                      shown_name, mark, s.bytes, s.blocks, blocks_word(s.blocks), s.n,
                      s.n == 1 ? "site" : "sites", shown);
        if (s.unlocked)
            mt_out_write(out, UNLOCKED_SHARD, sizeof UNLOCKED_SHARD - 1);
        put_estimates(t, out);
        for (size_t i = 0; i < shown; i++) {
            mt_out_printf(out,
                          "memtrace: site %zu: %" PRIu64 " bytes in %" PRIu64 " %s allocated at:\n",
                          i + 1, s.g[i].bytes, s.g[i].blocks, blocks_word(s.g[i].blocks));
            mt_fmt_block_stack(out, put_stack, dwfl, &stacks[i]);
            if (v[1])
                put_blocks(t, mark, s.g[i].stack, out);
        }
        mt_table_recording_line(t, out);
        ok(out);
    }
    free(stacks);
    free_groups(&s);
}

bool mt_table_recording_line(mt_tables *t, mt_out *out)
{
    uint64_t v[4];
    bool has;
    if (!mt_tables_recording(t, v, &has))
        return false;
    if (has && v[1])
        mt_fmt_recording(out, &(mt_fmt_recording_state){ v[0] != 0, v[1] != 0, v[2], v[3],
                                                         (v[1] & 2) != 0, (v[1] & 4) != 0 });
    return true;
}

/* ------------------------------------------------------------ pprof */

static void *heap_alloc(size_t size)
{
    return malloc(size);
}

/* The profile of groups S into PATH; NULL when written, else why not. */
static const char *write_profile(mt_tables *t, mt_sym_state *dwfl, const struct groups *s,
                                 const char *path, uint64_t main_addr)
{
    static const mt_pprof_heap heap = { heap_alloc, free };
    mt_pprof *prof = mt_pprof_new(&heap, false);
    if (!prof)
        return "out of memory";
    mt_pprof_main(prof, (uintptr_t)main_addr);
    const char *why = NULL;
    for (size_t i = 0; !why && i < s->n; i++) {
        const struct group *g = &s->g[i];
        mt_fmt_stack_ref st;
        mt_fmt_thread th = { g->thread, NULL };
        stack_ref(t, g->stack, &st); /* read before: cannot fail */
        mt_tables_thread_name(t, g->thread, &th.name);
        mt_pprof_values val = { 0, 0, g->blocks, g->bytes };
        char tag[256];
        mt_table_tag_path(t, g->tag, tag, sizeof tag);
        if (!mt_pprof_add(prof, i, st.frames, st.depth, th.number ? &th : NULL, &val) ||
            !mt_pprof_tag(prof, i, tag))
            why = "out of memory";
    }
    int fd = -1;
    if (!why && (fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
        why = errno == ELOOP ? "a symbolic link; not followed" : strerror(errno);
    if (!why) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        why = mt_pprof_write(prof, dwfl, false, fd, (int64_t)now.tv_sec * 1000000000 + now.tv_nsec,
                             0);
        if (close(fd) != 0 && !why)
            why = strerror(errno);
    }
    mt_pprof_free(prof);
    return why;
}

/* "pprof PATH [MAIN]": the in-use profile (live blocks by allocation stack
 * and thread) written to PATH (hex bytes; created 0600, never through a
 * symbolic link; MAIN: an address in the main executable, whose Mapping
 * goes first); its one summary line, or a "memtrace: pprof: ... not
 * written" error. */
static void pprof(mt_tables *t, mt_sym_state *dwfl, const char *p, mt_out *out)
{
    char path[4096];
    size_t n = 0;
    while (n + 1 < sizeof path && isxdigit((unsigned char)p[0]) && isxdigit((unsigned char)p[1])) {
        char hex[3] = { p[0], p[1], 0 };
        path[n++] = (char)strtoul(hex, NULL, 16);
        p += 2;
    }
    path[n] = '\0';
    bool fits = !isxdigit((unsigned char)*p);
    uint64_t main_addr = 0;
    if (fits && !mt_request_numbers(&p, &main_addr, 1))
        main_addr = 0;
    struct groups s = { 0 };
    bool read = gather_groups(t, true, &s);
    for (size_t i = 0; read && i < s.n; i++) {
        mt_fmt_stack_ref st;
        const char *name;
        read = stack_ref(t, s.g[i].stack, &st) && mt_tables_thread_name(t, s.g[i].thread, &name);
    }
    if (!read) {
        free_groups(&s);
        failed(t, out);
        return;
    }
    const char *why = !fits    ? "the file name is too long"
                      : !*path ? "no file name"
                               : write_profile(t, dwfl, &s, path, main_addr);
    if (why) {
        mt_out_printf(out, "memtrace: pprof: %.1024s not written (%s)\n", path, why);
        error(out);
    } else {
        struct groups sites = { 0 };
        for (size_t i = 0; i < s.n; i++)
            group_of(&sites, s.g[i].stack);
        mt_out_printf(out,
                      "memtrace: pprof profile: %s: %" PRIu64 " live bytes in %" PRIu64
                      " %s at %zu call sites\n",
                      path, s.bytes, s.blocks, blocks_word(s.blocks), sites.n);
        if (s.unlocked)
            mt_out_write(out, UNLOCKED_SHARD, sizeof UNLOCKED_SHARD - 1);
        free_groups(&sites);
        ok(out);
    }
    free_groups(&s);
}

/* "tags text|json|dot PID" */
static void tags(mt_tables *t, const char *p, const char *line, mt_out *out)
{
    static const char *const names[] = { "text ", "json ", "dot " };
    unsigned f = 0;
    while (strncmp(p, names[f], strlen(names[f])) != 0)
        if (++f == sizeof names / sizeof names[0])
            mt_request_malformed(line);
    uint64_t pid;
    p += strlen(names[f]);
    if (!mt_request_numbers(&p, &pid, 1))
        mt_request_malformed(line);
    if (mt_table_tags(t, (enum mt_tag_format)f, (int)pid, out))
        ok(out);
    else
        failed(t, out);
}

/* ------------------------------------------------------------ the requests */

bool mt_table_request(mt_tables *t, mt_sym_state *dwfl, const char *line, mt_out *out,
                      mt_tables_read_fn *read, void *ctx)
{
    const char *p = line;
    uint64_t v;
    if (strncmp(line, "tables ", 7) == 0) {
        p += 7;
        if (!mt_request_numbers(&p, &v, 1))
            mt_request_malformed(line);
        if (!mt_tables_open(t, v, read, ctx)) {
            failed(t, out);
        } else {
            mt_out_printf(out, "%" PRIx64 "\n", t->d.version_string);
            ok(out);
        }
        return true;
    }
    bool known = strncmp(line, "describe ", 9) == 0 || strncmp(line, "top ", 4) == 0 ||
                 strcmp(line, "stats\n") == 0 || strcmp(line, "recording\n") == 0 ||
                 strncmp(line, "live-block ", 11) == 0 || strncmp(line, "pprof ", 6) == 0 ||
                 strncmp(line, "tags ", 5) == 0 || strncmp(line, "snapshot ", 9) == 0 ||
                 strncmp(line, "growth ", 7) == 0;
    if (!known)
        return false;
    mt_tables_clear_error(t);
    if (!t->open) {
        mt_out_printf(out, "memtrace: no tables read (the \"tables\" request comes first)\n");
        error(out);
    } else if (strncmp(line, "describe ", 9) == 0) {
        describe(t, dwfl, line + 9, line, out);
    } else if (strncmp(line, "top ", 4) == 0) {
        top(t, dwfl, line + 4, line, out);
    } else if (strcmp(line, "stats\n") == 0) {
        stats(t, out);
    } else if (strcmp(line, "recording\n") == 0) {
        if (mt_table_recording_line(t, out))
            ok(out);
        else
            failed(t, out);
    } else if (strncmp(line, "live-block ", 11) == 0) {
        live_block(t, line + 11, line, out);
    } else if (strncmp(line, "tags ", 5) == 0) {
        tags(t, line + 5, line, out);
    } else if (strncmp(line, "snapshot ", 9) == 0) {
        snapshot(t, line + 9, line, out);
    } else if (strncmp(line, "growth ", 7) == 0) {
        growth(t, dwfl, line + 7, line, out);
    } else {
        pprof(t, dwfl, line + 6, out);
    }
    return true;
}
