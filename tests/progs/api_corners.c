/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The API's corners. Prints what glibc does in each case; the test runs it
 * natively and under memtrace and requires the same output. Under memtrace
 * it also checks what was recorded (nothing for a failed allocation, no
 * record left by realloc(p, 0)) and exits 3 if that is wrong. */
#define _GNU_SOURCE
#include "../../include/memtrace.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void (*stats)(struct memtrace_stats *);
/* Opaque to the compiler, so the calls below reach the allocator. */
static volatile size_t huge = SIZE_MAX;
static int wrong;

static long live(void)
{
    struct memtrace_stats s = { 0 };
    if (stats)
        stats(&s);
    return (long)s.live_blocks;
}

/* Under memtrace: the live count must have moved by DELTA since BEFORE. */
static void expect_delta(const char *what, long before, long delta)
{
    if (stats && live() - before != delta) {
        fprintf(stderr, "api_corners: %s: memtrace counted %ld blocks more, expected %ld\n",
                what, live() - before, delta);
        wrong = 1;
    }
}

static void show(const char *what, const void *p, int err)
{
    printf("%-40s %s errno=%s\n", what, p ? "non-NULL" : "NULL",
           err == 0 ? "0" : err == ENOMEM ? "ENOMEM" : err == EINVAL ? "EINVAL" : "other");
}

int main(void)
{
    stats = (void (*)(struct memtrace_stats *))dlsym(RTLD_DEFAULT, "memtrace_get_stats");
    printf("api_corners: glibc's behaviour at the edges of the API\n"); /* stdout's buffer */
    long n0 = live();
    void *p;

    errno = 0;
    p = calloc(huge / 2, 4);
    show("calloc(SIZE_MAX/2, 4)", p, errno);
    expect_delta("failed calloc", n0, 0);

    errno = 0;
    p = malloc(huge);
    show("malloc(SIZE_MAX)", p, errno);
    expect_delta("failed malloc", n0, 0);

    errno = 0;
    p = reallocarray(NULL, huge, 2);
    show("reallocarray(NULL, huge, 2)", p, errno);
    expect_delta("failed reallocarray", n0, 0);

    errno = 0;
    p = realloc(NULL, 10);
    show("realloc(NULL, 10)", p, errno);
    expect_delta("realloc(NULL, 10)", n0, 1);
    errno = 0;
    void *q = realloc(p, 0);
    show("realloc(p, 0)", q, errno);
    expect_delta("realloc(p, 0)", n0, q ? 1 : 0);
    free(q);

    free(NULL);
    printf("%-40s ok\n", "free(NULL)");

    errno = 0;
    p = malloc(0);
    show("malloc(0)", p, errno);
    expect_delta("malloc(0)", n0, 1);
    free(p);

    errno = 0;
    p = aligned_alloc(3, 10);
    show("aligned_alloc(3, 10)", p, errno);
    free(p);
    errno = 0;
    p = aligned_alloc(64, 100);
    show("aligned_alloc(64, 100)", p, errno);
    printf("%-40s %s\n", "  aligned to 64", ((uintptr_t)p % 64) == 0 ? "yes" : "no");
    free(p);

    p = NULL;
    printf("%-40s %s\n", "posix_memalign(3)", strerror(posix_memalign(&p, 3, 10)));
    printf("%-40s %s\n", "posix_memalign(4)", strerror(posix_memalign(&p, 4, 10)));
    printf("%-40s %s\n", "posix_memalign(64, SIZE_MAX)",
           strerror(posix_memalign(&p, 64, huge)));
    expect_delta("failed posix_memalign", n0, 0);
    printf("%-40s %s\n", "posix_memalign(64, 100)", strerror(posix_memalign(&p, 64, 100)));
    printf("%-40s %s\n", "  aligned to 64", ((uintptr_t)p % 64) == 0 ? "yes" : "no");
    free(p);

    errno = 0;
    p = memalign(48, 10); /* not a power of two: glibc rounds it up */
    show("memalign(48, 10)", p, errno);
    free(p);

    long page = sysconf(_SC_PAGESIZE);
    p = valloc(100);
    printf("%-40s %s\n", "valloc(100) page-aligned", (uintptr_t)p % (uintptr_t)page ? "no" : "yes");
    free(p);
    p = pvalloc(100);
    printf("%-40s %s, usable >= page: %s\n", "pvalloc(100) page-aligned",
           (uintptr_t)p % (uintptr_t)page ? "no" : "yes",
           malloc_usable_size(p) >= (size_t)page ? "yes" : "no");
    free(p);

    p = malloc(100);
    printf("%-40s %zu\n", "malloc_usable_size(malloc(100))", malloc_usable_size(p));
    free(p);
    printf("%-40s %zu\n", "malloc_usable_size(NULL)", malloc_usable_size(NULL));

    char *s = strdup("corner");
    printf("%-40s %s\n", "strdup", s);
    expect_delta("strdup", n0, 1);
    free(s);
    expect_delta("everything freed", n0, 0);
    return wrong ? 3 : 0;
}
