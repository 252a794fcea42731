/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Built with -O2: an allocation inside an always-inline function, which
 * leaves no frame of its own; the trace must still name both the inlined
 * function's line and the call site in its caller. */
#include <stdlib.h>
#include <string.h>

void *g_inline;
void checkpoint(void);
void *build_buffer(size_t n);

__attribute__((noinline)) void checkpoint(void)
{
    __asm__ volatile("" ::: "memory");
}

static inline __attribute__((always_inline)) void *zeroed_buffer(size_t n)
{
    void *p = malloc(n); /* SITE:inline */
    if (p)
        memset(p, 0, n);
    return p;
}

__attribute__((noinline)) void *build_buffer(size_t n)
{
    void *p = zeroed_buffer(n); /* SITE:inline_caller */
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

int main(void)
{
    g_inline = build_buffer(4000);
    checkpoint();
    free(g_inline);
    return 0;
}
