/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Damaged blocks for `memtrace check` in gdb (tests/e2e/heap_check.sh),
 * one case per run, named by argv[1]:
 *   live   a 40-byte block overflowed by 4 bytes (into its redzone) and a
 *          64-byte block written 1 byte at offset 8 after its free (in
 *          the quarantine), then checkpoint(), where gdb stops (and
 *          writes a core with gcore);
 *   guard  a 100-byte block on a guard page (MEMTRACE_GUARD_SAMPLE=1)
 *          written 1 byte past its end, then checkpoint();
 *   glibc  a 2000-byte block overflowed far enough to overwrite the size
 *          word of the chunk after it (the next block's, glibc's header),
 *          then freed: glibc aborts with "free(): invalid next size
 *          (normal)" and a core is dumped (MEMTRACE_QUARANTINE=0: the free
 *          reaches glibc at once). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void checkpoint(void);
__attribute__((noinline)) void checkpoint(void)
{
    __asm__ volatile("" ::: "memory");
}

static char *volatile keep[4];

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "";
    if (strcmp(c, "live") == 0) {
        char *p = malloc(40); /* SITE:live_block */
        memset(p, 'a', 40);
        memset(p + 40, 'A', 4); /* SITE:overflow4 */
        char *q = malloc(64); /* SITE:freed_block */
        free(q); /* SITE:freed_free */
        q[8] = 'W'; /* SITE:write_after_free */
        keep[0] = p;
        checkpoint();
        return 0;
    }
    if (strcmp(c, "guard") == 0) {
        /* Under MEMTRACE_GUARD_SAMPLE=1: a write 1 byte past the end that
         * lands in the rest of the block's page, not on its guard page. */
        char *p = malloc(100); /* SITE:guard_block */
        p[100] = 'G';
        keep[2] = p;
        checkpoint();
        return 0;
    }
    if (strcmp(c, "glibc") == 0) {
        char *p = malloc(2000); /* SITE:overflowed */
        char *q = malloc(2000); /* SITE:next_block */
        keep[1] = q;
        memset(p, 'A', 2000 + 64); /* SITE:overflow_far */
        free(p); /* SITE:free_overflowed */
        puts("heap_core: glibc did not abort");
        return 0;
    }
    fprintf(stderr, "usage: heap_core live|glibc\n");
    return 2;
}
