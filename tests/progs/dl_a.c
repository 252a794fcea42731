/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Built without debug information (symbols only): the symbolizer looks for
 * a separate debug file, and builds the module's sorted symbol table. */
#include <stdlib.h>

void *a_alloc(size_t n)
{
    return malloc(n); /* SITE:a_alloc */
}
