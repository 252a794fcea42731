/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Known allocations for the sampling suite (tests/e2e/sample.sh).
 *
 *   sample_prog sites N    site "kept": 100*N blocks of 64 bytes, still live
 *                          at exit; site "freed": 10*N blocks of 4000 bytes,
 *                          each freed at once
 *   sample_prog trace      one 16-byte block, "@@ p ADDR", print_trace on it
 *   sample_prog families   every C allocator's function, resized across
 *                          sizes (sampled and unsampled blocks meet in
 *                          realloc): contents kept, malloc_usable_size is
 *                          the size asked; exit status 1 on a mismatch
 *   sample_prog drain      4000 blocks of 1000 bytes made, then freed:
 *                          "@@ live FULL EMPTY", the exact live total as
 *                          memtrace_state's word shows it (what the threads
 *                          flushed) after each phase; -1 without memtrace
 * Frames name the "SITE:" markers' lines. */
#include "../../src/runtime/descriptor.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void print_trace(const void *p) __attribute__((weak));

static int bad;

static void expect_size(const char *what, void *p, size_t size)
{
    if (!p || malloc_usable_size(p) != size) {
        fprintf(stderr, "sample_prog: %s: %p has %zu usable bytes, not %zu\n", what, p,
                p ? malloc_usable_size(p) : 0, size);
        bad = 1;
    }
}

static __attribute__((noinline)) void *kept(void)
{
    return malloc(64); /* SITE:kept */
}

static __attribute__((noinline)) void *freed(void)
{
    return malloc(4000); /* SITE:freed */
}

static void sites(long n)
{
    for (long i = 0; i < 100 * n; i++) {
        char *p = kept();
        p[0] = 1; /* the blocks stay live; the pointers are not kept */
    }
    for (long i = 0; i < 10 * n; i++)
        free(freed());
}

/* A chain of resizes from 1 to 20000 bytes and back, the contents checked
 * at each step. */
static void resizes(void)
{
    size_t size = 1;
    unsigned char *p = malloc(size);
    p[0] = 0;
    for (int step = 0; step < 400; step++) {
        size_t next = step < 200 ? size + 97 + (size_t)step * 3 : size / 2 + 1;
        unsigned char *q = realloc(p, next);
        if (!q) {
            bad = 1;
            return;
        }
        for (size_t i = 0; i < (size < next ? size : next); i++)
            if (q[i] != (unsigned char)i) {
                fprintf(stderr, "sample_prog: realloc lost byte %zu\n", i);
                bad = 1;
                break;
            }
        for (size_t i = 0; i < next; i++)
            q[i] = (unsigned char)i;
        expect_size("realloc", q, next);
        p = q;
        size = next;
    }
    p = realloc(p, 0); /* glibc frees it, answers NULL */
    free(p);
}

static void families(void)
{
    for (size_t size = 1; size < 70000; size = size * 3 + 1) {
        void *a = malloc(size), *c = calloc(size, 1), *m = memalign(64, size);
        void *al = aligned_alloc(256, size), *pm = NULL;
        if (posix_memalign(&pm, 32, size))
            bad = 1;
        expect_size("malloc", a, size);
        expect_size("calloc", c, size);
        expect_size("memalign", m, size);
        expect_size("aligned_alloc", al, size);
        expect_size("posix_memalign", pm, size);
        for (size_t i = 0; i < size; i++)
            if (((unsigned char *)c)[i]) {
                fprintf(stderr, "sample_prog: calloc's byte %zu is not 0\n", i);
                bad = 1;
                break;
            }
        if (((uintptr_t)m & 63) || ((uintptr_t)al & 255) || ((uintptr_t)pm & 31))
            bad = 1;
        memset(a, 1, size);
        free(a);
        free(c);
        free(m);
        free(al);
        free(pm);
    }
    /* Above glibc's mmap threshold (128 KiB until a mmapped chunk is
     * freed) and below the live bytes' flush (256 KiB): a chunk with two
     * header words, made by sample mode's fast path when unsampled. */
    void *big = malloc(200000);
    expect_size("malloc", big, 200000);
    memset(big, 1, 200000);
    free(big);
    resizes();
}

/* The shared live total, as a reader outside the threads sees it (no
 * flush of the caller's count, unlike memtrace's own answers). */
static long long live_flushed(void)
{
    const struct memtrace_state *s = dlsym(RTLD_DEFAULT, "memtrace_state");
    if (!s || memcmp(s->magic, MT_STATE_MAGIC, 8) != 0 ||
        s->size < offsetof(struct memtrace_state, live_exact) + 8 || !s->live_exact)
        return -1;
    return (long long)__atomic_load_n((const int64_t *)(uintptr_t)s->live_exact, __ATOMIC_RELAXED);
}

static void drain(void)
{
    static void *block[4000];
    for (int i = 0; i < 4000; i++)
        block[i] = malloc(1000);
    long long full = live_flushed();
    for (int i = 0; i < 4000; i++)
        free(block[i]);
    printf("@@ live %lld %lld\n", full, live_flushed());
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "sites") == 0) {
        sites(atol(argv[2]));
    } else if (argc > 1 && strcmp(argv[1], "trace") == 0) {
        char *p = malloc(16); /* SITE:traced */
        printf("@@ p %p\n", (void *)p);
        fflush(stdout);
        if (print_trace)
            print_trace(p);
        free(p);
    } else if (argc > 1 && strcmp(argv[1], "families") == 0) {
        families();
    } else if (argc > 1 && strcmp(argv[1], "drain") == 0) {
        drain();
    } else {
        fputs("usage: sample_prog sites N | trace | families | drain\n", stderr);
        return 2;
    }
    return bad;
}
