/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The profiler's pprof labels (tests/e2e/perf_profile_labels.sh): known
 * sizes in two tag scopes on two named threads, every block kept live to
 * the exit, the threads one after the other:
 *
 *   "alpha"  one call site in a loop (its SITE marker): parse 2 x 1000,
 *            then io 1 x 300
 *   "beta"   io 1 x 500; outside any scope 1 x 70
 *            (its own site)
 *
 * so that tag parse holds 2000 bytes, io 800, the threads 2300 (alpha)
 * and 570 (beta), and alpha's site holds blocks of both scopes (two
 * labelled samples of one stack). Built without -lmemtrace: the header's
 * weak declarations. */
#define _GNU_SOURCE /* pthread_setname_np */
#include "memtrace.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *kept[16];
static int nkept;

static __attribute__((noinline)) void keep(size_t n)
{
    kept[nkept++] = malloc(n);
}

static __attribute__((noinline)) void scoped(const char *tag, size_t n)
{
    memtrace_tag_push(tag);
    keep(n);
    memtrace_tag_pop();
}

static void *alpha(void *arg)
{
    static const char *const tags[] = { "parse", "parse", "io" };
    static const size_t sizes[] = { 1000, 1000, 300 };
    (void)arg;
    pthread_setname_np(pthread_self(), "alpha"); /* before its first block */
    for (int i = 0; i < 3; i++)
        scoped(tags[i], sizes[i]); /* SITE:scoped */
    return NULL;
}

static void *beta(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "beta");
    scoped("io", 500); /* SITE:beta_io */
    keep(70);          /* SITE:beta_bare */
    return NULL;
}

static void run(void *(*fn)(void *))
{
    pthread_t t;
    if (pthread_create(&t, NULL, fn, NULL) != 0)
        exit(2);
    pthread_join(t, NULL);
}

int main(void)
{
    run(alpha);
    run(beta);
    printf("kept %d\n", nkept);
    return 0;
}
