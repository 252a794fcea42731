/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The tag scopes' trees as text, JSON and Graphviz DOT, from a copy of the
 * nodes: one writer for the library (MEMTRACE_TAGS's files) and for
 * memtrace-symbolize (`memtrace tags` in gdb, live or on a core), which
 * read the nodes their own ways into mt_tag_view arrays. No heap: the
 * caller hands in scratch memory. The JSON schema is doc/tags.adoc's. */
#ifndef MT_TAGS_FORMAT_H
#define MT_TAGS_FORMAT_H

#include "tags/tags.h"

#include <stddef.h>
#include <stdint.h>

/* One node as read: FREES and FREE_BYTES are every thread's (the owner's
 * and the remote counters summed). ROOT 0: not filled in, skipped. */
typedef struct {
    uint64_t allocs, alloc_bytes, frees, free_bytes;
    uint32_t parent, root, thread;
    char name[MT_TAG_NAME_MAX + 1];
} mt_tag_view;

/* Node N of the process as a view. */
void mt_tag_view_of(const mt_tag_node *n, mt_tag_view *out);

enum mt_tag_format { MT_TAG_TEXT, MT_TAG_JSON, MT_TAG_DOT };

typedef void mt_tag_emit_fn(void *ctx, const char *s, size_t len);
/* Thread NUMBER's name, "" for none. */
typedef const char *mt_tag_thread_name_fn(void *ctx, uint32_t number);

/* The path of node ID from its thread's root, names joined by '/', into
 * BUF (SIZE bytes, cut to fit; "" for 0 and for a root), over nodes read
 * by NAME(CTX, ID) and PARENT(CTX, ID), ids below N (tags.c's mt_tag_path,
 * tools/table_tags.c). Ends on a damaged chain (a parent not below its
 * child). */
void mt_tag_path_of(uint32_t id, uint32_t n, const char *(*name)(void *ctx, uint32_t id),
                    uint32_t (*parent)(void *ctx, uint32_t id), void *ctx, char *buf, size_t size);

/* Bytes of scratch memory mt_tag_write needs for N views. */
size_t mt_tag_scratch_bytes(uint32_t n);

/* Writes the per-thread trees and the merged one (the threads' trees
 * joined by path) of views 1 .. N - 1 (V[0] unused; a node's parent has a
 * lower id than it) in FORMAT through EMIT, PID naming the process.
 * SCRATCH: mt_tag_scratch_bytes(N) bytes, 8-aligned. */
void mt_tag_write(enum mt_tag_format format, const mt_tag_view *v, uint32_t n, void *scratch,
                  mt_tag_emit_fn *emit, mt_tag_thread_name_fn *names, void *ctx, int pid);

#endif
