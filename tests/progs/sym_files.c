/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The program of the debug-file suites (tests/e2e/sym_bad.sh,
 * sym_stripped.sh), built by the scripts in several ways: three
 * allocations whose stacks print_trace prints, one in a static function
 * placed right after an exported one (a stripped build without .symtab
 * must not name it after that one), one in an exported function, one in a
 * function inlined into it. */
#include <dlfcn.h>
#include <stdlib.h>

__attribute__((noinline)) char *exported_alloc(size_t n)
{
    char *p = malloc(n); /* SITE:exported */
    if (p)
        p[0] = 1;
    return p;
}

__attribute__((noinline)) static char *static_alloc(size_t n)
{
    char *p = malloc(n); /* SITE:static */
    if (p)
        p[0] = 2;
    return p;
}

static inline __attribute__((always_inline)) char *inlined_alloc(size_t n)
{
    char *p = malloc(n); /* SITE:inlined */
    if (p)
        p[0] = 3;
    return p;
}

__attribute__((noinline)) char *outer_alloc(size_t n)
{
    return inlined_alloc(n);
}

int main(void)
{
    char *a = exported_alloc(11);
    char *b = static_alloc(22);
    char *c = outer_alloc(33);
    void (*print_trace)(const void *) =
        (void (*)(const void *))dlsym(RTLD_DEFAULT, "print_trace");
    if (print_trace) {
        print_trace(a);
        print_trace(b);
        print_trace(c);
    }
    free(c);
    free(b);
    free(a);
    return 0;
}
