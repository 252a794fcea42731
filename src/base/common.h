/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Definitions every memtrace file shares: visibility, branch hints and the
 * thread-local model. Internal symbols use the mt_ prefix and stay hidden
 * (the build passes -fvisibility=hidden); MT_EXPORT marks the few that escape. */
#ifndef MT_COMMON_H
#define MT_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define MT_EXPORT __attribute__((visibility("default")))
/* On the declaration of a variable defined in another file of the library:
 * -fvisibility=hidden covers definitions only, and without this the hot
 * path would reach the variable through the GOT. */
#define MT_HIDDEN __attribute__((visibility("hidden")))
#define MT_LIKELY(x) __builtin_expect(!!(x), 1)
#define MT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MT_COLD __attribute__((cold, noinline))
#define MT_NOINLINE __attribute__((noinline))
/* The default (global-dynamic) model may call malloc from __tls_get_addr on a
 * thread's first access, which would recurse into the tracer. */
#define MT_TLS __thread __attribute__((tls_model("initial-exec")))

#define MT_CACHELINE 64

/* Frames kept in one stack at most (MEMTRACE_DEPTH's maximum). */
#define MT_MAX_DEPTH 256

/* How far ADDR lies outside the block of SIZE bytes at START: the bytes
 * from the block's end to ADDR (0: ADDR is one past the end) or from ADDR
 * to its start; UINT64_MAX when the block holds ADDR (START <= ADDR <
 * START + SIZE, or ADDR == START for an empty block). The one rule for
 * "near a block", shared by the freed history's scan and the formatter. */
static inline uint64_t mt_block_gap(uintptr_t addr, uintptr_t start, uint64_t size)
{
    if (addr < start)
        return start - addr;
    if (addr - start < size || addr == start)
        return UINT64_MAX;
    return addr - start - size;
}

/* MT_ASSERT(X): in debug builds (make DEBUG=1, and the unit tests) an
 * invariant a comment states, checked where it must hold; a failure writes
 * one "memtrace: assertion failed" line and aborts. Compiled out otherwise:
 * X must have no side effect. */
#ifdef MT_DEBUG
void mt_assert_fail(const char *expr, const char *file, int line) __attribute__((noreturn));
#define MT_ASSERT(x) (MT_LIKELY(x) ? (void)0 : mt_assert_fail(#x, __FILE__, __LINE__))
#else
#define MT_ASSERT(x) ((void)0)
#endif

#endif
