/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Built without debug information, as a non-PIE executable and a PIE one,
 * each also stripped of its symbol table (tests/e2e/run.sh and
 * profiler.sh): the frames of make_block and main then show module+offset,
 * which must be the address `addr2line -e` takes for that file. */
#include <stdlib.h>

void *volatile g_block;

__attribute__((noinline)) void checkpoint(void)
{
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void make_block(void)
{
    g_block = malloc(100);
}

int main(void)
{
    make_block();
    checkpoint();
    return 0;
}
