/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `memtrace check` on a live guard-page block written before its start
 * (tests/e2e/errs_guard_check.sh): a 100-byte block placed against the
 * next guard page (right-aligned: an underflow faults on no page) gets
 * argv[1] bytes written before it, then the program stops, the block
 * still live, for gdb to check it, live or on the core; with "exit" after
 * it, the program exits instead, for memtrace's check at exit. */
#include <string.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1;
    /* Guard-page blocks alternate, left- and right-aligned: ask again
     * for one that does not start its page. */
    char *p = malloc(100); /* SITE:block */
    for (int tries = 0; tries < 3 && ((uintptr_t)p & 4095) == 0; tries++)
        p = malloc(100); /* SITE:block_again */
    for (long i = 1; i <= n; i++)
        p[-i] = 'y'; /* SITE:underflow */
    printf("block %p\n", (void *)p);
    fflush(stdout);
    if (argc > 2 && !strcmp(argv[2], "exit"))
        return 0;
    abort();
}
