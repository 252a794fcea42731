/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Where the pprof writer's memory comes from (pprof.h, and the writer's
 * parts: pprof_index.h, pprof_gzip.h). */
#ifndef MT_PPROF_HEAP_H
#define MT_PPROF_HEAP_H

#include <stddef.h>

/* The internal heap in the library (never the traced allocator: the
 * writer runs inside memtrace), malloc in memtrace-symbolize. ALLOC
 * returns NULL when out of memory. */
typedef struct {
    void *(*alloc)(size_t size);
    void (*free)(void *p);
} mt_pprof_heap;

#endif
