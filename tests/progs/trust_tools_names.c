/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* trust_tools.sh: names that are the program's bytes. A thread named
 * with an escape sequence and a newline ("\033[2J\nm:x": what fits a
 * thread's 15 bytes) allocates and frees; a tag scope's name is not UTF-8.
 *   trust_tools_names double   the named thread frees a block twice
 *   trust_tools_names keep     it keeps g_named and allocates in the scope;
 *                              then main frees four blocks into its
 *                              quarantine and calls checkpoint() (for gdb) */
#include "memtrace.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#define EVIL "\033[2J\nm:x"
#define SCOPE "scope\xff\xfe\033]0;X\007"

void *volatile g_named;
void *volatile g_scoped;

__attribute__((noinline)) void checkpoint(void)
{
    __asm__ volatile("" ::: "memory");
}

void *evil_alloc(size_t n);

static void *named(void *arg)
{
    const char *mode = arg;
    prctl(PR_SET_NAME, EVIL);
    if (strcmp(mode, "double") == 0) {
        char *volatile p = evil_alloc(24);
        free(p);
        free(p); /* SITE:double */
        return NULL;
    }
    g_named = malloc(40); /* SITE:named */
    memtrace_tag_push(SCOPE);
    g_scoped = malloc(100);
    memtrace_tag_pop();
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    pthread_t t;
    pthread_create(&t, NULL, named, argv[1]);
    pthread_join(t, NULL);
    for (int i = 0; i < 4; i++)
        free(malloc(32));
    checkpoint();
    printf("done\n");
    return 0;
}

/* Debug information names this function's file with an escape sequence
 * and a newline: its frame is "evil_alloc at evil\x1b]0;X\x07\x0afile.c:1002:12". */
#line 1000 "evil\033]0;X\007\nfile.c"
void *evil_alloc(size_t n)
{
    return malloc(n);
}
