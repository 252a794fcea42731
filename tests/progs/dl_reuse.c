/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Libraries unloaded and replaced: dlopen libdl_a.so (no debug information),
 * print a block from it, dlclose it, dlopen libdl_b.so (usually mapped at the
 * same address), print a block from that, dlclose it and print the block
 * again. Found by adversarial testing:
 *   - a re-read of the modules after a dlclose freed garbage (libdwfl's
 *     "removed" callback gets the userdata slot): free(): invalid pointer;
 *   - without that re-read, b's block was named after a_alloc in liba;
 *   - the symbolizer looked for liba's debug information through debuginfod,
 *     loading libdebuginfod and libcurl into this process.
 * Exits 0, or 3 if a debuginfod or curl library got loaded. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void (*print_trace)(const void *ptr); /* from the preloaded memtrace */

static int loaded_network_library(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size, (void)data;
    const char *name = info->dlpi_name;
    if (strstr(name, "libdebuginfod") || strstr(name, "libcurl")) {
        fprintf(stderr, "dl_reuse: %s was loaded into the process\n", name);
        return 1;
    }
    return 0;
}

static void *load(const char *dir, const char *lib, const char *fn, void **handle)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, lib);
    *handle = dlopen(path, RTLD_NOW);
    if (!*handle) {
        fprintf(stderr, "dl_reuse: %s\n", dlerror());
        exit(2);
    }
    void *(*alloc)(size_t) = (void *(*)(size_t))dlsym(*handle, fn);
    Dl_info info;
    dladdr((void *)alloc, &info);
    printf("dl_reuse: %s at %p\n", lib, info.dli_fbase);
    return alloc(24);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    print_trace = (void (*)(const void *))dlsym(RTLD_DEFAULT, "print_trace");
    if (!print_trace) {
        fprintf(stderr, "dl_reuse: run me under memtrace\n");
        return 2;
    }
    void *ha, *hb;
    void *a = load(dir, "libdl_a.so", "a_alloc", &ha);
    print_trace(a);
    dlclose(ha);
    void *b = load(dir, "libdl_b.so", "b_alloc", &hb);
    print_trace(b);
    dlclose(hb);
    print_trace(b);
    if (dl_iterate_phdr(loaded_network_library, NULL))
        return 3;
    free(a);
    free(b);
    return 0;
}
