/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* symsites: the symbolizer's cost for one source built by gcc and by clang
 * (bench/clang.sh). 40 functions of 50 allocation calls each, every call
 * through two always-inline helpers: 2,000 distinct stacks, each frame 0
 * an inline chain of three rows.
 *
 *   symsites report     one block at each site, kept; exit (the profiler's
 *                       exit report lists and symbolizes the sites)
 *   symsites core N     N blocks over the sites, kept, then a stop in
 *                       checkpoint(), where clang.sh writes a core file; the
 *                       last block's address is in g_last */
#include <stdlib.h>
#include <string.h>

void *volatile g_last;
static void **keep;
static size_t nkeep, capkeep;

__attribute__((noinline)) void checkpoint(void)
{
    __asm__ volatile("" ::: "memory");
}

static void put(void *p)
{
    if (nkeep == capkeep) {
        capkeep = capkeep ? 2 * capkeep : 4096;
        keep = realloc(keep, capkeep * sizeof *keep);
        if (!keep)
            exit(2);
    }
    keep[nkeep++] = g_last = p;
}

static inline __attribute__((always_inline)) void *inner(size_t n)
{
    char *p = malloc(n);
    if (p)
        p[0] = 1;
    return p;
}

static inline __attribute__((always_inline)) void *outer(size_t n)
{
    return inner(n + 8);
}

#define SITE(k) put(outer(base + k));
#define R10(M, b) M(b##0) M(b##1) M(b##2) M(b##3) M(b##4) M(b##5) M(b##6) M(b##7) M(b##8) M(b##9)
/* the same for the sites inside FN's expansion (a macro does not expand in itself) */
#define S10(b) SITE(b##0) SITE(b##1) SITE(b##2) SITE(b##3) SITE(b##4) SITE(b##5) SITE(b##6) \
    SITE(b##7) SITE(b##8) SITE(b##9)
#define FN(j)                                                                                    \
    __attribute__((noinline)) void fn##j(size_t base);                                          \
    __attribute__((noinline)) void fn##j(size_t base)                                           \
    {                                                                                            \
        S10(1) S10(2) S10(3) S10(4) S10(5)                                                       \
    }
R10(FN, 1) R10(FN, 2) R10(FN, 3) R10(FN, 4)

#define CALL(j) fn##j(j);
static void all_sites(void)
{
    R10(CALL, 1) R10(CALL, 2) R10(CALL, 3) R10(CALL, 4)
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "core") == 0) {
        long n = atol(argv[2]);
        for (long done = 0; done < n; done += 2000)
            all_sites();
        checkpoint();
        return 0;
    }
    all_sites();
    return 0;
}
