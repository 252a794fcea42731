/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `memtrace export --heaptrack`: the timeline as heaptrack's own data
 * file, the one heaptrack_interpret writes and heaptrack_print and
 * heaptrack_gui read (file format version 2: lines of a mode character
 * and hexadecimal numbers). Definitions come before their first use:
 * strings (s, numbered from 1), instruction pointers (i: address, module
 * string, then function, file and line for each row of the inline chain,
 * innermost first), trace nodes (t: ip and parent node, the root 0),
 * allocation kinds (a: size and trace, numbered from 0); then the events,
 * + and - with an allocation kind, and c, the time in ms. Culled blocks
 * (MEMTRACE_RECORD_CULL_MS) become as many + and - pairs, each block of
 * the average size (the last takes the remainder), so that the totals
 * match. The output is gzip or zstd, as heaptrack picks by the name
 * (.gz, .zst). */
#include "timeline.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

/* ---- the output, through the compressor its name asks for */

typedef struct {
    gzFile gz;
    FILE *f;
    ZSTD_CCtx *z;
    char buf[1 << 16];
    size_t len;
    uint8_t *zout;
    size_t zcap;
    bool failed;
} sink;

static void zflush(sink *s, ZSTD_EndDirective end)
{
    ZSTD_inBuffer in = { s->buf, s->len, 0 };
    for (;;) {
        ZSTD_outBuffer out = { s->zout, s->zcap, 0 };
        size_t left = ZSTD_compressStream2(s->z, &out, &in, end);
        if (ZSTD_isError(left) || fwrite(s->zout, 1, out.pos, s->f) != out.pos) {
            s->failed = true;
            return;
        }
        if (end == ZSTD_e_end ? left == 0 : in.pos == in.size)
            return;
    }
}

static void flush(sink *s)
{
    if (s->gz && s->len && gzwrite(s->gz, s->buf, (unsigned)s->len) != (int)s->len)
        s->failed = true;
    else if (s->z)
        zflush(s, ZSTD_e_continue);
    s->len = 0;
}

static void out(sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(sink *s, const char *fmt, ...)
{
    if (s->len > sizeof s->buf - 4096)
        flush(s);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(s->buf + s->len, sizeof s->buf - s->len, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n < sizeof s->buf - s->len)
        s->len += (size_t)n;
}

/* ---- the definitions, each written once, when first used */

typedef struct {
    uint64_t *key; /* 0: empty */
    uint64_t *val;
    size_t cap, n;
} map;

static uint64_t *slot(map *m, uint64_t key)
{
    if (2 * (m->n + 1) > m->cap) {
        map old = *m;
        m->cap = old.cap ? 2 * old.cap : 4096;
        m->key = calloc(m->cap, sizeof *m->key);
        m->val = calloc(m->cap, sizeof *m->val);
        if (!m->key || !m->val)
            die_oom();
        m->n = 0;
        for (size_t i = 0; i < old.cap; i++)
            if (old.key[i])
                *slot(m, old.key[i]) = old.val[i];
        free(old.key);
        free(old.val);
    }
    size_t j = (size_t)(key * 0x9e3779b97f4a7c15ull >> 17) & (m->cap - 1);
    while (m->key[j] && m->key[j] != key)
        j = (j + 1) & (m->cap - 1);
    if (!m->key[j]) {
        m->key[j] = key;
        m->val[j] = 0;
        m->n++;
    }
    return &m->val[j];
}

typedef struct {
    sink *s;
    const tl_file *r;
    char **strs; /* the strings written, for their numbers (a sorted copy would do too) */
    map str_index, ips, traces, kinds, stack_trace, aliases;
    uint64_t nstrs, nips, ntraces, nkinds;
    uint64_t *kind_size, *kind_trace; /* by kind number + 1, KIND_CAP of each */
    size_t kind_cap;
} defs;

static uint64_t hash_str(const char *p)
{
    uint64_t h = 1469598103934665603ull;
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h | 1;
}

/* The number of string P (0 for NULL), written first if new. Strings
 * are told apart by a 64-bit hash and compared on a hit; two that share
 * one probe on: a linear chain through the hash plus a counter. */
static uint64_t string(defs *d, const char *p)
{
    if (!p || !*p)
        return 0;
    for (uint64_t h = hash_str(p);; h = (h + 2) | 1) {
        uint64_t *v = slot(&d->str_index, h);
        if (*v && strcmp(d->strs[*v], p) == 0)
            return *v;
        if (*v)
            continue;
        *v = ++d->nstrs;
        d->strs = tl_xrealloc(d->strs, (d->nstrs + 1) * sizeof *d->strs);
        d->strs[*v] = strdup(p);
        char line[1024];
        size_t n = strcspn(p, "\n");
        snprintf(line, sizeof line, "%.*s", (int)(n < 1000 ? n : 1000), p);
        out(d->s, "s %s\n", line);
        return *v;
    }
}

static uint64_t ip(defs *d, uint64_t addr)
{
    uint64_t *v = slot(&d->ips, addr + 1);
    if (*v)
        /* cppcheck-suppress identicalInnerCondition ; slot() may return a filled slot */
        return *v;
    const tl_module *m = tl_module_of(d->r, addr);
    const tl_symbol *sym = tl_symbol_of(d->r, addr);
    uint64_t mod = string(d, m ? m->path : NULL);
    uint64_t f[32][3];
    unsigned rows = sym ? sym->nrows : 0;
    if (rows > 32)
        rows = 32;
    for (unsigned k = 0; k < rows; k++) {
        f[k][0] = string(d, sym->rows[k].function);
        f[k][1] = string(d, sym->rows[k].file);
        f[k][2] = sym->rows[k].line;
    }
    if (!rows || !f[0][0]) {
        /* heaptrack_print merges frames by (function, module): unnamed ones
         * of a module would all be one site. Named as memtrace's own
         * answers name them, module+offset (the offset addr2line takes). */
        char name[320];
        if (m) {
            const char *base = strrchr(m->path, '/');
            snprintf(name, sizeof name, "%.255s+0x%lx", base ? base + 1 : m->path,
                     (unsigned long)(addr - 1 - m->bias));
        } else {
            snprintf(name, sizeof name, "0x%lx", (unsigned long)addr);
        }
        f[0][0] = string(d, name);
        f[0][1] = rows ? f[0][1] : 0;
        rows = rows ? rows : 1;
    }
    *v = ++d->nips;
    out(d->s, "i %lx %lx", (unsigned long)addr, (unsigned long)mod);
    if (rows && f[0][0]) {
        out(d->s, " %lx", (unsigned long)f[0][0]);
        if (f[0][1]) {
            out(d->s, " %lx %lx", (unsigned long)f[0][1], (unsigned long)f[0][2]);
            /* the inlined rows: a row without a function or file ends them */
            for (unsigned k = 1; k < rows && f[k][0] && f[k][1]; k++)
                out(d->s, " %lx %lx %lx", (unsigned long)f[k][0], (unsigned long)f[k][1],
                    (unsigned long)f[k][2]);
        }
    }
    out(d->s, "\n");
    return *v;
}

/* The trace node of STACK (its frames from the outermost in). */
static uint64_t trace(defs *d, uint32_t stack)
{
    uint64_t *v = slot(&d->stack_trace, (uint64_t)stack + 1);
    if (*v)
        /* cppcheck-suppress identicalInnerCondition ; slot() may return a filled slot */
        return *v;
    const tl_stack *st = tl_stack_of(d->r, stack);
    uint64_t parent = 0;
    for (unsigned i = st ? st->depth : 0; i-- > 0;) {
        uint64_t node_ip = ip(d, st->frames[i]);
        uint64_t *n = slot(&d->traces, node_ip << 32 ^ parent ^ (parent >> 32) << 48);
        if (!*n) { /* keyed by (ip, parent): ips and parents stay below 2^32 */
            *n = ++d->ntraces;
            out(d->s, "t %lx %lx\n", (unsigned long)node_ip, (unsigned long)parent);
        }
        parent = *n;
    }
    return *(slot(&d->stack_trace, (uint64_t)stack + 1)) = parent;
}

/* The allocation kind of (SIZE, STACK's trace), numbered from 0 and
 * written first if new. Kinds are told apart by a 64-bit hash of both
 * (a size takes all 64 bits) and compared on a hit, probing on as
 * string() does. */
static uint64_t kind(defs *d, uint64_t size, uint32_t stack)
{
    uint64_t tr = trace(d, stack);
    uint64_t h = (size * 0x9e3779b97f4a7c15ull ^ tr) * 0xff51afd7ed558ccdull;
    for (h |= 1;; h = (h + 2) | 1) {
        uint64_t *v = slot(&d->kinds, h);
        if (*v && d->kind_size[*v] == size && d->kind_trace[*v] == tr)
            return *v - 1;
        if (*v)
            continue;
        *v = ++d->nkinds;
        if (d->nkinds >= d->kind_cap) {
            d->kind_cap = d->kind_cap ? 2 * d->kind_cap : 1024;
            d->kind_size = tl_xrealloc(d->kind_size, d->kind_cap * sizeof *d->kind_size);
            d->kind_trace = tl_xrealloc(d->kind_trace, d->kind_cap * sizeof *d->kind_trace);
        }
        d->kind_size[*v] = size;
        d->kind_trace[*v] = tr;
        out(d->s, "a %lx %lx\n", (unsigned long)size, (unsigned long)tr);
        return *v - 1;
    }
}

/* ---- the temporary allocations' order */

/* heaptrack_print counts a free temporary when the line before it
 * allocated the same kind number (store/temporary.h); the timeline's rule
 * is per thread and knows of culled events (G, K records). So a kind is
 * written under up to three numbers, "a" lines of the same size and trace
 * (heaptrack's figures go by trace, not by number): its own, a second one
 * chosen for an allocation right before a free whose count would otherwise
 * differ from the rule's, and one for culled blocks that were not
 * temporary. */
enum { ALIAS_OWN, ALIAS_OTHER, ALIAS_CULLED };
#define ALIAS_SHIFT 60
#define ALIAS_KIND ((1ull << ALIAS_SHIFT) - 1)

/* The number kind KD is written under as ALIAS, its "a" line first if new. */
static uint64_t alias_of(defs *d, uint64_t kd, int alias)
{
    if (alias == ALIAS_OWN)
        return kd;
    uint64_t *v = slot(&d->aliases, (kd + 1) << 2 | (uint64_t)alias);
    if (!*v) {
        /* NOLINTNEXTLINE(clang-analyzer-core.NullDereference): KD is a kind already made, so its arrays exist */
        out(d->s, "a %lx %lx\n", (unsigned long)d->kind_size[kd + 1],
            (unsigned long)d->kind_trace[kd + 1]);
        *v = ++d->nkinds;
        if (d->nkinds >= d->kind_cap) {
            d->kind_cap = 2 * d->kind_cap;
            d->kind_size = tl_xrealloc(d->kind_size, d->kind_cap * sizeof *d->kind_size);
            d->kind_trace = tl_xrealloc(d->kind_trace, d->kind_cap * sizeof *d->kind_trace);
        }
        d->kind_size[*v] = d->kind_trace[*v] = 0; /* an alias: no kind of its own */
    }
    return *v - 1;
}

/* Per thread: the rule's latest kind + 1, 0 none. */
typedef struct {
    uint64_t *kind;
    size_t n;
} latest_kinds;

static uint64_t *latest_of(latest_kinds *lk, uint32_t thread)
{
    if (thread >= lk->n) {
        size_t n = thread + 64;
        lk->kind = tl_xrealloc(lk->kind, n * sizeof *lk->kind);
        memset(lk->kind + lk->n, 0, (n - lk->n) * sizeof *lk->kind);
        lk->n = n;
    }
    return &lk->kind[thread];
}

/* The alias for the allocation of kind KD that event I is, its line
 * written right before event I + 1's: when that is the free of a block
 * of kind KD, the one that makes heaptrack_print's count of it the
 * rule's (LK: the latest kinds with event I applied). */
static int alias_before(defs *d, map *lv, latest_kinds *lk, const tl_file *r, size_t i, uint64_t kd)
{
    if (i + 1 >= r->nev || !ev_is_free((int)(r->ev[i + 1].thread_kind & 0xff)) ||
        r->ev[i + 1].addr == r->ev[i].addr)
        return ALIAS_OWN;
    const tl_event *f = &r->ev[i + 1];
    uint64_t b = *slot(lv, f->addr);
    if (!b || (b & ALIAS_KIND) - 1 != kd)
        return ALIAS_OWN; /* another kind: heaptrack_print does not count it either */
    int k = (int)(f->thread_kind & 0xff);
    uint64_t latest = k == EV_FREE_ARMED      ? kind(d, f->size, f->stack) + 1
                      : k == EV_FREE_DISARMED ? 0
                                              : *latest_of(lk, f->thread_kind >> 8);
    bool temporary = latest == kd + 1;
    int freed = (int)(b >> ALIAS_SHIFT);
    return temporary ? freed : freed == ALIAS_OWN ? ALIAS_OTHER : ALIAS_OWN;
}

/* Frees owed to culled blocks of alias number ALIAS (N more): written once
 * a "-" line has cleared heaptrack_print's latest kind (N 0: now). */
static void owe_frees(sink *s, uint64_t *owed, uint64_t *owed_alias, uint64_t alias, uint64_t n)
{
    /* another alias's owed frees go now: the line before them is then an
     * allocation of ALIAS, or a "-" */
    if (!n || *owed_alias != alias)
        for (; *owed; --*owed)
            out(s, "- %lx\n", (unsigned long)*owed_alias);
    if (n) {
        *owed += n;
        *owed_alias = alias;
    }
}

/* ---- the events */

/* The culled blocks a heaptrack file is written with, in all: each is a
 * line pair, so 2 GiB of text at the bound (12 s gzip'd, 1.3 s as zstd,
 * here). The writer counts a stack's culled blocks per drain (every
 * 10 ms), at most a ring's worth (timeline/ring.h: 2^16 words, 6 a block)
 * per thread: 2^28 is 24,000 threads' full rings. */
#define EXPORT_CULLED_MAX (1ull << 28)

typedef struct {
    uint64_t addr, kind; /* addr 0: empty */
} live;

/* Whether R's culled blocks, a line pair each in the file, stay within
 * EXPORT_CULLED_MAX: bounded before anything is written (a damaged or
 * crafted count of 2^40 would write for days). */
static bool culled_bounded(const tl_file *r)
{
    uint64_t culled = 0;
    for (size_t i = 0; i < r->nev; i++)
        if ((r->ev[i].thread_kind & 0xff) == EV_CULLED &&
            (culled += r->ev[i].addr) > EXPORT_CULLED_MAX) {
            fprintf(stderr,
                    "memtrace export: %s: its culled blocks exceed %llu, the heaptrack "
                    "export's bound (a damaged recording?); --json reads it\n",
                    r->path, (unsigned long long)EXPORT_CULLED_MAX);
            return false;
        }
    return true;
}

/* S writing to a new file at PATH, through gzip (GZ) or zstd; false when
 * it cannot be created (said). */
static bool sink_open(sink *s, const char *path, bool gz)
{
    int fd = export_open(path);
    if (fd < 0)
        return false;
    if (gz)
        s->gz = gzdopen(fd, "wb6");
    else if ((s->f = fdopen(fd, "wb"))) {
        s->z = ZSTD_createCCtx();
        s->zcap = ZSTD_CStreamOutSize();
        s->zout = tl_xrealloc(NULL, s->zcap);
    }
    if (!s->gz && !s->f)
        die_oom();
    return true;
}

/* Writes out what S holds and closes its file; false when a write failed
 * (said). */
static bool sink_close(sink *s, const char *path)
{
    flush(s);
    if (s->gz && gzclose(s->gz) != Z_OK)
        s->failed = true;
    if (s->z) {
        zflush(s, ZSTD_e_end);
        if (fclose(s->f) != 0)
            s->failed = true;
    }
    if (s->failed)
        fprintf(stderr, "memtrace-export: %s: a write failed\n", path);
    return !s->failed;
}

/* The events' state as they are written. */
typedef struct {
    sink *s;
    defs d;
    /* Live block address -> its kind + 1 | its alias << ALIAS_SHIFT. */
    map lv;
    latest_kinds lk;
    uint64_t owed, owed_alias; /* culled frees written after the next "-" */
    /* Culled blocks written ahead of their K record, by stack id + 1: the
     * latest allocation a G record names, which made the free after it
     * temporary (its line goes right before that free's, its free right
     * after; its K record then writes one block fewer). */
    map borrowed;
    uint64_t prev_plus; /* the number of a "+" line just written, else MAX */
} stream;

/* A K record E: TEMPS of its COUNT blocks were temporary allocations:
 * those as "+ k" "- k" pairs, which heaptrack_print counts so; the others
 * under an alias no live block has, their allocations before the pairs
 * and their frees after them (with no pair, after the stream's next "-"),
 * where the latest kind is cleared. */
static void write_culled(stream *st, const tl_event *e, uint64_t temps)
{
    sink *s = st->s;
    uint64_t count = e->addr;
    uint64_t *lent = slot(&st->borrowed, (uint64_t)e->stack + 1);
    uint64_t m = *lent < count ? *lent : count;
    *lent -= m;
    count -= m; /* the others first: a lent block's free was not temporary */
    temps = temps < count ? temps : count;
    uint64_t each = count ? e->size / count : 0;
    uint64_t kd = kind(&st->d, each, e->stack);
    uint64_t last = count ? kind(&st->d, e->size - each * (count - 1), e->stack) : kd;
    uint64_t others = count - temps, untemp = alias_of(&st->d, kd, ALIAS_CULLED);
    for (uint64_t j = 0; j < others; j++)
        out(s, "+ %lx\n", (unsigned long)untemp);
    if (temps > 1) {
        char pair[48];
        int n = snprintf(pair, sizeof pair, "+ %lx\n- %lx\n", (unsigned long)kd, (unsigned long)kd);
        for (uint64_t left = temps - 1; left; left--) {
            if (s->len + (size_t)n > sizeof s->buf)
                flush(s);
            memcpy(s->buf + s->len, pair, (size_t)n);
            s->len += (size_t)n;
        }
    }
    if (temps)
        out(s, "+ %lx\n- %lx\n", (unsigned long)last, (unsigned long)last);
    if (temps) {
        for (uint64_t j = 0; j < others; j++)
            out(s, "- %lx\n", (unsigned long)untemp);
    } else {
        owe_frees(s, &st->owed, &st->owed_alias, untemp, others);
    }
    if (count)
        st->prev_plus = temps || !others || st->owed_alias != untemp ? UINT64_MAX : untemp;
}

/* Event I of R, an allocation or a free (K its kind, TH its thread). */
static void write_event(stream *st, const tl_file *r, size_t i, int k, uint32_t th)
{
    sink *s = st->s;
    const tl_event *e = &r->ev[i];
    if (k == EV_FREE_ARMED)
        *latest_of(&st->lk, th) = kind(&st->d, e->size, e->stack) + 1;
    uint64_t *v = slot(&st->lv, e->addr);
    if (*v) { /* a free, or a missed one before an allocation */
        uint64_t a = alias_of(&st->d, (*v & ALIAS_KIND) - 1, (int)(*v >> ALIAS_SHIFT));
        bool lend = k == EV_FREE_ARMED && *latest_of(&st->lk, th) == (*v & ALIAS_KIND) &&
                    st->prev_plus != a;
        if (lend) { /* the rule's latest allocation was culled: lent here */
            out(s, "+ %lx\n", (unsigned long)a);
            ++*slot(&st->borrowed, (uint64_t)e->stack + 1);
        }
        out(s, "- %lx\n", (unsigned long)a);
        if (lend)
            out(s, "- %lx\n", (unsigned long)a);
        st->prev_plus = UINT64_MAX;
        *v = 0;
        if (st->owed)
            owe_frees(s, &st->owed, &st->owed_alias, 0, 0);
        if (ev_is_free(k)) /* a block the timeline knows: as replay.c */
            *latest_of(&st->lk, th) = 0;
    }
    if (k == EV_ALLOC) {
        uint64_t kd = kind(&st->d, e->size, e->stack);
        *latest_of(&st->lk, th) = kd + 1;
        int which = alias_before(&st->d, &st->lv, &st->lk, r, i, kd);
        *slot(&st->lv, e->addr) = (kd + 1) | (uint64_t)which << ALIAS_SHIFT;
        out(s, "+ %lx\n", (unsigned long)(st->prev_plus = alias_of(&st->d, kd, which)));
    }
}

bool export_heaptrack(const tl_file *r, const char *path)
{
    size_t plen = strlen(path);
    bool zst = plen > 4 && strcmp(path + plen - 4, ".zst") == 0;
    bool gz = plen > 3 && strcmp(path + plen - 3, ".gz") == 0;
    if (!zst && !gz) {
        fprintf(stderr,
                "memtrace-export: %s: a heaptrack file's name ends in .gz or .zst (heaptrack "
                "picks its decompressor by it)\n",
                path);
        return false;
    }
    if (!culled_bounded(r))
        return false;
    static sink s;
    if (!sink_open(&s, path, gz))
        return false;
    /* Static as the sink: its maps live as long as the exporter. */
    static stream st;
    st = (stream){ .s = &s, .d = { .s = &s, .r = r }, .prev_plus = UINT64_MAX };
    st.d.strs = tl_xrealloc(NULL, sizeof *st.d.strs);
    out(&s, "v 10400 2\n# memtrace export of a recording%s\n", r->truncated ? " (truncated)" : "");
    out(&s, "X %.3000s\n", r->command ? r->command : "");
    /* Kind 0 is never allocated: heaptrack_print clears its latest kind
     * to 0 on every free, so a free of kind 0 right after another free
     * would count as temporary (store/temporary.h); with this, its count
     * is the rule's. */
    out(&s, "a 0 0\n");
    st.d.nkinds = 1;
    uint64_t last_ms = 0;
    for (size_t i = 0; i < r->nev; i++) {
        const tl_event *e = &r->ev[i];
        uint64_t ms = e->t / 1000000;
        if (ms >= last_ms + 10) {
            out(&s, "c %lx\n", (unsigned long)ms);
            last_ms = ms;
        }
        int k = (int)(e->thread_kind & 0xff);
        uint32_t th = e->thread_kind >> 8;
        if (k == EV_CULLED)
            write_culled(&st, e, th);
        else
            write_event(&st, r, i, k, th);
    }
    if (st.owed) /* NOLINT(clang-analyzer-unix.Malloc): the maps live as long as the exporter */
        owe_frees(&s, &st.owed, &st.owed_alias, 0, 0);
    free(st.lk.kind);
    free(st.borrowed.key);
    free(st.borrowed.val);
    out(&s, "c %lx\n",
        (unsigned long)(r->duration_ns / 1000000 +
                        1)); /* NOLINT(clang-analyzer-unix.Malloc): the maps live as long as the exporter */
    return sink_close(&s, path);
}
