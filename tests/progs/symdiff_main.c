/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The program of the symbolization differential test
 * (tests/e2e/symbolize_diff.sh), built by the script with gcc and clang,
 * DWARF 4 and 5, -O0 and -O2, PIE and not: three allocation sites, one in
 * a function inlined at every level, one in a function never inlined, one
 * in a shared library (tests/progs/symdiff_lib.c), each block's stack
 * printed with print_trace (found with dlsym: the program runs under
 * LD_PRELOAD=libmemtrace.so). */
#include <dlfcn.h>
#include <stdlib.h>

char *symdiff_lib_alloc(size_t n);

static inline __attribute__((always_inline)) char *inlined_alloc(size_t n)
{
    char *p = malloc(n); /* SITE:inlined */
    if (p)
        p[0] = 1;
    return p;
}

__attribute__((noinline)) char *plain_alloc(size_t n)
{
    char *p = malloc(n); /* SITE:plain */
    if (p)
        p[0] = 2;
    return p;
}

__attribute__((noinline)) void run(void)
{
    char *a = inlined_alloc(11);
    char *b = plain_alloc(22);
    char *c = symdiff_lib_alloc(33);
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
}

int main(void)
{
    run();
    return 0;
}
