/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What a sampled run's own memory grows by, for tests/e2e/perf_footprint.sh
 * (run with MEMTRACE_SAMPLE=1: every block of these sizes is sampled).
 *
 * "table_growth N": memtrace's metadata bytes (memtrace_get_stats) grown
 * by a thread on an arena of its own recording BLOCKS blocks of 64 bytes
 * from one call site, after one block from that site made the site's
 * stack and the thread known. The thread's arena is a region of its own,
 * whose 16 shards of the live table (live_table.h) the blocks spread
 * over; the growth is the first mappings of the shards not in use yet.
 * With an argument N (1 to BLOCKS), N blocks, and nothing else is done
 * (tests/e2e/perf_foot_pages.sh: what the first tables cost).
 *
 * "held N": what glibc counts in use (mallinfo2's uordblks) after the
 * main thread allocated and freed HELD blocks of 4000 bytes, less what it
 * counted before: the bytes of freed sampled blocks the quarantine still
 * holds.
 *
 * "vma SIZE_KB nh|-": each mapping of the process at the end, and whether
 * it is kept off transparent huge pages (VmFlags nh in smaps). */
#include "memtrace.h"

#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCKS 400
#define HELD 256

static void *blocks[BLOCKS];
static int nblocks = BLOCKS;
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
    for (int i = 0; i < nblocks; i++)
        blocks[i] = one_block();
    growth = metadata() - before;
    for (int i = 0; i < nblocks; i++)
        free(blocks[i]);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        nblocks = atoi(argv[1]);
        if (nblocks < 1 || nblocks > BLOCKS)
            return 2;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, thread, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 2;
    printf("table_growth %lu\n", growth);
    if (argc > 1)
        return 0;

    static void *held[HELD];
    size_t before = mallinfo2().uordblks;
    for (int i = 0; i < HELD; i++)
        held[i] = malloc(4000);
    for (int i = 0; i < HELD; i++)
        free(held[i]);
    printf("held %ld\n", (long)(mallinfo2().uordblks - before));

    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return 3;
    char line[512];
    unsigned long lo, hi, kb = 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) /* no field's name is hex then '-' */
            kb = (hi - lo) / 1024;
        else if (strncmp(line, "VmFlags:", 8) == 0)
            printf("vma %lu %s\n", kb, strstr(line, " nh") ? "nh" : "-");
    }
    fclose(f);
    return 0;
}
