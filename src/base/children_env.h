/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the processes this one starts find in their environment of
 * memtrace's: whether MEMTRACE_CHILDREN says this process only, and the
 * per-process names of the files every process writes at its exit. Used
 * by the reports that write such files (the profiler's, pprof_out.c) and
 * by runtime/children.c, which does the rest of MEMTRACE_CHILDREN. */
#ifndef MT_CHILDREN_ENV_H
#define MT_CHILDREN_ENV_H

#include <stdbool.h>
#include <stddef.h>

/* Whether MEMTRACE_CHILDREN says 0 (this process only): read without a
 * word on a bad value, which mt_children_untrace gives. The processes it
 * execs itself then keep its settings as they are (they are this process),
 * and no other child reads them. */
bool mt_children_off(void);

/* A file that every process writes whole at its exit (MEMTRACE_FOLDED,
 * MEMTRACE_PPROF) and whose setting, TEMPLATE, has no %p belongs to this
 * process, the first of the run: the processes it starts write
 * TEMPLATE.%p instead, and never truncate it. Returns the template a
 * forked child takes (TEMPLATE, or "TEMPLATE.%p" in ENV); programs this
 * process execs find the setting so in their environment: the entry of
 * NAME in environ is pointed at ENV (SIZE bytes, static: it lives as long
 * as the process), "NAME=TEMPLATE.%p". Neither allocates nor grows environ
 * (the program's own setenv and unsetenv go on working on it); the
 * program's getenv(NAME) then sees the new value. A descendant, whose
 * template has the %p, passes it on unchanged. With MEMTRACE_CHILDREN=0
 * environ is left alone: the one program this process execs traced is
 * this process, and writes TEMPLATE as it would have. TEMPLATE NULL:
 * returns NULL. */
const char *mt_children_pass_on(const char *name, const char *template, char *env, size_t size);

#endif
