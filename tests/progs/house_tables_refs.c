/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* 100 words of a global array and 100 of a heap block all point at one
 * block (g_target): `memtrace refs g_target` must list each of the 200
 * places (tests/e2e/house_tables_refs.sh), more than one read of the target's
 * memory holds at once. */
#include <stdlib.h>

#define MANY 100

void *g_many[MANY];
void **g_holder;
void *g_target;

__attribute__((noinline)) void checkpoint(void)
{
    __asm__ volatile("" ::: "memory");
}

int main(void)
{
    g_target = malloc(40);
    g_holder = malloc(MANY * sizeof *g_holder);
    for (int i = 0; i < MANY; i++)
        g_many[i] = g_holder[i] = g_target;
    checkpoint();
    free(g_holder);
    free(g_target);
    return 0;
}
