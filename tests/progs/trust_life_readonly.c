/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Frees a block made read-only: malloc(1 MiB) (mmap-sized), its
 * pages mprotect'ed PROT_READ, then free. glibc only munmaps
 * it; memtrace must not write into it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void)
{
    size_t size = 1 << 20, page = (size_t)sysconf(_SC_PAGESIZE);
    char *p = malloc(size);
    if (!p)
        return 2;
    memset(p, 7, size);
    /* The whole block, from the page of its head (glibc's chunk header
     * is in it, read by free) */
    uintptr_t from = (uintptr_t)p & ~(page - 1);
    uintptr_t to = ((uintptr_t)p + size + page - 1) & ~(page - 1);
    if (mprotect((void *)from, to - from, PROT_READ) != 0) {
        perror("mprotect");
        return 2;
    }
    free(p);
    printf("freed\n");
    return 0;
}
