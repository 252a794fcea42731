/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Takes malloc's address: built -no-pie (by trust_interpose.sh), the
 * executable then gets a canonical PLT entry for malloc, which a symbol
 * lookup answers for "malloc"; its calls still reach memtrace's. With
 * -DOWN_MALLOC it defines malloc and its family itself instead (over
 * glibc's __libc_* names), which memtrace must warn about. Prints the
 * block's first byte's value written through the pointer, exits 0. */
#include <stdio.h>
#include <stdlib.h>

#ifdef OWN_MALLOC
void *__libc_malloc(size_t size);
void __libc_free(void *ptr);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *ptr, size_t size);
void *malloc(size_t size) { return __libc_malloc(size); }
void free(void *ptr) { __libc_free(ptr); }
void *calloc(size_t n, size_t size) { return __libc_calloc(n, size); }
void *realloc(void *ptr, size_t size) { return __libc_realloc(ptr, size); }
#endif

void *(*volatile alloc)(size_t);

int main(void)
{
    alloc = malloc; /* in code: an absolute address, the canonical PLT entry */
    char *p = alloc(16);
    p[0] = 7;
    printf("%d\n", p[0]);
    free(p);
    return 0;
}
