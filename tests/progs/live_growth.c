/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A loop whose every iteration keeps two blocks, loses one and frees a
 * temporary (tests/e2e/live_growth.sh): at the breakpoint on tick of
 * iteration 1 gdb takes a snapshot and runs `memtrace leaks`; at
 * iteration 2's, `memtrace growth` must show exactly iteration 1's blocks
 * still live, and `memtrace leaks new` its one lost block. With an
 * argument "pool", the kept blocks come from a pool the program declares
 * (memtrace_malloclike), which growth counts as well. With "wait DIR", it
 * first waits, allocating nothing, until DIR/go exists: time for
 * `memtrace attach` to load memtrace into it. */
#include "memtrace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void *kept[64];
static char pool[4096];
static size_t pool_used;

static __attribute__((noinline)) void tick(int i)
{
    __asm__ volatile("" ::"r"(i) : "memory"); /* a call gdb can break on */
}

static __attribute__((noinline)) void *from_pool(size_t n)
{
    void *p = pool + pool_used;
    pool_used += (n + 15) & ~(size_t)15;
    memtrace_malloclike(p, n); /* SITE:grow_pool */
    return p;
}

static __attribute__((noinline)) void lose(void)
{
    void *p = malloc(40); /* SITE:grow_lost */
    memset(&p, 0, sizeof p);
}

static __attribute__((noinline)) void iteration(int i, int use_pool)
{
    kept[2 * i] = malloc(100);    /* SITE:grow_a */
    kept[2 * i + 1] = malloc(28); /* SITE:grow_b */
    if (use_pool)
        kept[32 + i] = from_pool(56);
    free(malloc(50));             /* a temporary: no growth */
    lose();
}

int main(int argc, char **argv)
{
    int use_pool = argc > 1 && strcmp(argv[1], "pool") == 0;
    if (argc > 2 && strcmp(argv[1], "wait") == 0) {
        char go[4096];
        struct stat st;
        snprintf(go, sizeof go, "%s/go", argv[2]);
        while (stat(go, &st) != 0)
            usleep(10000);
    }
    for (int i = 0; i < 4; i++) {
        tick(i);
        iteration(i, use_pool);
    }
    tick(4);
    return 0;
}
