/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Tail calls between functions the program defines, built -O2 with gcc
 * and with clang by tests/e2e/tail_calls.sh: step1 jumps to step2, step2
 * to fill, which calls malloc and uses the block (no tail call there). The
 * frames of step1 and step2 are off the stack; gcc's call sites give the
 * address after each jump (DW_AT_call_return_pc), clang's the jump's own
 * (DW_AT_call_pc). With an argument the block is left live at exit. */
#include <stdlib.h>
#include <string.h>

#ifdef __clang__
#define WRAPPER __attribute__((noinline))
#else
#define WRAPPER __attribute__((noinline, noclone))
#endif

void *g_step;
void checkpoint(void);
void *fill(size_t n);
void *step2(size_t n);
void *step1(size_t n);

WRAPPER void checkpoint(void)
{
    __asm__ volatile("" ::: "memory");
}

WRAPPER void *fill(size_t n)
{
    char *p = malloc(n); /* SITE:fill */
    if (p)
        memset(p, 2, n);
    return p;
}

WRAPPER void *step2(size_t n)
{
    return fill(n + 1); /* SITE:step2 */
}

WRAPPER void *step1(size_t n)
{
    return step2(n + 2); /* SITE:step1 */
}

int main(int argc, char **argv)
{
    (void)argv;
    g_step = step1(4900); /* SITE:call_step1 */
    checkpoint();
    if (argc < 2)
        free(g_step);
    return 0;
}
