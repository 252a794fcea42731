/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* 2,000 blocks of 4 KiB held when stop_here is called; then prints
 * "traced" or "untraced": whether libmemtrace.so is loaded
 * (tests/e2e/trust_messages.sh). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void stop_here(void);
void __attribute__((noinline)) stop_here(void)
{
    __asm__ volatile("" ::: "memory");
}

int main(void)
{
    enum { N = 2000, SIZE = 4096 };
    static char *p[N];
    for (int i = 0; i < N; i++) {
        p[i] = malloc(SIZE);
        memset(p[i], i, SIZE);
    }
    stop_here();
    puts(dlsym(RTLD_DEFAULT, "print_trace") ? "traced" : "untraced");
    for (int i = 0; i < N; i++)
        free(p[i]);
    return 0;
}
