/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One allocation site behind two inlined helpers, for a dwz-processed
 * build (tests/e2e/sym_dwz.sh, built there at -O2): the thread thr
 * allocates 1000 bytes through outer() and inner(), both inlined, so the
 * site's frame 0 is an inline chain whose functions' names dwz moves into
 * the common file. Prints "ready", then with "wait" as argv[1] sleeps
 * until killed, else exits. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *volatile g_keep[2];

static inline __attribute__((always_inline)) void *inner(size_t n)
{
    char *p = malloc(n); /* SITE:inner */
    if (p)
        p[0] = 1;
    return p;
}

static inline __attribute__((always_inline)) void *outer(size_t n)
{
    return inner(n + 8); /* SITE:outer */
}

__attribute__((noinline)) void *thr(void *arg)
{
    g_keep[0] = outer((size_t)992 + (arg != NULL)); /* SITE:thr */
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t t;
    if (pthread_create(&t, NULL, thr, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 2;
    printf("ready\n");
    fflush(stdout);
    if (argc > 1 && strcmp(argv[1], "wait") == 0)
        for (;;)
            pause();
    return 0;
}
