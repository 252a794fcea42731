/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A single-threaded program for the gdb helper's tests that change the
 * process from gdb (inferior calls, a damaged memtrace_state) or need a
 * freed history with almost nothing in it (tests/e2e/gdb_helper.sh): no
 * other thread runs while it is stopped in checkpoint(), so every count the
 * tests read there is exact. Blocks are made at lines marked "SITE:<name>". */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *g_block, *g_freed, *g_reused;

/* malloc and free 40 bytes DEPTH calls deep: "reuse" mode does it 1,000
 * times at one address (glibc hands the same chunk back), so that 1,000
 * freed records with 20-frame stacks cover it. */
__attribute__((noinline)) static void *churn_at(unsigned depth)
{
    void *p;
    if (depth) {
        p = churn_at(depth - 1);
    } else {
        p = malloc(40); /* SITE:gq_reuse */
        free(p);
    }
    __asm__ volatile("" ::: "memory"); /* not a tail call */
    return p;
}

__attribute__((noinline)) void checkpoint(void)
{
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    /* "oddname": the thread's name holds a newline and "@@", which the gdb
     * helper's reader of memtrace-symbolize's answers must not take for
     * the end of an answer. */
    if (argc > 1 && strcmp(argv[1], "oddname") == 0)
        pthread_setname_np(pthread_self(), "q\n@@\n@@ error");
    if (argc > 1 && strcmp(argv[1], "reuse") == 0)
        for (int i = 0; i < 1000; i++)
            g_reused = churn_at(16);
    g_block = malloc(64); /* SITE:gq_block */
    g_freed = malloc(32); /* SITE:gq_freed_alloc */
    free(g_freed); /* SITE:gq_freed_free */

    checkpoint();

    free(g_block);
    printf("gdb_quiet: done\n");
    return 0;
}
