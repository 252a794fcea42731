/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A library stripped of its symbol table (strip -s; tests/e2e/run.sh):
 * strip_alloc stays named through the dynamic symbol table, inner, a static
 * function, has no name left, so its frame prints as an address and
 * module+offset, which must name the same byte. Built -O0: no tail calls. */
#include <stdlib.h>

static __attribute__((noinline)) void *inner(size_t n)
{
    return malloc(n);
}

void *strip_alloc(size_t n)
{
    return inner(n);
}
