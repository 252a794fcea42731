/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Frees that take arguments, passed on to the allocator below memtrace
 * (tests/progs/next_args_lib.c prints what it gets): a free_sized and a
 * free_aligned_sized, then enough frees to push both out of a quarantine
 * of 1,024 slots. */
#include <stdio.h>
#include <stdlib.h>

void free_sized(void *, size_t) __attribute__((weak));
void free_aligned_sized(void *, size_t, size_t) __attribute__((weak));

int main(void)
{
    if (!free_sized || !free_aligned_sized) {
        puts("next_args: no free_sized");
        return 1;
    }
    free_sized(malloc(100), 100);
    free_aligned_sized(aligned_alloc(64, 128), 64, 128);
    for (int i = 0; i < 2000; i++)
        free(malloc(8));
    puts("next_args: done");
    return 0;
}
