/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The interposed allocation entry points (mt_malloc & co., called by the
 * definitions of capture/interposed.def's names): the hot path, defined by
 * API family in capture/ (record.h says which file). */
#ifndef MT_ENTRY_POINTS_H
#define MT_ENTRY_POINTS_H

#include "base/atomic.h"

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

/* The C++ operators (mt_new, mt_delete) and tcmalloc's tc_new & co. share
 * one implementation; OP says which: MT_OP(MT_X_..., MT_FORM_..., MT_KIND_...)
 * names the next definition to forward to (state.h), the arguments it
 * takes beyond the size or pointer, and the family the block belongs to. */
enum { MT_FORM_NOTHROW = 1, MT_FORM_ALIGNED = 2, MT_FORM_SIZED = 4 };
#define MT_OP(fn, form, kind) ((unsigned)(fn) | (unsigned)(form) << 8 | (unsigned)(kind) << 12)
#define MT_OP_FN(op) ((op)&0xffu)
#define MT_OP_FORM(op) (((op) >> 8) & 0xfu)
#define MT_OP_KIND(op) ((op) >> 12)

/* operator new in its form: SIZE bytes, aligned to ALIGN (aligned forms),
 * NOTHROW the program's std::nothrow (nothrow forms). The next definition
 * may throw std::bad_alloc through this function (built with -fexceptions). */
void *mt_new(size_t size, size_t align, const void *nothrow, unsigned op);
/* operator delete in its form: SIZE for the sized forms. */
void mt_delete(void *ptr, size_t size, size_t align, const void *nothrow, unsigned op);

/* jemalloc's extended API; without jemalloc below, emulated (jemalloc.c). */
void *mt_mallocx(size_t size, int flags);
void *mt_rallocx(void *ptr, size_t size, int flags);
size_t mt_xallocx(void *ptr, size_t size, size_t extra, int flags);
size_t mt_sallocx(const void *ptr, int flags);
size_t mt_nallocx(size_t size, int flags);
void mt_dallocx(void *ptr, int flags);
void mt_sdallocx(void *ptr, size_t size, int flags);

/* C23 */
void mt_free_sized(void *ptr, size_t size);
void mt_free_aligned_sized(void *ptr, size_t align, size_t size);

/* tcmalloc's C entry points; without tcmalloc below, their libc namesakes. */
void *mt_tc_malloc(size_t size);
void mt_tc_free(void *ptr);
void mt_tc_cfree(void *ptr);
void mt_tc_free_sized(void *ptr, size_t size);
void *mt_tc_calloc(size_t n, size_t size);
void *mt_tc_realloc(void *ptr, size_t size);
void *mt_tc_memalign(size_t align, size_t size);
int mt_tc_posix_memalign(void **out, size_t align, size_t size);
void *mt_tc_valloc(size_t size);
void *mt_tc_pvalloc(size_t size);

/* memtrace_malloclike (runtime/api.c): the SIZE bytes at P, memory of the
 * program's own pool, become a recorded block of family MT_KIND_POOL,
 * with the caller's stack and no redzone; nothing when recording is off
 * or P is NULL. */
void mt_pool_record(const void *p, size_t size);
/* memtrace_freelike: P's record leaves, noted freed as a free's; a P with
 * no record, or a block of another family (which stays), is a bad free
 * (mt_bad_free). Nothing while memtrace does not record frees. */
void mt_pool_release(const void *p);

/* Address of the next allocation number (for the state descriptor). */
const mt_atomic(uint64_t) * mt_seq_counter(void);

#endif
