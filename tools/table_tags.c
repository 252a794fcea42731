/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `memtrace tags`: the tag scopes' trees read from the target's tables
 * (the node array memtrace_state's tag_* words describe) and written by
 * the library's own formatter (src/tags/tags_format.c), as text, JSON or
 * DOT. Every count and size read is bounded first (a core may be damaged:
 * doc/design.adoc, trap 15). */
#include "table_answers.h"

#include "tags/tags_format.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define CORRUPT "memtrace_state looks corrupted ("

static mt_out *answer; /* emit's: the request's output */

static void emit(void *ctx, const char *s, size_t len)
{
    (void)ctx;
    mt_out_write(answer, s, len);
}

static const char *thread_name(void *ctx, uint32_t number)
{
    const char *name = "";
    if (!mt_tables_thread_name(ctx, number, &name) || !name)
        return "";
    return name;
}

/* The nodes into V (N of them); false with T's error set. */
static bool read_nodes(mt_tables *t, uint64_t array, uint32_t n, mt_tag_view *v)
{
    const struct memtrace_state *d = &t->d;
    size_t per = MT_TABLES_READ_MAX / d->tag_node_size;
    for (uint32_t first = 1; first < n; first += (uint32_t)per) {
        uint32_t count = n - first < per ? n - first : (uint32_t)per;
        const char *raw =
            mt_tables_read_at(t, array + first * d->tag_node_size, count * d->tag_node_size);
        if (!raw)
            return mt_tables_fail(t, CORRUPT "tag nodes at %#" PRIx64 " unreadable)", array);
        for (uint32_t i = 0; i < count; i++) {
            const char *r = raw + i * d->tag_node_size;
            mt_tag_view *o = &v[first + i];
            uint64_t frees, free_bytes;
            memcpy(&o->allocs, r + d->tag_allocs, 8);
            memcpy(&o->alloc_bytes, r + d->tag_alloc_bytes, 8);
            memcpy(&o->frees, r + d->tag_frees, 8);
            memcpy(&o->free_bytes, r + d->tag_free_bytes, 8);
            memcpy(&frees, r + d->tag_remote_frees, 8);
            memcpy(&free_bytes, r + d->tag_remote_free_bytes, 8);
            o->frees += frees;
            o->free_bytes += free_bytes;
            memcpy(&o->parent, r + d->tag_parent, 4);
            memcpy(&o->root, r + d->tag_root, 4);
            memcpy(&o->thread, r + d->tag_thread, 4);
            memcpy(o->name, r + d->tag_name, d->tag_name_size);
            o->name[d->tag_name_size - 1] = '\0';
        }
    }
    return true;
}

bool mt_table_tags(mt_tables *t, enum mt_tag_format format, int pid, mt_out *out)
{
    const struct memtrace_state *d = &t->d;
    if (!d->tag_nodes) {
        mt_out_printf(out,
                      "memtrace: this library has no tag scopes (older than memtrace_tag_push)\n");
        return true;
    }
    if (d->tag_max == 0 || d->tag_max > MT_TAG_MAX || d->tag_node_size < d->tag_name + 2 ||
        d->tag_node_size > 4096 || d->tag_name_size < 2 || d->tag_name_size > MT_TAG_NAME_MAX + 1 ||
        d->tag_name + d->tag_name_size > d->tag_node_size || d->tag_allocs + 8 > d->tag_node_size ||
        d->tag_alloc_bytes + 8 > d->tag_node_size || d->tag_frees + 8 > d->tag_node_size ||
        d->tag_free_bytes + 8 > d->tag_node_size || d->tag_remote_frees + 8 > d->tag_node_size ||
        d->tag_remote_free_bytes + 8 > d->tag_node_size || d->tag_parent + 4 > d->tag_node_size ||
        d->tag_root + 4 > d->tag_node_size || d->tag_thread + 4 > d->tag_node_size)
        return mt_tables_fail(t, CORRUPT "tag node layout implausible)");
    uint64_t array;
    uint32_t n;
    const void *p = mt_tables_read_at(t, d->tag_nodes, 8);
    if (!p)
        return mt_tables_fail(t, CORRUPT "tag scope words unreadable)");
    memcpy(&array, p, 8);
    if (!(p = mt_tables_read_at(t, d->tag_count, 4)))
        return mt_tables_fail(t, CORRUPT "tag scope words unreadable)");
    memcpy(&n, p, 4);
    if (!array) {
        mt_out_printf(out,
                      "memtrace: no tag scopes: none was entered and MEMTRACE_TAGS is unset\n");
        return true;
    }
    if (n > d->tag_max)
        return mt_tables_fail(t, CORRUPT "%" PRIu32 " tag nodes, more than %" PRIu64 ")", n,
                              d->tag_max);
    mt_tag_view *v = calloc((size_t)(n ? n : 1), sizeof *v);
    void *scratch = malloc(mt_tag_scratch_bytes(n));
    bool good = v && scratch && read_nodes(t, array, n, v);
    answer = out;
    if (good)
        mt_tag_write(format, v, n, scratch, emit, thread_name, t, pid);
    else if (!v || !scratch)
        good = mt_tables_fail(t, "out of memory for %" PRIu32 " tag nodes", n);
    free(v);
    free(scratch);
    return good;
}

/* ---- a node's path, read a node at a time */

struct path_reader {
    mt_tables *t;
    uint64_t array;
    char name[MT_TAG_NAME_MAX + 1];
};

static const char *node_name(void *ctx, uint32_t id)
{
    struct path_reader *r = ctx;
    const struct memtrace_state *d = &r->t->d;
    const char *raw =
        mt_tables_read_at(r->t, r->array + id * d->tag_node_size + d->tag_name, d->tag_name_size);
    r->name[0] = '\0';
    if (raw) {
        memcpy(r->name, raw, d->tag_name_size);
        r->name[d->tag_name_size - 1] = '\0';
    }
    return r->name;
}

static uint32_t node_parent(void *ctx, uint32_t id)
{
    struct path_reader *r = ctx;
    const struct memtrace_state *d = &r->t->d;
    const char *raw = mt_tables_read_at(r->t, r->array + id * d->tag_node_size + d->tag_parent, 4);
    uint32_t parent = 0;
    if (raw)
        memcpy(&parent, raw, 4);
    return parent;
}

void mt_table_tag_path(mt_tables *t, uint32_t id, char *buf, size_t size)
{
    const struct memtrace_state *d = &t->d;
    if (size)
        buf[0] = '\0';
    if (id == 0 || !d->tag_nodes || d->tag_name_size < 2 ||
        d->tag_name_size > MT_TAG_NAME_MAX + 1 || d->tag_node_size > 4096 ||
        d->tag_name + d->tag_name_size > d->tag_node_size || d->tag_parent + 4 > d->tag_node_size)
        return;
    const void *p = mt_tables_read_at(t, d->tag_nodes, 8), *c = NULL;
    uint64_t array;
    uint32_t n;
    if (!p)
        return;
    memcpy(&array, p, 8);
    if (!array || !(c = mt_tables_read_at(t, d->tag_count, 4)))
        return;
    memcpy(&n, c, 4);
    if (n > d->tag_max)
        return;
    struct path_reader r = { t, array, "" };
    mt_tag_path_of(id, n, node_name, node_parent, &r, buf, size);
}
