/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The shared library of the symbolization differential test
 * (tests/e2e/symbolize_diff.sh): built by the script with the same
 * compiler and flags as tests/progs/symdiff_main.c. */
#include <stdlib.h>

char *symdiff_lib_alloc(size_t n)
{
    char *p = malloc(n); /* SITE:lib */
    if (p)
        p[0] = 3;
    return p;
}
