/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* perf_rss N SIZE: allocates N blocks of SIZE bytes and keeps them, then
 * prints what they cost, for tests/e2e/perf_rss.sh:
 *   heap B        bytes of glibc chunks in use added (mallinfo2's uordblks),
 *                 over N: the chunk glibc gives a block, redzone included;
 *   table B.B     memtrace's metadata added (memtrace_get_stats), over N:
 *                 the live table's bytes a live block (0.0 without memtrace);
 *   live N        memtrace's live count added.
 * Frees them all and exits 0. */
#define _GNU_SOURCE
#include "memtrace.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

/* perf_rss big: a block of 9 MiB (a side record: too large for a slot)
 * kept, then one of 100 bytes; print_trace of each, the live count added
 * ("live N"), both freed, the count after ("after N"). */
static int big(void)
{
    struct memtrace_stats s0, s1, s2;
    printf("big\n"); /* stdout's buffer, allocated before the counts */
    fflush(stdout);
    memtrace_get_stats(&s0);
    char *b = malloc((size_t)9 << 20); /* SITE:rss_big */
    char *small = malloc(100);
    memtrace_print_trace(b);
    memtrace_print_trace(small);
    memtrace_get_stats(&s1);
    printf("live %lu\n", s1.live_blocks - s0.live_blocks);
    fflush(stdout);
    free(b);
    free(small);
    memtrace_get_stats(&s2);
    printf("after %lu\n", s2.live_blocks - s0.live_blocks);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2)
        return big();
    if (argc != 3)
        return 2;
    long n = atol(argv[1]);
    size_t size = (size_t)atol(argv[2]);
    void **kept = malloc((size_t)n * sizeof *kept);
    if (!kept || n <= 0)
        return 2;
    struct memtrace_stats s0, s1;
    memtrace_get_stats(&s0);
    struct mallinfo2 m0 = mallinfo2();
    for (long i = 0; i < n; i++)
        kept[i] = malloc(size); /* SITE:rss_block */
    struct mallinfo2 m1 = mallinfo2();
    memtrace_get_stats(&s1);
    size_t heap = m1.uordblks - m0.uordblks;
    printf("heap %zu%s\n", heap / (size_t)n, heap % (size_t)n ? " (not a whole number)" : "");
    printf("table %.1f\n", (double)(s1.metadata_bytes - s0.metadata_bytes) / (double)n);
    printf("live %lu\n", s1.live_blocks - s0.live_blocks);
    for (long i = 0; i < n; i++)
        free(kept[i]);
    free(kept);
    return 0;
}
