/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Known temporary allocations, by heaptrack's rule (src/store/temporary.h):
 *   1000 x malloc, free                         1000 (each freed next)
 *    500 x a = malloc(32), b = malloc(32) at one site, free(a), free(b)
 *                                                500 (a: its kind, the
 *                                                     site's 32 bytes, is
 *                                                     the latest; b: a free
 *                                                     came between)
 *    300 x calloc(1, 48) kept, then all freed    1 (the first free is of
 *                                                     the latest kind)
 *    200 x realloc(NULL, 24) then realloc to 64, kept; then freed
 *                                                201 (each 24-byte block
 *                                                     freed by its realloc,
 *                                                     and the first 64-byte
 *                                                     one: its kind is the
 *                                                     latest)
 * In all 1702 of 2700 allocations. */
#include <stdlib.h>

static void *pair_site(void) { return malloc(32); }

int main(void)
{
    static void *kept[300];
    for (int i = 0; i < 1000; i++)
        free(malloc(16 + i % 7));
    for (int i = 0; i < 500; i++) {
        void *ab[2];
        for (int k = 0; k < 2; k++) /* one call: one stack for both */
            ab[k] = pair_site();
        free(ab[0]);
        free(ab[1]);
    }
    for (int i = 0; i < 300; i++)
        kept[i] = calloc(1, 48);
    for (int i = 0; i < 300; i++)
        free(kept[i]);
    for (int i = 0; i < 200; i++)
        kept[i] = realloc(realloc(NULL, 24), 64);
    for (int i = 0; i < 200; i++)
        free(kept[i]);
    return 0;
}
