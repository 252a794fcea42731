/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Loaded where dl_a.c's library was, after that one was unloaded. */
#include <stdlib.h>

void *b_alloc(size_t n)
{
    return malloc(n); /* SITE:b_alloc */
}
