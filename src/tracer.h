/* The interposed allocation entry points (mt_malloc & co., called by the
 * preload shim): the hot path. */
#ifndef MT_TRACER_H
#define MT_TRACER_H

#include "atomic.h"

#include <stddef.h>
#include <stdint.h>

void *mt_malloc(size_t size);
void mt_free(void *ptr);
void *mt_calloc(size_t n, size_t size);
void *mt_realloc(void *ptr, size_t size);
void *mt_reallocarray(void *ptr, size_t n, size_t size);
int mt_posix_memalign(void **out, size_t align, size_t size);
void *mt_aligned_alloc(size_t align, size_t size);
void *mt_memalign(size_t align, size_t size);
void *mt_valloc(size_t size);
void *mt_pvalloc(size_t size);
size_t mt_malloc_usable_size(void *ptr);

/* Address of the next allocation number (for the state descriptor). */
const mt_atomic(uint64_t) *mt_seq_counter(void);

#endif
