/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* MEMTRACE_SYMBOLIZE=later (tests/e2e/perf_later.sh): blocks kept to the
 * exit from known sites, one through a function inlined into its caller
 * (always, at any -O), one through a function that is not, and one lost
 * block for the leak check. Built -O0 by make, and by the script with
 * clang and with gcc -O2 (a tail call then too). */
#include <stdlib.h>
#include <string.h>

static void *kept[4];

static inline __attribute__((always_inline)) void *inlined(size_t n)
{
    return malloc(n); /* SITE:inlined */
}

__attribute__((noinline)) void *not_inlined(size_t n)
{
    void *p = calloc(1, n); /* SITE:not_inlined */
    memset(p, 1, n);
    return p;
}

__attribute__((noinline)) void *tail(size_t n)
{
    return malloc(n); /* SITE:tail */
}

__attribute__((noinline)) void build(void)
{
    kept[0] = inlined(1000);    /* SITE:build_inlined */
    kept[1] = not_inlined(300); /* SITE:build_not_inlined */
    kept[2] = tail(5000);       /* SITE:build_tail */
}

/* Written through a volatile pointer: the compiler keeps the block. */
static void *volatile sink;

__attribute__((noinline)) void lose(void)
{
    sink = malloc(77); /* SITE:lost */
    sink = NULL;
}

int main(void)
{
    build();
    lose();
    return kept[0] == NULL;
}
