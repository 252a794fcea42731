/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cfi unwinder after dlclose: libcfi_a.so and then libcfi_b.so are
 * loaded at the same address, and their alloc_here calls malloc from the
 * same offset under different CFA rules (a 32-byte and a 96-byte frame).
 * A rule learnt from a and kept for b unwinds b's frame wrongly. The last
 * block from b is kept and shown with print_trace (when memtrace is
 * preloaded): its frame #1 must be call_from at the SITE:b line.
 * (libunwind 1.6's per-thread trace cache makes exactly that mistake, so
 * MEMTRACE_UNWIND=check reports mismatches here: libunwind's side is the
 * wrong one.) Exits 0; 2 when b was not mapped where a was (untested). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *volatile kept;

static void *call_from(const char *dir, const char *lib, void **where)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, lib);
    void *h = dlopen(path, RTLD_NOW);
    if (!h) {
        fprintf(stderr, "dl_cfi: %s\n", dlerror());
        exit(1);
    }
    void *(*alloc_here)(size_t) = (void *(*)(size_t))dlsym(h, "alloc_here");
    *where = (void *)alloc_here;
    for (int i = 0; i < 10; i++)
        free(alloc_here(24));
    kept = alloc_here(24); /* SITE:b */
    return h;
}

int main(int argc, char **argv)
{
    (void)argc;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", argv[0]);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        strcpy(dir, ".");
    void *a_at, *b_at;
    dlclose(call_from(dir, "libcfi_a.so", &a_at));
    dlclose(call_from(dir, "libcfi_b.so", &b_at));
    if (a_at != b_at) {
        fprintf(stderr, "dl_cfi: libcfi_b.so mapped at %p, not at %p\n", b_at, a_at);
        return 2;
    }
    void (*print_trace)(const void *) =
        (void (*)(const void *))dlsym(RTLD_DEFAULT, "print_trace");
    if (print_trace)
        print_trace(kept);
    printf("dl_cfi: done\n");
    return 0;
}
