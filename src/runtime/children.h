/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* MEMTRACE_CHILDREN (children.c): whether what the program starts is
 * traced too. Its answer and the per-process file names the children
 * find are base/children_env.h's, which the reports use too. */
#ifndef MT_CHILDREN_H
#define MT_CHILDREN_H

#include <stdbool.h>
#include <stddef.h>

/* With MEMTRACE_CHILDREN=0, removes the memtrace libraries from the
 * LD_PRELOAD of this process's environment (in place, no heap), so that
 * the programs it starts run untraced. Called once, from the library's
 * constructor, before the program's main. */
void mt_children_untrace(void);

/* Looks up the real exec functions (called before main). */
void mt_children_lookup(void);

/* The exec family, interposed (mt_execve & co.): base/upcalls.h. */

#endif
