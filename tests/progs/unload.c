/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A block allocated inside a library that is then dlclosed: its stack must
 * still resolve (the library from its file, marked as unloaded). Also the
 * bad-input targets for print_trace: a stack address, a data-segment
 * address. With the argument "leak" the block is never freed, so that the
 * profiler's exit report and folded files show the unloaded frame. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *g_unloaded;
int g_data[64];
void *g_stack_addr;

__attribute__((noinline)) void checkpoint(void)
{
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    int leak = argc > 1 && strcmp(argv[1], "leak") == 0;
    char path[4096];
    snprintf(path, sizeof path, "%s", argv[0]);
    char *slash = strrchr(path, '/');
    strcpy(slash ? slash + 1 : path, "libdl_sites.so");
    void *lib = dlopen(path, RTLD_NOW);
    if (!lib)
        return 4;
    void *(*dl_make)(size_t) = (void *(*)(size_t))dlsym(lib, "dl_make");
    g_unloaded = dl_make(321);
    if (dlclose(lib) != 0)
        return 5;
    int local = 1;
    g_stack_addr = &local;
    checkpoint();
    if (!leak)
        free(g_unloaded);
    printf("unload: done %d\n", local);
    return 0;
}
