/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Two allocation sites in two functions for the recordings' symbolization
 * afterwards (tests/e2e/sym_late.sh): mk allocates 100 bytes five times
 * (SITE:mk), the thread thr 1000 bytes once (SITE:thr); all kept. It prints
 * "base ADDR" (its load address: the start of its first segment, which a
 * PIE links at 0) and "ready", then with "wait" as argv[1] sleeps until
 * killed, else exits. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char __executable_start;
void *volatile g_keep[8];

__attribute__((noinline)) void *mk(size_t n)
{
    void *p = malloc(n); /* SITE:mk */
    return p;
}

__attribute__((noinline)) void *thr(void *arg)
{
    g_keep[7] = malloc(1000); /* SITE:thr */
    return arg;
}

int main(int argc, char **argv)
{
    for (int i = 0; i < 5; i++)
        g_keep[i] = mk(100);
    pthread_t t;
    if (pthread_create(&t, NULL, thr, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 2;
    printf("base %p\nready\n", (void *)&__executable_start);
    fflush(stdout);
    if (argc > 1 && strcmp(argv[1], "wait") == 0)
        for (;;)
            pause();
    return 0;
}
