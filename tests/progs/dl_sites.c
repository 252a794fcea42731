/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A library the sites program dlopens after start-up, so its module is
 * unknown to the symbolizer until an address inside it is looked up. */
#include <stdlib.h>
#include <string.h>

void *dl_make(size_t n);

void *dl_make(size_t n)
{
    void *p = malloc(n); /* SITE:dlopen */
    memset(p, 0, n);
    return p;
}
