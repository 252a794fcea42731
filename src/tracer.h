/* The interposed allocation entry points (mt_malloc & co., called by the
 * preload shim) and the state they share with the slow path. */
#ifndef MT_TRACER_H
#define MT_TRACER_H

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
/* Notes the library's path and range (for later symbolization), then
 * calls the real dlclose. */
int mt_dlclose(void *handle);

/* Marks the calling thread as inside memtrace for the slow path (reports,
 * symbolization): its allocations go to the internal heap, untraced, until
 * mt_leave. Returns the previous state for mt_leave. Nests. */
int mt_enter(void);
void mt_leave(int previous);

/* True once a metadata mapping failed and recording stopped. */
int mt_recording_stopped(void);

/* memtrace's number for the calling thread (main thread = 1). */
uint32_t mt_thread_number(void);

/* Address of the next allocation number (for the state descriptor). */
const uint64_t *mt_seq_counter(void);

#endif
