/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The loop: 10,000 times a malloc, its realloc and the free of
 * the result. heaptrack counts 20,000 temporary allocations: the malloc's
 * block (freed by the realloc, the next event) and the realloc's (freed
 * by the free). */
#include <stdlib.h>

int main(void)
{
    for (int i = 0; i < 10000; i++) {
        char *p = malloc(10);
        p = realloc(p, 100 + i % 1000);
        free(p);
    }
    return 0;
}
