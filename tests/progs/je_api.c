/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* jemalloc's extended API under memtrace (tests/e2e/allocators.sh), linked
 * with -ljemalloc. A block freed with sdallocx whose address mallocx hands
 * out again must be described as the new block; xallocx resizes in place;
 * rallocx moves like realloc. Prints the sizes the checks expect. */
#include <jemalloc/jemalloc.h>
#include <stdio.h>
#include <stdlib.h>

void *g_p, *g_q, *g_x, *g_r, *g_d;

__attribute__((noinline)) void checkpoint(void)
{
    __asm__ volatile("" ::: "memory");
}

int main(void)
{
    g_p = mallocx(96, 0); /* SITE:p */
    sdallocx(g_p, 96, 0); /* SITE:sdallocx */
    g_q = mallocx(96, 0); /* SITE:q */
    printf("je_api: same address %s\n", g_p == g_q ? "yes" : "no");
    g_x = mallocx(100, MALLOCX_ZERO); /* SITE:x */
    size_t got = xallocx(g_x, 100, 60, 0); /* SITE:xallocx */
    printf("je_api: xallocx size %zu\n", got < 160 ? got : 160);
    g_r = mallocx(64, MALLOCX_LG_ALIGN(6));
    g_r = rallocx(g_r, 40000, 0); /* SITE:rallocx */
    g_d = mallocx(50, 0); /* SITE:d */
    dallocx(g_d, 0);
    printf("je_api: sallocx %s, nallocx %zu\n", sallocx(g_q, 0) >= 96 ? "ok" : "SHORT",
           nallocx(96, 0));
    checkpoint();
    sdallocx(g_q, 96, 0);
    dallocx(g_x, 0);
    dallocx(g_r, 0);
    puts("je_api: done");
    return 0;
}
