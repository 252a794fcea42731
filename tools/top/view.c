/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memtrace top's reading (top.h): process PID's memory through
 * /proc/PID/mem, read afresh each time (no cache: the process runs), its
 * memtrace_state found in the symbol table of the module that defines it,
 * and each refresh folded into the call sites. A refresh is shown only
 * whole: a shard that changes under every read (tables_live.c) skips it.
 *
 * Allocations and temporary allocations of an interval are counted by
 * allocation number: those a thread handed out since the last refresh's
 * mark (its next number then) and before this one's, found live in the
 * table or in the freed history (read first, so that a block freed during
 * the read is in neither rather than in both). A temporary allocation is
 * one freed before its thread allocated again (its free's number is its
 * own: store/temporary.h's rule as the freed history can tell it). */
#include "top.h"

#include "store/sample_weight.h"
#include "symbolize/symbolize.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SHARD_TRIES 4u

const char *const top_order_names[4] = { "live", "allocs", "temporary", "growth" };

static char read_buf[MT_TABLES_READ_MAX];

/* mt_tables_read_fn over /proc/PID/mem: fresh bytes each time. */
static const void *read_mem(void *ctx, uintptr_t addr, size_t len)
{
    struct top_view *v = ctx;
    if (len > sizeof read_buf)
        return NULL;
    ssize_t got = pread(v->mem_fd, read_buf, len, (off_t)addr);
    return got == (ssize_t)len ? read_buf : NULL;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *debuginfo_path;
static const Dwfl_Callbacks proc_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = mt_sym_find_debuginfo,
    .debuginfo_path = &debuginfo_path,
};

static Dwfl *report(int pid)
{
    Dwfl *dwfl = dwfl_begin(&proc_callbacks);
    if (!dwfl)
        return NULL;
    dwfl_report_begin(dwfl);
    int rc = 0;
    bool ok = mt_sym_report_process(dwfl, pid, &rc);
    if (dwfl_report_end(dwfl, NULL, NULL) != 0 || !ok) {
        dwfl_end(dwfl);
        return NULL;
    }
    return dwfl;
}

struct find_state {
    Dwarf_Addr addr;
};

static int find_state_in(Dwfl_Module *mod, void **user, const char *name, Dwarf_Addr start,
                         void *arg)
{
    (void)user, (void)name, (void)start;
    struct find_state *f = arg;
    int n = dwfl_module_getsymtab(mod);
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        const char *s = dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);
        if (s && GELF_ST_TYPE(sym.st_info) == STT_OBJECT && sym.st_shndx != SHN_UNDEF &&
            strcmp(s, "memtrace_state") == 0) {
            f->addr = addr;
            return DWARF_CB_ABORT;
        }
    }
    return DWARF_CB_OK;
}

/* Whether process PID is gone (or a zombie: its memory is). */
static bool exited(int pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return true;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return p && (p[2] == 'Z' || p[2] == 'X');
}

/* Whether process PID exits within half a second: a read that failed
 * because it is exiting (its memory is gone before it is a zombie). */
static bool exiting(int pid)
{
    for (int i = 0; i < 50; i++) {
        if (exited(pid))
            return true;
        struct timespec ts = { 0, 10000000L };
        nanosleep(&ts, NULL);
    }
    return false;
}

bool top_open(struct top_view *v, int pid, char *why, size_t size)
{
    memset(v, 0, sizeof *v);
    v->pid = pid;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", pid);
    FILE *f = fopen(path, "r");
    if (!f || (kill(pid, 0) != 0 && errno == ESRCH)) {
        snprintf(why, size, "memtrace: top: no process %d", pid);
        if (f)
            fclose(f);
        return false;
    }
    if (!fgets(v->comm, sizeof v->comm, f))
        v->comm[0] = '\0';
    fclose(f);
    v->comm[strcspn(v->comm, "\n")] = '\0';
    snprintf(path, sizeof path, "/proc/%d/mem", pid);
    v->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
    if (v->mem_fd < 0) {
        int e = errno;
        if (e == ENOENT)
            snprintf(why, size, "memtrace: top: no process %d", pid);
        else
            snprintf(why, size,
                     "memtrace: top: cannot read the memory of process %d (%s): "
                     "it is another user's, or ptrace is restricted "
                     "(/proc/sys/kernel/yama/ptrace_scope)",
                     pid, strerror(e));
        return false;
    }
    Dwfl *dwfl = report(pid);
    if (!dwfl) {
        snprintf(why, size,
                 exiting(pid) ? "memtrace: top: process %d exited"
                              : "memtrace: top: cannot read the modules of process %d",
                 pid);
        return false;
    }
    struct find_state fs = { 0 };
    dwfl_getmodules(dwfl, find_state_in, &fs, 0);
    if (!fs.addr) {
        dwfl_end(dwfl);
        snprintf(why, size,
                 "memtrace: top: process %d (%s) is not traced by memtrace "
                 "(no memtrace_state in its libraries)",
                 pid, v->comm);
        return false;
    }
    if (!(v->sym = mt_sym_new(dwfl))) {
        dwfl_end(dwfl);
        snprintf(why, size, "memtrace: top: out of memory");
        return false;
    }
    if (!mt_tables_open(&v->t, fs.addr, read_mem, v)) {
        if (exiting(pid))
            snprintf(why, size, "memtrace: top: process %d exited", pid);
        else
            snprintf(why, size, "memtrace: top: process %d: %s", pid, mt_tables_error(&v->t));
        return false;
    }
    v->sampled = v->t.d.sample_rate != 0;
    return true;
}

/* ------------------------------------------------------------ sites */

static size_t hash_stack(uint32_t stack, size_t cap)
{
    return (size_t)((stack * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

static struct top_site *site_of(struct top_view *v, uint32_t stack)
{
    if (2 * (v->nsites + 1) > v->index_cap) {
        size_t cap = v->index_cap ? 2 * v->index_cap : 1024;
        size_t *ix = malloc(cap * sizeof *ix);
        if (!ix)
            return NULL;
        memset(ix, 0xff, cap * sizeof *ix);
        for (size_t i = 0; i < v->nsites; i++) {
            size_t j = hash_stack(v->sites[i].stack, cap);
            while (ix[j] != SIZE_MAX)
                j = (j + 1) & (cap - 1);
            ix[j] = i;
        }
        free(v->index);
        v->index = ix;
        v->index_cap = cap;
    }
    size_t j = hash_stack(stack, v->index_cap);
    while (v->index[j] != SIZE_MAX && v->sites[v->index[j]].stack != stack)
        j = (j + 1) & (v->index_cap - 1);
    if (v->index[j] == SIZE_MAX) {
        if (v->nsites == v->sites_cap) {
            size_t cap = v->sites_cap ? 2 * v->sites_cap : 256;
            struct top_site *s = realloc(v->sites, cap * sizeof *s);
            if (!s)
                return NULL;
            v->sites = s;
            v->sites_cap = cap;
        }
        v->sites[v->nsites] = (struct top_site){ .stack = stack };
        v->index[j] = v->nsites++;
    }
    return &v->sites[v->index[j]];
}

/* Whether allocation number SEQ of thread THREAD was handed out between
 * the last refresh's marks and this one's. */
static bool in_interval(const struct top_view *v, uint32_t thread, uint64_t seq)
{
    if (!v->refreshes)
        return false;
    uint64_t from = thread < v->nmark ? v->mark[thread] : v->mark[0];
    uint64_t to = thread < v->nnew_mark ? v->new_mark[thread] : v->new_mark[0];
    return seq >= from && seq < to;
}

static int failed(struct top_view *v, char *why, size_t size)
{
    if (exiting(v->pid))
        snprintf(why, size, "memtrace: top: process %d exited", v->pid);
    else
        snprintf(why, size, "memtrace: top: process %d: %s", v->pid, mt_tables_error(&v->t));
    return -1;
}

int top_refresh(struct top_view *v, char *why, size_t size)
{
    mt_tables *t = &v->t;
    mt_tables_clear_error(t);
    v->sym_tried = false;
    double when = now();
    uint64_t *next, nstacks, threads, allocations;
    size_t nnext;
    if (mt_tables_live_seq_next(t, &v->l, &next, &nnext) < 0 ||
        !mt_tables_counts(t, &nstacks, &threads, &allocations))
        return failed(v, why, size);
    uint64_t *copy = realloc(v->new_mark, nnext * sizeof *copy);
    if (!copy)
        return snprintf(why, size, "memtrace: top: out of memory"), -1;
    memcpy(copy, next, nnext * sizeof *copy);
    v->new_mark = copy;
    v->nnew_mark = nnext;
    for (size_t i = 0; i < v->nsites; i++) {
        struct top_site *s = &v->sites[i];
        s->n_bytes = s->n_blocks = s->n_allocs = s->n_temps = 0;
    }
    /* The freed history first (see above). */
    mt_tables_live_freed *f;
    size_t nf;
    if (mt_tables_live_ring(t, &v->l, &f, &nf) < 0)
        return failed(v, why, size);
    uint64_t newest = 0;
    for (size_t i = 0; i < nf; i++) {
        newest = f[i].stamp > newest ? f[i].stamp : newest;
        if (!in_interval(v, f[i].alloc_thread, f[i].alloc_seq))
            continue;
        struct top_site *s = site_of(v, f[i].alloc_stack);
        if (!s)
            return snprintf(why, size, "memtrace: top: out of memory"), -1;
        s->n_allocs++;
        s->n_temps += f[i].free_seq == f[i].alloc_seq;
    }
    bool overran = v->refreshes && t->d.freed_capacity &&
                   newest - v->ring_stamp > t->d.freed_capacity;
    unsigned changing = 0;
    uint64_t bytes = 0, blocks = 0;
    for (size_t n = 0; n < mt_tables_shard_count(t); n++) {
        int r = mt_tables_live_shard(t, n, SHARD_TRIES, &v->l);
        if (r < 0)
            return failed(v, why, size);
        if (r == 0) {
            snprintf(why, size, "live shard %zu was being changed at each of %u reads", n,
                     SHARD_TRIES);
            return 0;
        }
        changing += r == 2;
        for (size_t i = 0; i < v->l.n; i++) {
            const mt_tables_entry *e = &v->l.e[i];
            struct top_site *s = site_of(v, e->stack);
            if (!s)
                return snprintf(why, size, "memtrace: top: out of memory"), -1;
            mt_sample_estimate est = { e->size, 1 };
            if (t->d.sample_rate)
                est = mt_sample_scale(e->size, t->d.sample_rate);
            s->n_bytes += est.bytes;
            s->n_blocks += est.blocks;
            s->n_allocs += in_interval(v, e->thread, e->seq);
            bytes += est.bytes;
            blocks += est.blocks;
        }
    }
    /* Whole: it is the view's now. */
    for (size_t i = 0; i < v->nsites; i++) {
        struct top_site *s = &v->sites[i];
        if (!v->refreshes)
            s->start_bytes = s->n_bytes;
        s->bytes = s->n_bytes;
        s->blocks = s->n_blocks;
        s->allocs = s->n_allocs;
        s->temps = s->n_temps;
    }
    v->prev_when = v->when;
    v->when = when;
    v->prev_bytes = v->bytes;
    v->bytes = bytes;
    v->blocks = blocks;
    if (!v->refreshes)
        v->start_bytes = bytes;
    v->prev_allocations = v->allocations;
    v->allocations = allocations;
    v->changing = changing;
    v->ring_overran = overran;
    v->ring_stamp = newest;
    uint64_t *m = v->mark;
    size_t nm = v->nmark;
    v->mark = v->new_mark, v->nmark = v->nnew_mark;
    v->new_mark = m, v->nnew_mark = nm;
    v->refreshes++;
    return 1;
}

/* ------------------------------------------------------------ order, labels */

static enum top_order sort_order;

static int cmp_u64(uint64_t a, uint64_t b)
{
    return a > b ? -1 : a < b;
}

static int by_order(const void *a, const void *b)
{
    const struct top_site *x = *(struct top_site *const *)a, *y = *(struct top_site *const *)b;
    int c = 0;
    switch (sort_order) {
    case BY_ALLOCS: c = cmp_u64(x->allocs, y->allocs); break;
    case BY_TEMPORARY: c = cmp_u64(x->temps, y->temps); break;
    case BY_GROWTH: {
        int64_t gx = top_growth(x), gy = top_growth(y);
        c = gx > gy ? -1 : gx < gy;
        break;
    }
    case BY_LIVE: break;
    }
    if (!c)
        c = cmp_u64(x->bytes, y->bytes);
    if (!c)
        c = cmp_u64(x->blocks, y->blocks);
    return c ? c : x->stack < y->stack ? -1 : x->stack > y->stack;
}

size_t top_sorted(struct top_view *v, enum top_order order, struct top_site ***out)
{
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    struct top_site **p = malloc((v->nsites ? v->nsites : 1) * sizeof *p);
    size_t n = 0;
    for (size_t i = 0; p && i < v->nsites; i++) {
        struct top_site *s = &v->sites[i];
        if (s->blocks || s->allocs || s->temps || s->start_bytes)
            p[n++] = s;
    }
    sort_order = order;
    if (n > 1)
        /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
        qsort(p, n, sizeof *p, by_order);
    *out = p;
    return p ? n : 0;
}

struct label_ctx {
    char buf[512];
    bool known;
};

static void put_label(const mt_frame *rows, unsigned n, void *arg)
{
    struct label_ctx *c = arg;
    (void)n;
    const mt_frame *f = &rows[0];
    c->known = f->module != NULL;
    char where[320];
    if (f->file) {
        const char *base = strrchr(f->file, '/');
        snprintf(where, sizeof where, " at %s:%d", base ? base + 1 : f->file, f->line);
    } else if (f->module) {
        snprintf(where, sizeof where, " in %s+0x%lx", f->module, (unsigned long)f->offset);
    } else {
        where[0] = '\0';
    }
    if (f->function)
        snprintf(c->buf, sizeof c->buf, "%s%s", f->function, where);
    else
        snprintf(c->buf, sizeof c->buf, "0x%lx%s", (unsigned long)f->ret, where);
}

const char *top_label(struct top_view *v, struct top_site *s)
{
    if (s->label)
        return s->label;
    const uintptr_t *frames;
    unsigned depth;
    if (!mt_tables_stack(&v->t, s->stack, &frames, &depth) || depth == 0)
        return "(no stack was recorded)";
    struct label_ctx c = { .known = false };
    mt_sym_frames(v->sym, false, frames[0], put_label, &c);
    if (!c.known && !v->sym_tried) {
        /* A library loaded since the modules were read: read them again,
         * once a refresh. */
        v->sym_tried = true;
        Dwfl *dwfl = report(v->pid);
        mt_sym_state *st = dwfl ? mt_sym_new(dwfl) : NULL;
        if (st) {
            mt_sym_free(v->sym);
            v->sym = st;
            for (size_t i = 0; i < v->nsites; i++) {
                free(v->sites[i].label);
                v->sites[i].label = NULL;
            }
            mt_sym_frames(v->sym, false, frames[0], put_label, &c);
        } else if (dwfl) {
            dwfl_end(dwfl);
        }
    }
    if (!c.known)
        return c.buf[0] ? "(in no module known)" : "(no stack was recorded)";
    s->label = strdup(c.buf);
    return s->label ? s->label : "(out of memory)";
}
