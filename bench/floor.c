/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* floor: the least an LD_PRELOAD interposer can cost, for bench/instr.sh.
 * It forwards malloc, calloc, realloc and free to the next definitions
 * and defines the tag calls (memtrace_tag_push/pop, include/memtrace.h)
 * as a thread-local depth count: what a preloaded library pays before it
 * does any work of its own (the extra call, the indirect call to the next
 * allocator, the tag calls through their weak references). Not a tracer:
 * it records nothing. calloc's calls made by dlsym before the next
 * definitions are known are served from a static buffer, never freed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

static void *(*next_malloc)(size_t);
static void (*next_free)(void *);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static _Alignas(16) char boot[4096];
static size_t boot_used;

__attribute__((constructor)) static void find_next(void)
{
    next_calloc = dlsym(RTLD_NEXT, "calloc");
    next_malloc = dlsym(RTLD_NEXT, "malloc");
    next_free = dlsym(RTLD_NEXT, "free");
    next_realloc = dlsym(RTLD_NEXT, "realloc");
}

void *malloc(size_t n)
{
    if (__builtin_expect(!next_malloc, 0))
        find_next();
    return next_malloc(n);
}

void free(void *p)
{
    if ((char *)p >= boot && (char *)p < boot + sizeof boot)
        return;
    if (__builtin_expect(!next_free, 0))
        find_next();
    next_free(p);
}

void *calloc(size_t n, size_t size)
{
    if (__builtin_expect(!next_calloc, 0)) { /* dlsym's own, during find_next */
        size_t bytes = (n * size + 15) & ~(size_t)15;
        if (n && bytes / n < size)
            return NULL;
        if (bytes > sizeof boot - boot_used)
            return NULL;
        boot_used += bytes;
        return boot + boot_used - bytes; /* static: already zero */
    }
    return next_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    if (__builtin_expect(!next_realloc, 0))
        find_next();
    return next_realloc(p, n);
}

static __thread int depth;

int memtrace_tag_push(const char *name)
{
    (void)name;
    depth++;
    return 0;
}

int memtrace_tag_pop(void)
{
    depth--;
    return 0;
}
