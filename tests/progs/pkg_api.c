/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A program that calls memtrace's API, compiled and linked with
 * `pkg-config --cflags --libs memtrace` against an installed memtrace
 * (tests/e2e/package.sh): its own block's trace, and the counts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <memtrace.h>

void checkpoint(const void *p);

/* gdb stops here (tests/e2e/package.sh) with the block live. */
__attribute__((noinline)) void checkpoint(const void *p)
{
    __asm__ volatile("" : : "r"(p) : "memory");
}

int main(void)
{
    char *p = malloc(77); /* SITE:pkg_block */
    if (!p)
        return 1;
    memset(p, 'x', 77);
    print_trace(p);
    struct memtrace_stats s;
    memtrace_get_stats(&s);
    printf("recording %d, at least one live block: %s\n", s.recording,
           s.live_blocks >= 1 ? "yes" : "no");
    checkpoint(p);
    free(p);
    return 0;
}
