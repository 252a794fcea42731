/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Blocks for the gdb helper's tests (tests/e2e/gdb_helper.sh), each made at
 * a line marked "SITE:<name>": an interior pointer's block, a freed block
 * whose address was reused and freed again, a block live again at a freed
 * address, a block live again after five earlier lives at its address, a
 * named thread's block, call sites of known live bytes for
 * `memtrace top`, blocks near addresses in no block, and a thread calling
 * malloc and free while the program is stopped in checkpoint(). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void *g_live, *g_freed, *g_again, *g_named, *g_small[10], *g_big[1000], *g_near, *g_near_next,
    *g_near_freed, *g_many;
volatile int g_stop, g_spins;

__attribute__((noinline)) void checkpoint(void)
{
    __asm__ volatile("" ::: "memory");
}

static void *named_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "gh-worker");
    g_named = malloc(77); /* SITE:gh_named */
    return NULL;
}

/* Keeps the allocator and memtrace busy until told to stop. */
static void *spin_main(void *arg)
{
    (void)arg;
    while (!g_stop) {
        void *p = malloc(24 + (g_spins & 63)); /* SITE:gh_spin */
        free(p);
        __atomic_fetch_add(&g_spins, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

int main(void)
{
    g_live = malloc(100); /* SITE:gh_live */

    /* A freed block whose address the allocator hands out again (same size,
     * same thread: the same tcache bin), then frees again. */
    void *first = malloc(48); /* SITE:gh_freed_alloc */
    free(first); /* SITE:gh_freed_free */
    void *second = malloc(48); /* SITE:gh_reuse_alloc */
    free(second); /* SITE:gh_reuse_free */
    g_freed = first;

    void *old = malloc(200); /* SITE:gh_old_alloc */
    free(old); /* SITE:gh_old_free */
    g_again = malloc(200); /* SITE:gh_again */
    if (second != first || g_again != old) {
        fprintf(stderr, "gdb_sites: the allocator did not reuse the addresses\n");
        return 2;
    }

    /* Five lives at one address (the same tcache bin each time), then a
     * sixth that stays: its answer shows the newest 3 of the five. */
    void *life = NULL;
    for (int i = 0; i < 5; i++) {
        void *p = malloc(300); /* SITE:gh_many_alloc */
        if (life && p != life) {
            fprintf(stderr, "gdb_sites: the allocator did not reuse the address\n");
            return 2;
        }
        life = p;
        free(p); /* SITE:gh_many_free */
    }
    g_many = malloc(300); /* SITE:gh_many */
    if (g_many != life) {
        fprintf(stderr, "gdb_sites: the allocator did not reuse the address\n");
        return 2;
    }

    for (int i = 0; i < 1000; i++)
        g_big[i] = malloc(1000); /* SITE:gh_top */
    for (int i = 0; i < 10; i++)
        g_small[i] = malloc(5000); /* SITE:gh_second */

    /* Addresses in no block: g_near + 104 is 4 bytes past its end,
     * g_near_next - 4 4 bytes before that block, g_near_freed + 104 4 bytes
     * past the end of a block freed since. */
    g_near = malloc(100); /* SITE:gh_near */
    g_near_next = malloc(100); /* SITE:gh_near_next */
    g_near_freed = malloc(100); /* SITE:gh_near_freed_alloc */
    free(g_near_freed); /* SITE:gh_near_freed_free */

    pthread_t named, spinner;
    pthread_create(&named, NULL, named_main, NULL);
    pthread_join(named, NULL);
    pthread_create(&spinner, NULL, spin_main, NULL);
    while (__atomic_load_n(&g_spins, __ATOMIC_RELAXED) < 20000)
        usleep(1000);

    checkpoint();

    g_stop = 1;
    pthread_join(spinner, NULL);
    for (int i = 0; i < 1000; i++)
        free(g_big[i]);
    for (int i = 0; i < 10; i++)
        free(g_small[i]);
    free(g_live);
    free(g_near);
    free(g_near_next);
    free(g_again);
    free(g_many);
    free(g_named);
    printf("gdb_sites: done\n");
    return 0;
}
