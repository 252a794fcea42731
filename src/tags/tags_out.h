/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* MEMTRACE_TAGS: the tag scopes' files (tags_out.c). */
#ifndef MT_TAGS_OUT_H
#define MT_TAGS_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Reads MEMTRACE_TAGS at start-up; when set, puts tags in use from now
 * (every allocation is counted, in its thread's root until a scope is
 * entered) and registers the files' writing at exit. */
void mt_tags_out_start(void);
bool mt_tags_out_enabled(void);

/* Writes PATH.json and PATH.dot now; REPORT 0 at exit, else the number of
 * the profiler's report they go with. */
void mt_tags_out_write(unsigned report);

/* The path of node ID from its thread's root, names joined by '/'
 * ("parser/lexer"), into BUF (SIZE bytes, cut to fit); "" for 0 and for
 * a root (the pprof profiles' tag label). */
void mt_tag_path(uint32_t id, char *buf, size_t size);

#endif
