/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The parent makes a heap error (one byte past a block's end, reported at
 * its free), then forks 5 children that exit 0 normally (exit, so
 * memtrace's exit handlers run in them). Prints each child's status; the
 * parent returns 0 itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
    volatile size_t over = 17;
    char *p = malloc(16);
    memset(p, 'x', over); /* one byte past the end */
    free(p);
    fflush(stdout);
    for (int i = 0; i < 5; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            free(malloc(10));
            exit(0);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        printf("child %d: %d\n", i, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
        fflush(stdout);
    }
    return 0;
}
