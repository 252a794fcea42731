/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memtrace-symbolize's requests answered from the target's tables
 * (tables.h): `memtrace EXPR`, top, stats, pprof and the recording line of
 * the gdb command, gathered here and written by the library's formatter
 * and pprof writer. The request format is in memtrace-symbolize.c. */
#ifndef MT_TOOLS_TABLE_ANSWERS_H
#define MT_TOOLS_TABLE_ANSWERS_H

#include "base/output.h"
#include "tables.h"
#include "symbolize/symbolize.h"

#include <elfutils/libdwfl.h>
#include <stdbool.h>

/* Answers LINE (one line, with its newline) if it is a tables request,
 * its text and end marker into OUT; false if it is none. READ and CTX: the
 * target's memory, for "tables". Exits 3 on a malformed request. */
bool mt_table_request(mt_tables *t, mt_sym_state *dwfl, const char *line, mt_out *out,
                      mt_tables_read_fn *read, void *ctx);

/* The recording line (mt_fmt_recording) from T into OUT; false, with T's
 * error set, when it cannot be read. */
bool mt_table_recording_line(mt_tables *t, mt_out *out);

/* "tags FORMAT PID" (table_tags.c): the tag scopes' trees of process PID
 * in FORMAT (tags/tags_format.h) into OUT; false, with T's error set, when
 * the tables cannot be read. */
enum mt_tag_format;
bool mt_table_tags(mt_tables *t, enum mt_tag_format format, int pid, mt_out *out);

/* The path of tag node ID ("parser/lexer") into BUF; "" for 0, a root,
 * or a node that cannot be read. */
void mt_table_tag_path(mt_tables *t, uint32_t id, char *buf, size_t size);

#endif
