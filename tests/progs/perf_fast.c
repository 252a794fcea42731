/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* perf_fast: sample mode's fast paths counted (tests/e2e/perf_fast.sh).
 *
 *   perf_fast MODE N
 *
 * Does N steps on one thread, each on a ring of 64 blocks: a free of the
 * slot's block and a malloc of 16 to 528 bytes into it (MODE pair), the
 * same inside a tag scope entered and left around the malloc (MODE tags:
 * churn's CHURN_TAGS=1 step, bench/churn.c), or a scope entered and left
 * with no allocation (MODE scope). One scope name only, so that the push
 * cache's slot is the same in every run whatever the addresses (two names
 * may share a slot in one run and not in the next). The steps are the
 * same in every run: callgrind's count of a run with N steps less one
 * with fewer is the steps' own cost, to the instruction. */
#include "memtrace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    const char *mode = argv[1];
    long n = atol(argv[2]);
    int alloc = strcmp(mode, "scope") != 0, tags = strcmp(mode, "pair") != 0;
    static char *ring[64];
    unsigned long sum = 0;
    for (long i = 0; i < n; i++) {
        long k = i & 63;
        if (alloc) {
            free(ring[k]);
            ring[k] = NULL;
        }
        if (tags)
            memtrace_tag_push("d1");
        if (alloc)
            ring[k] = malloc(16 + (size_t)(i * 37 % 513));
        if (tags)
            memtrace_tag_pop();
        if (ring[k]) {
            ring[k][0] = (char)i;
            sum += (unsigned char)ring[k][0];
        }
    }
    for (int k = 0; k < 64; k++)
        free(ring[k]);
    printf("%lu\n", sum);
    return 0;
}
