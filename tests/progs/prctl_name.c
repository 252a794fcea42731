/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A thread named with prctl(PR_SET_NAME), not pthread_setname_np, that
 * allocates a block (SITE:pr_named) kept in g_prctl; the program stops in
 * checkpoint(). prctl's return value and errno must be the kernel's under
 * memtrace's interposer: exit 1 otherwise. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>

void *g_prctl;

__attribute__((noinline)) void checkpoint(void)
{
    __asm__ volatile("" ::: "memory");
}

static void *named_main(void *arg)
{
    (void)arg;
    errno = 1234;
    if (prctl(PR_SET_NAME, "pr-worker", 0, 0, 0) != 0 || errno != 1234)
        return (void *)1;
    g_prctl = malloc(91); /* SITE:pr_named */
    return NULL;
}

int main(void)
{
    errno = 0;
    if (prctl(-1, 0, 0, 0, 0) != -1 || errno != EINVAL) {
        fprintf(stderr, "prctl_name: a bad option did not give -1 and EINVAL\n");
        return 1;
    }
    char name[16] = "";
    if (prctl(PR_GET_NAME, name, 0, 0, 0) != 0 || name[0] == '\0') {
        fprintf(stderr, "prctl_name: PR_GET_NAME failed\n");
        return 1;
    }
    pthread_t t;
    void *rc = NULL;
    pthread_create(&t, NULL, named_main, NULL);
    pthread_join(t, &rc);
    if (rc) {
        fprintf(stderr, "prctl_name: PR_SET_NAME changed its result or errno\n");
        return 1;
    }
    checkpoint();
    free(g_prctl);
    printf("prctl_name: done\n");
    return 0;
}
