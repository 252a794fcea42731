/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Exit while another thread waits in fgets(stdin) (stdin's lock held):
 * "leak" loses a block, "error" overflows one (a heap error report), then
 * main returns 0. Memtrace's exit status (leaks, heap errors) must not wait
 * on stdin's lock. Prints "main done" first, unflushed (a pipe). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *reader(void *arg)
{
    char line[64];
    (void)arg;
    if (fgets(line, sizeof line, stdin))
        printf("read %s", line);
    return NULL;
}

static void *volatile keep;

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    pthread_t t;
    pthread_create(&t, NULL, reader, NULL);
    usleep(200 * 1000); /* the reader is in fgets, stdin's lock held */
    if (strcmp(argv[1], "leak") == 0) {
        keep = malloc(100); /* SITE:lost */
        keep = NULL;
    } else {
        volatile size_t over = 17;
        char *p = malloc(16);
        memset(p, 'x', over); /* one byte past the end */
        free(p);
    }
    printf("main done\n");
    return 0;
}
