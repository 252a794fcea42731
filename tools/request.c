/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "request.h"

#include <stdio.h>
#include <stdlib.h>

void mt_request_malformed(const char *line)
{
    fprintf(stderr, "memtrace-symbolize: malformed request: %.200s", line);
    exit(3);
}

void *mt_request_grow(void *p, size_t n, size_t item)
{
    if (n & (n - 1))
        return p; /* room left */
    p = realloc(p, (n ? 2 * n : 1) * item);
    if (!p) {
        fprintf(stderr, "memtrace-symbolize: out of memory\n");
        exit(2);
    }
    return p;
}

bool mt_request_numbers(const char **p, uint64_t *v, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        char *end;
        v[i] = strtoull(*p, &end, 16);
        if (end == *p)
            return false;
        *p = end;
    }
    return true;
}
