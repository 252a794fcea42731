/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Asks print_trace about a block allocated in a function of a stripped
 * library that no symbol names (tests/progs/stripped_lib.c), after printing
 * "@@ base ADDR", the library's load address, and "@@ block ADDR"; stops in
 * checkpoint() for gdb's `memtrace g_block` (tests/e2e/run.sh). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

void *strip_alloc(size_t n);
void *g_block;

__attribute__((noinline)) void checkpoint(void)
{
    __asm__ volatile("" ::: "memory");
}

int main(void)
{
    g_block = strip_alloc(123);
    Dl_info info;
    if (!dladdr((void *)strip_alloc, &info))
        return 2;
    printf("@@ base %p\n@@ block %p\n", info.dli_fbase, g_block);
    fflush(stdout);
    void (*trace)(const void *) = (void (*)(const void *))dlsym(RTLD_DEFAULT, "print_trace");
    if (trace)
        trace(g_block);
    checkpoint();
    return 0;
}
