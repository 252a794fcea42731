/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The tag scopes' trees as text, JSON and DOT (see tags_format.h). Two
 * trees are built in the scratch memory: the threads' own (one slot per
 * view, children linked in creation order) and the merged one (a slot per
 * distinct path under "all"); each slot's totals are its self counts plus
 * its children's, summed from the highest id down (a child's id is above
 * its parent's in both). Recursion follows the trees, at most
 * MT_TAG_DEPTH_MAX + 1 deep. */
#include "tags/tags_format.h"

#include "base/json_str.h"
#include "base/output.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    uint64_t bytes, blocks, allocs, frees, alloc_bytes, free_bytes;
} counts;

typedef struct {
    counts self, total;
    uint32_t parent, first_child, next_sibling, last_child;
    uint32_t merged; /* a view's merged slot; a merged slot's first view */
    uint32_t thread;
} slot;

typedef struct {
    const mt_tag_view *v;
    uint32_t n, nmerged;
    slot *own, *merged;
    mt_tag_emit_fn *emit;
    mt_tag_thread_name_fn *names;
    void *ctx;
    uint64_t max_self; /* DOT: the largest self bytes of the graph drawn */
} writer;

void mt_tag_view_of(const mt_tag_node *n, mt_tag_view *out)
{
    out->allocs = mt_atomic_load_relaxed(&n->allocs);
    out->alloc_bytes = mt_atomic_load_relaxed(&n->alloc_bytes);
    out->frees = mt_atomic_load_relaxed(&n->frees) + mt_atomic_load_relaxed(&n->remote_frees);
    out->free_bytes =
        mt_atomic_load_relaxed(&n->free_bytes) + mt_atomic_load_relaxed(&n->remote_free_bytes);
    out->parent = n->parent;
    out->root = mt_atomic_load_acquire((const mt_atomic(uint32_t) *)&n->root);
    out->thread = n->thread;
    memcpy(out->name, n->name, sizeof out->name);
    out->name[MT_TAG_NAME_MAX] = '\0';
}

void mt_tag_path_of(uint32_t id, uint32_t n, const char *(*name)(void *ctx, uint32_t id),
                    uint32_t (*parent)(void *ctx, uint32_t id), void *ctx, char *buf, size_t size)
{
    uint32_t chain[MT_TAG_DEPTH_MAX + 1];
    unsigned depth = 0;
    /* A parent's id is below its child's: the walk ends, even on a core. */
    for (uint32_t at = id; at && at < n && depth <= MT_TAG_DEPTH_MAX;) {
        uint32_t up = parent(ctx, at);
        if (up == 0 || up >= at)
            break; /* the root (no name in the path), or damaged */
        chain[depth++] = at;
        at = up;
    }
    size_t len = 0;
    if (size)
        buf[0] = '\0';
    while (depth-- > 0 && len + 1 < size) {
        int w = snprintf(buf + len, size - len, "%s%s", len ? "/" : "", name(ctx, chain[depth]));
        if (w < 0)
            break;
        len += (size_t)w < size - len ? (size_t)w : size - len - 1;
    }
}

size_t mt_tag_scratch_bytes(uint32_t n)
{
    return 2 * ((size_t)n + 2) * sizeof(slot);
}

static void say(writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(writer *w, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (len > 0)
        w->emit(w->ctx, buf, (size_t)len < sizeof buf ? (size_t)len : sizeof buf - 1);
}

/* Bytes of a name say_quoted takes: a scope's name (MT_TAG_NAME_MAX) or a
 * DOT cluster's label (write_dot: under 80). */
#define QUOTED_MAX 80

/* NAME quoted for JSON and DOT alike, valid JSON for any bytes
 * (base/json_str.h). */
static void say_quoted(writer *w, const char *name)
{
    char buf[MT_JSON_CHAR_MAX * QUOTED_MAX + 3], *p = buf;
    size_t len = strnlen(name, QUOTED_MAX);
    const unsigned char *s = (const unsigned char *)name, *end = s + len;
    *p++ = '"';
    while (s < end)
        p += mt_json_char(&s, end, p);
    *p++ = '"';
    w->emit(w->ctx, buf, (size_t)(p - buf));
}

static void add(counts *to, const counts *c)
{
    to->bytes += c->bytes;
    to->blocks += c->blocks;
    to->allocs += c->allocs;
    to->frees += c->frees;
    to->alloc_bytes += c->alloc_bytes;
    to->free_bytes += c->free_bytes;
}

static void link_child(slot *t, uint32_t parent, uint32_t id)
{
    t[id].parent = parent;
    if (t[parent].last_child)
        t[t[parent].last_child].next_sibling = id;
    else
        t[parent].first_child = id;
    t[parent].last_child = id;
}

/* Slot 1 of the merged tree is "all"; the others are made as paths meet. */
static void build(writer *w)
{
    slot *own = w->own, *m = w->merged;
    memset(own, 0, ((size_t)w->n + 2) * sizeof *own);
    memset(m, 0, ((size_t)w->n + 2) * sizeof *m);
    w->nmerged = 2;
    for (uint32_t id = 1; id < w->n; id++) {
        const mt_tag_view *v = &w->v[id];
        if (!v->root || v->parent >= id || (v->parent && !w->v[v->parent].root))
            continue; /* not filled in, or damaged (a core) */
        slot *s = &own[id];
        s->self = (counts){ v->alloc_bytes - v->free_bytes,
                            v->allocs - v->frees,
                            v->allocs,
                            v->frees,
                            v->alloc_bytes,
                            v->free_bytes };
        s->thread = v->thread;
        if (v->parent)
            link_child(own, v->parent, id);
        uint32_t mp = v->parent ? own[v->parent].merged : 1, c = 0;
        if (v->parent) {
            for (c = m[mp].first_child; c; c = m[c].next_sibling)
                if (strcmp(w->v[m[c].merged].name, v->name) == 0)
                    break;
            if (!c) {
                c = w->nmerged++;
                m[c].merged = id;
                link_child(m, mp, c);
            }
        } else {
            c = 1;
        }
        s->merged = c;
        add(&m[c].self, &s->self);
    }
    for (uint32_t id = w->n; id-- > 1;) {
        add(&own[id].total, &own[id].self);
        if (own[id].parent)
            add(&own[own[id].parent].total, &own[id].total);
    }
    for (uint32_t id = w->nmerged; id-- > 1;) {
        add(&m[id].total, &m[id].self);
        if (m[id].parent)
            add(&m[m[id].parent].total, &m[id].total);
    }
}

static const char *name_of(const writer *w, const slot *t, uint32_t id)
{
    if (t == w->merged)
        return id == 1 ? "all" : w->v[t[id].merged].name;
    return w->v[id].name;
}

/* ---- text */

static void text_node(writer *w, const slot *t, uint32_t id, unsigned depth)
{
    const slot *s = &t[id];
    char root[32], esc[4 * MT_TAG_NAME_MAX + 1]; /* escaped as reports are (base/output.h) */
    const char *name = esc;
    mt_text_escape(esc, sizeof esc, name_of(w, t, id));
    if (t == w->own && !s->parent) {
        snprintf(root, sizeof root, "thread %u", s->thread);
        name = root;
    }
    say(w,
        "%*s%s: %" PRIu64 " bytes in %" PRIu64 " blocks, %" PRIu64 " allocations, %" PRIu64
        " frees; self %" PRIu64 " bytes in %" PRIu64 " blocks, %" PRIu64 " allocations, %" PRIu64
        " frees\n",
        (int)(2 * depth), "", name, s->total.bytes, s->total.blocks, s->total.allocs,
        s->total.frees, s->self.bytes, s->self.blocks, s->self.allocs, s->self.frees);
    for (uint32_t c = s->first_child; c; c = t[c].next_sibling)
        text_node(w, t, c, depth + 1);
}

static void write_text(writer *w, int pid)
{
    uint32_t threads = 0;
    for (uint32_t id = 1; id < w->n; id++)
        threads += w->v[id].root == id;
    say(w,
        "memtrace tags: process %d, %u threads, %u scopes (bytes and blocks live now; "
        "allocations and frees since tags came into use)\n",
        pid, threads, w->nmerged - 2);
    for (uint32_t id = 1; id < w->n; id++) {
        if (w->v[id].root != id)
            continue;
        char tn[4 * MT_TAG_NAME_MAX + 1];
        mt_text_escape(tn, sizeof tn, w->names ? w->names(w->ctx, w->v[id].thread) : "");
        say(w, "thread %u%s%s%s:\n", w->v[id].thread, *tn ? " \"" : "", tn, *tn ? "\"" : "");
        text_node(w, w->own, id, 1);
    }
    say(w, "all threads:\n");
    text_node(w, w->merged, 1, 1);
}

/* ---- JSON */

static void json_counts(writer *w, const char *key, const counts *c)
{
    say(w,
        "\"%s\":{\"bytes\":%" PRIu64 ",\"blocks\":%" PRIu64 ",\"allocs\":%" PRIu64
        ",\"frees\":%" PRIu64 ",\"alloc_bytes\":%" PRIu64 ",\"free_bytes\":%" PRIu64 "}",
        key, c->bytes, c->blocks, c->allocs, c->frees, c->alloc_bytes, c->free_bytes);
}

static void json_node(writer *w, const slot *t, uint32_t id)
{
    const slot *s = &t[id];
    say(w, "{\"name\":");
    say_quoted(w, t == w->own && !s->parent ? "" : name_of(w, t, id));
    say(w, ",");
    json_counts(w, "self", &s->self);
    say(w, ",");
    json_counts(w, "total", &s->total);
    say(w, ",\"children\":[");
    for (uint32_t c = s->first_child; c; c = t[c].next_sibling) {
        json_node(w, t, c);
        if (t[c].next_sibling)
            say(w, ",");
    }
    say(w, "]}");
}

static void write_json(writer *w, int pid)
{
    say(w, "{\"version\":1,\"pid\":%d,\"threads\":[", pid);
    bool first = true;
    for (uint32_t id = 1; id < w->n; id++) {
        if (w->v[id].root != id)
            continue;
        say(w, "%s\n{\"thread\":%u,\"name\":", first ? "" : ",", w->v[id].thread);
        say_quoted(w, w->names ? w->names(w->ctx, w->v[id].thread) : "");
        say(w, ",\"root\":");
        json_node(w, w->own, id);
        say(w, "}");
        first = false;
    }
    say(w, "],\n\"merged\":");
    json_node(w, w->merged, 1);
    say(w, "}\n");
}

/* ---- DOT: a cluster per thread and one for the merged tree; a node's
 * fill goes from white (no self bytes) to red (the most self bytes of its
 * graph), as malloc-tag colours its nodes by self memory. */

static void human(char *buf, size_t size, uint64_t bytes)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    double b = (double)bytes;
    unsigned u = 0;
    while (b >= 1024 && u < 4) {
        b /= 1024;
        u++;
    }
    snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
}

static void dot_max(writer *w, const slot *t, uint32_t id)
{
    if (t[id].self.bytes > w->max_self && t[id].self.bytes < (uint64_t)1 << 63)
        w->max_self = t[id].self.bytes;
    for (uint32_t c = t[id].first_child; c; c = t[c].next_sibling)
        dot_max(w, t, c);
}

static void dot_node(writer *w, const slot *t, uint32_t id, char prefix)
{
    const slot *s = &t[id];
    char self[32], total[32], root[32];
    human(self, sizeof self, s->self.bytes);
    human(total, sizeof total, s->total.bytes);
    const char *name = name_of(w, t, id);
    if (t == w->own && !s->parent) {
        snprintf(root, sizeof root, "thread %u", s->thread);
        name = root;
    }
    uint64_t b = s->self.bytes < (uint64_t)1 << 63 ? s->self.bytes : 0;
    unsigned shade = w->max_self ? (unsigned)(255 - (255 * b) / w->max_self) : 255;
    say(w, "  %c%u [label=", prefix, id);
    say_quoted(w, name);
    say(w,
        " + \"\\nself %s in %" PRIu64 " blocks\\ntotal %s in %" PRIu64 " blocks\\n%" PRIu64
        " allocs, %" PRIu64 " frees\", fillcolor=\"#ff%02x%02x\"];\n",
        self, s->self.blocks, total, s->total.blocks, s->total.allocs, s->total.frees, shade,
        shade);
    if (s->parent)
        say(w, "  %c%u -> %c%u;\n", prefix, s->parent, prefix, id);
    for (uint32_t c = s->first_child; c; c = t[c].next_sibling)
        dot_node(w, t, c, prefix);
}

static void write_dot(writer *w, int pid)
{
    say(w, "digraph memtrace_tags {\n  label=\"memtrace tags, process %d\";\n", pid);
    say(w, "  node [shape=box, style=filled, fontname=\"sans-serif\"];\n");
    for (uint32_t id = 1; id < w->n; id++) {
        if (w->v[id].root != id)
            continue;
        const char *tn = w->names ? w->names(w->ctx, w->v[id].thread) : "";
        say(w, " subgraph cluster_t%u {\n  label=", id);
        char label[80];
        snprintf(label, sizeof label, "thread %u%s%.40s", w->v[id].thread, *tn ? " " : "", tn);
        say_quoted(w, label);
        say(w, ";\n");
        w->max_self = 0;
        dot_max(w, w->own, id);
        dot_node(w, w->own, id, 't');
        say(w, " }\n");
    }
    say(w, " subgraph cluster_merged {\n  label=\"all threads\";\n");
    w->max_self = 0;
    dot_max(w, w->merged, 1);
    dot_node(w, w->merged, 1, 'm');
    say(w, " }\n}\n");
}

void mt_tag_write(enum mt_tag_format format, const mt_tag_view *v, uint32_t n, void *scratch,
                  mt_tag_emit_fn *emit, mt_tag_thread_name_fn *names, void *ctx, int pid)
{
    writer w = { .v = v, .n = n ? n : 1, .emit = emit, .names = names, .ctx = ctx };
    w.own = scratch;
    w.merged = w.own + w.n + 2;
    build(&w);
    if (format == MT_TAG_JSON)
        write_json(&w, pid);
    else if (format == MT_TAG_DOT)
        write_dot(&w, pid);
    else
        write_text(&w, pid);
}
