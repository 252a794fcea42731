/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One block from every entry point memtrace interposes, each at a line
 * marked "SITE:<name>". The e2e test stops in checkpoint(), asks print_trace
 * about each g_<name> pointer, and checks the marked line and function. */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *g_malloc, *g_calloc, *g_realloc, *g_realloc_old, *g_reallocarray,
    *g_posix_memalign, *g_aligned_alloc, *g_memalign, *g_valloc, *g_pvalloc,
    *g_strdup, *g_thread, *g_dlopen, *g_qsort;

__attribute__((noinline)) void checkpoint(void)
{
    __asm__ volatile("" ::: "memory");
}

static void *thread_main(void *arg)
{
    (void)arg;
    g_thread = malloc(77); /* SITE:thread */
    return NULL;
}

/* Called by libc's qsort, which keeps no frame pointer: a frame-pointer
 * walk from here does not see qsort's frames, an unwinder using CFI does. */
static int compare_and_allocate(const void *a, const void *b)
{
    if (!g_qsort)
        g_qsort = malloc(33); /* SITE:qsort */
    return *(const int *)a - *(const int *)b;
}

int main(int argc, char **argv)
{
    (void)argc;
    g_malloc = malloc(100); /* SITE:malloc */
    g_calloc = calloc(10, 12); /* SITE:calloc */
    g_realloc_old = malloc(56);
    g_realloc = realloc(g_realloc_old, 1 << 20); /* SITE:realloc */
    if (g_realloc == g_realloc_old) {
        fprintf(stderr, "sites: realloc did not move the block\n");
        return 2;
    }
    g_reallocarray = reallocarray(NULL, 10, 30); /* SITE:reallocarray */
    if (posix_memalign(&g_posix_memalign, 64, 200) != 0) /* SITE:posix_memalign */
        return 3;
    g_aligned_alloc = aligned_alloc(128, 256); /* SITE:aligned_alloc */
    g_memalign = memalign(32, 40); /* SITE:memalign */
    g_valloc = valloc(300); /* SITE:valloc */
    g_pvalloc = pvalloc(5000); /* SITE:pvalloc */
    g_strdup = strdup("memtrace"); /* SITE:strdup */
    int order[] = { 2, 1 };
    qsort(order, 2, sizeof order[0], compare_and_allocate);

    pthread_t t;
    pthread_create(&t, NULL, thread_main, NULL);
    pthread_join(t, NULL);

    /* The library sits next to this program in the build tree. */
    char path[4096];
    snprintf(path, sizeof path, "%s", argv[0]);
    char *slash = strrchr(path, '/');
    snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0),
             "libdl_sites.so");
    void *lib = dlopen(path, RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "sites: %s\n", dlerror());
        return 4;
    }
    void *(*dl_make)(size_t) = (void *(*)(size_t))dlsym(lib, "dl_make");
    g_dlopen = dl_make(123);

    checkpoint();

    void *all[] = { g_malloc, g_calloc, g_realloc, g_reallocarray, g_posix_memalign,
                    g_aligned_alloc, g_memalign, g_valloc, g_pvalloc, g_strdup,
                    g_thread, g_dlopen, g_qsort };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
    printf("sites: done\n");
    return 0;
}
