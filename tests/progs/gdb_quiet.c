/* A single-threaded program for the gdb helper's tests that change the
 * process from gdb (inferior calls, a damaged memtrace_state) or need a
 * freed history with almost nothing in it (tests/e2e/gdb_helper.sh): no
 * other thread runs while it is stopped in checkpoint(), so every count the
 * tests read there is exact. Blocks are made at lines marked "SITE:<name>". */
#include <stdio.h>
#include <stdlib.h>

void *g_block, *g_freed;

__attribute__((noinline)) void checkpoint(void)
{
    __asm__ volatile("" ::: "memory");
}

int main(void)
{
    g_block = malloc(64); /* SITE:gq_block */
    g_freed = malloc(32); /* SITE:gq_freed_alloc */
    free(g_freed); /* SITE:gq_freed_free */

    checkpoint();

    free(g_block);
    printf("gdb_quiet: done\n");
    return 0;
}
