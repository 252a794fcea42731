/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the live table's first tables cost (tests/e2e/perf_foot_pages.sh;
 * run with MEMTRACE_SAMPLE=1: every block is sampled).
 *
 * "table_growth N": memtrace's metadata bytes (memtrace_get_stats) grown
 * by a thread on an arena of its own recording BLOCKS blocks of 64 bytes
 * from one call site, after one block from that site made the site's
 * stack and the thread known: the region's shards the blocks land in are
 * made, each with its first table (no shard can hold more than BLOCKS). */
#include "memtrace.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define BLOCKS 7

static void *blocks[BLOCKS];
static unsigned long growth;

static unsigned long metadata(void)
{
    struct memtrace_stats s;
    memtrace_get_stats(&s);
    return s.metadata_bytes;
}

__attribute__((noinline)) static void *one_block(void)
{
    return malloc(64);
}

static void *thread(void *arg)
{
    (void)arg;
    free(one_block());
    unsigned long before = metadata();
    for (int i = 0; i < BLOCKS; i++)
        blocks[i] = one_block();
    growth = metadata() - before;
    for (int i = 0; i < BLOCKS; i++)
        free(blocks[i]);
    return NULL;
}

int main(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, thread, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 2;
    printf("table_growth %lu\n", growth);
    return 0;
}
