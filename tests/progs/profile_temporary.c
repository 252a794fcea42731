/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Temporary allocations as heaptrack counts them (tests/e2e/profiler_ranks.sh
 * compares with heaptrack_print): a free is temporary when it is the next
 * allocation or free after its block's allocation. Each site is a noinline
 * function whose allocating line is marked "SITE:<name>":
 *   simple:  100 malloc/free pairs: 100 temporary;
 *   between: 100 blocks each freed after an older block was freed: 0;
 *   grow:    100 blocks grown by 4 reallocs each, then freed: each realloc
 *            frees the latest allocation, so 500 temporary of 500;
 *   twice:   100 pairs of blocks (two stacks: two calling lines), freed
 *            oldest first: 0. */
#include <stdlib.h>

void *volatile g_sink;

__attribute__((noinline)) static void *alloc_simple(void)
{
    return malloc(10); /* SITE:simple */
}

__attribute__((noinline)) static void *alloc_older(void)
{
    return malloc(50); /* SITE:older */
}

__attribute__((noinline)) static void *alloc_between(void)
{
    return malloc(20); /* SITE:between */
}

__attribute__((noinline)) static void *alloc_grow(void *p, size_t n)
{
    return realloc(p, n); /* SITE:grow */
}

__attribute__((noinline)) static void *alloc_twice(void)
{
    return malloc(40); /* SITE:twice */
}

int main(void)
{
    for (int i = 0; i < 100; i++) {
        void *p = alloc_simple();
        g_sink = p;
        free(p);
    }
    for (int i = 0; i < 100; i++) {
        void *old = alloc_older();
        void *p = alloc_between();
        g_sink = p;
        free(old);
        free(p);
    }
    for (int i = 0; i < 100; i++) {
        void *p = NULL;
        for (size_t k = 1; k <= 5; k++)
            p = alloc_grow(p, 100 * k);
        free(p);
    }
    for (int i = 0; i < 100; i++) {
        void *x = alloc_twice();
        void *y = alloc_twice();
        free(x);
        free(y);
    }
    return 0;
}
