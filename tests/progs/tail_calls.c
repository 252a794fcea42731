/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Built with -O2: wrappers whose last act is the allocation end in a jump,
 * so their frames are not on the stack; memtrace rebuilds them from the
 * DWARF call sites and marks them "(tail call)". Each allocation has its
 * own size, so a test can stop gdb in malloc at one of them (bt, the
 * oracle). noinline/noclone keep every wrapper a function of its own;
 * the wrappers differ in their sizes so that identical code folding does
 * not merge them. */
#include <stdlib.h>
#include <string.h>

void *g_xmalloc, *g_pool, *g_either, *g_choose, *g_plain;
void checkpoint(void);
void *xmalloc(size_t n);
void *ymalloc(size_t n);
void *pool_get(size_t n);
void *either(int k, size_t n);
void *via_a(size_t n);
void *via_b(size_t n);
void *choose(int k, size_t n);
void *plain(size_t n);

#define WRAPPER __attribute__((noinline, noclone))

WRAPPER void checkpoint(void)
{
    __asm__ volatile("" ::: "memory");
}

/* One tail call: xmalloc jumps to malloc. */
WRAPPER void *xmalloc(size_t n)
{
    return malloc(n); /* SITE:xmalloc */
}

WRAPPER void *ymalloc(size_t n)
{
    return malloc(n + 1); /* SITE:ymalloc */
}

/* Two: pool_get jumps to xmalloc, which jumps to malloc. */
WRAPPER void *pool_get(size_t n)
{
    return xmalloc(n + 16); /* SITE:pool_get */
}

/* Ambiguous: either xmalloc or ymalloc, both tail calls to malloc; the
 * chains share no frame, so none may be shown. */
WRAPPER void *either(int k, size_t n)
{
    if (k)
        return xmalloc(n); /* SITE:either_x */
    return ymalloc(n);     /* SITE:either_y */
}

WRAPPER void *via_a(size_t n)
{
    return xmalloc(n + 2); /* SITE:via_a */
}

WRAPPER void *via_b(size_t n)
{
    return xmalloc(n + 3); /* SITE:via_b */
}

/* Ambiguous in the middle: choose → via_a or via_b → xmalloc → malloc. All
 * chains end in xmalloc's jump, so that frame is known; the others not. */
WRAPPER void *choose(int k, size_t n)
{
    if (k)
        return via_a(n); /* SITE:choose_a */
    return via_b(n);     /* SITE:choose_b */
}

/* No tail call: the wrapper uses the block after the call. */
WRAPPER void *plain(size_t n)
{
    char *p = malloc(n); /* SITE:plain */
    if (p)
        memset(p, 1, n);
    return p;
}

/* With an argument, the blocks are left live at exit (the profiler's exit
 * report and folded stacks show them). */
int main(int argc, char **argv)
{
    (void)argv;
    g_xmalloc = xmalloc(4801);          /* SITE:call_xmalloc */
    g_pool = pool_get(4802 - 16);       /* SITE:call_pool */
    g_either = either(argc, 4803);      /* SITE:call_either */
    g_choose = choose(argc, 4804 - 2);  /* SITE:call_choose */
    g_plain = plain(4805);              /* SITE:call_plain */
    checkpoint();
    if (argc > 1)
        return 0;
    free(g_xmalloc);
    free(g_pool);
    free(g_either);
    free(g_choose);
    free(g_plain);
    return 0;
}
