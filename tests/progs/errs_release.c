/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A write past the end of a freed block, beyond its redzone, into the
 * next chunk's size word (tests/e2e/errs_release.sh): only that word
 * shows it, and only when the block leaves the quarantine. The next chunk
 * is a block that stays live to the end, so that nothing else frees or
 * resizes over the damage.
 *
 *   errs_release CASE       (small: 100 bytes; large: 2000; none: no write)
 *
 * The offsets are those of the next chunk's size word under memtrace's
 * default 16-byte redzone: glibc gives 100 + 16 bytes a 128-byte chunk
 * (the word at 120 from the block), 2000 + 16 a 2032-byte one (2024). */
#pragma GCC diagnostic ignored "-Wuse-after-free"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Out of the compiler's sight: a plain store at the marked line. */
__attribute__((noinline)) static char *opaque(char *p)
{
    __asm__ volatile("" : "+r"(p));
    return p;
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "none";
    size_t size = strcmp(c, "large") ? 100 : 2000;
    size_t at = strcmp(c, "large") ? 120 : 2024;
    char *p = opaque(malloc(size)); /* SITE:alloc */
    char *keep = malloc(size);      /* the next chunk, live to the end */
    free(p);                        /* SITE:free */
    if (strcmp(c, "none"))
        p[at] = 'x';                /* SITE:write */
    /* More frees than a ring has slots: P leaves the quarantine. */
    for (int i = 0; i < 4000; i++)
        free(opaque(malloc(200)));  /* SITE:release */
    printf("done %d\n", keep[0] == 0x7f);
    return 0;
}
