/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* glibc's __libc_* names of its allocator, mixed with the standard ones:
 * blocks freed at once (traced ones first, so that the addresses
 * __libc_malloc hands out were traced blocks before); with argument
 * "leak", only one __libc_malloc block left behind instead. Exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *__libc_malloc(size_t size);
void __libc_free(void *ptr);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *ptr, size_t size);
void *__libc_memalign(size_t align, size_t size);
void *__libc_valloc(size_t size);
void *__libc_pvalloc(size_t size);

void *volatile kept;

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "leak") == 0) {
        kept = __libc_malloc(77); /* SITE:libc_leak */
        kept = NULL;
        puts("done");
        return 0;
    }
    for (int i = 0; i < 100; i++) {
        void *p = malloc(48);
        free(p);
        p = __libc_malloc(48); /* the address of the block just freed, often */
        free(p);
        p = malloc(48);
        __libc_free(p);
        p = __libc_calloc(2, 24);
        p = __libc_realloc(p, 96);
        p = realloc(p, 200);
        __libc_free(p);
        p = __libc_memalign(64, 48);
        free(p);
        p = __libc_valloc(48);
        __libc_free(p);
        p = __libc_pvalloc(48);
        free(p);
    }
    puts("done");
    return 0;
}
