/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A program that probes for jemalloc's, tcmalloc's and C23's entry points
 * with weak symbols, as servers do, and uses what it finds (tests/e2e/
 * allocators.sh). Linked with none of those allocators: natively it finds
 * nothing; under memtrace it finds memtrace's definitions, which must then
 * do what the real ones promise. Every check prints a line; "alloc_probe:
 * BAD ..." is a failure. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *mallocx(size_t, int) __attribute__((weak));
void *rallocx(void *, size_t, int) __attribute__((weak));
size_t xallocx(void *, size_t, size_t, int) __attribute__((weak));
size_t sallocx(const void *, int) __attribute__((weak));
size_t nallocx(size_t, int) __attribute__((weak));
void dallocx(void *, int) __attribute__((weak));
void sdallocx(void *, size_t, int) __attribute__((weak));
void free_sized(void *, size_t) __attribute__((weak));
void free_aligned_sized(void *, size_t, size_t) __attribute__((weak));
void *tc_malloc(size_t) __attribute__((weak));
void tc_free(void *) __attribute__((weak));
void tc_free_sized(void *, size_t) __attribute__((weak));
void *tc_calloc(size_t, size_t) __attribute__((weak));
void *tc_realloc(void *, size_t) __attribute__((weak));
void *tc_memalign(size_t, size_t) __attribute__((weak));
int tc_posix_memalign(void **, size_t, size_t) __attribute__((weak));
void *tc_valloc(size_t) __attribute__((weak));
void *tc_pvalloc(size_t) __attribute__((weak));
/* operator new and delete, plain and aligned, from a C program that no C++
 * runtime is loaded into: memtrace's own, on the real malloc */
void *_Znwm(size_t) __attribute__((weak));
void _ZdlPv(void *) __attribute__((weak));
void *_ZnamSt11align_val_t(size_t, size_t) __attribute__((weak));
void _ZdaPvSt11align_val_t(void *, size_t) __attribute__((weak));

#define LG_ALIGN(la) ((int)(la))
#define ZERO 0x40

static int bad;
static void check(int ok, const char *what)
{
    if (!ok) {
        printf("alloc_probe: BAD %s\n", what);
        bad = 1;
    }
}

static int zeroed(const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i])
            return 0;
    return 1;
}

int main(void)
{
    if (mallocx && rallocx && xallocx && sallocx && nallocx && dallocx && sdallocx) {
        char *p = mallocx(1000, LG_ALIGN(12) | ZERO);
        check(p && (uintptr_t)p % 4096 == 0, "mallocx alignment");
        check(p && zeroed(p, 1000), "mallocx zero");
        memset(p, 7, 1000);
        check(sallocx(p, 0) >= 1000, "sallocx");
        check(nallocx(1000, 0) >= 1000, "nallocx");
        size_t x = xallocx(p, 1000, 0, 0);
        check(x >= 1000, "xallocx keeps at least the size");
        p = rallocx(p, 100000, ZERO | LG_ALIGN(6));
        check(p && (uintptr_t)p % 64 == 0, "rallocx alignment");
        check(p && p[999] == 7 && zeroed(p + 1000, 100000 - 1000), "rallocx keeps and zeroes");
        p = rallocx(p, 0, 0);
        check(p != NULL, "rallocx to 0 does not free");
        dallocx(p, 0);
        p = mallocx(64, 0);
        check(p != NULL, "mallocx");
        sdallocx(p, 64, 0);
        printf("alloc_probe: jemalloc API used\n");
    }
    if (free_sized && free_aligned_sized) {
        free_sized(malloc(10), 10);
        free_aligned_sized(aligned_alloc(64, 128), 64, 128);
        printf("alloc_probe: C23 sized frees used\n");
    }
    if (tc_malloc && tc_free && tc_free_sized && tc_calloc && tc_realloc && tc_memalign &&
        tc_posix_memalign && tc_valloc && tc_pvalloc) {
        char *p = tc_calloc(10, 10);
        check(p && zeroed(p, 100), "tc_calloc");
        p = tc_realloc(p, 5000);
        check(p != NULL, "tc_realloc");
        tc_free(p);
        tc_free_sized(tc_malloc(33), 33);
        void *a = tc_memalign(256, 10), *v = tc_valloc(10), *pv = tc_pvalloc(10), *pm = NULL;
        check(tc_posix_memalign(&pm, 128, 10) == 0 && (uintptr_t)pm % 128 == 0, "tc_posix_memalign");
        check(a && (uintptr_t)a % 256 == 0 && v && (uintptr_t)v % 4096 == 0 && pv, "tc aligned");
        tc_free(a);
        tc_free(v);
        tc_free(pv);
        tc_free(pm);
        printf("alloc_probe: tcmalloc API used\n");
    }
    if (_Znwm && _ZdlPv && _ZnamSt11align_val_t && _ZdaPvSt11align_val_t) {
        char *p = _Znwm(0);
        check(p != NULL, "operator new(0)");
        _ZdlPv(p);
        p = _ZnamSt11align_val_t(100, 512);
        check(p && (uintptr_t)p % 512 == 0, "operator new[](100, align_val_t(512))");
        _ZdaPvSt11align_val_t(p, 512);
        printf("alloc_probe: operator new used\n");
    }
    puts(bad ? "alloc_probe: FAILED" : "alloc_probe: ok");
    return bad;
}
