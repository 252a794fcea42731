/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The files suite's program (tests/e2e/trust_files.sh). Allocates, then
 * does what its arguments say, in order:
 *   chdir DIR     change the working directory
 *   daemon FILE   close descriptors 3-1023, open FILE.0 to FILE.7 (created:
 *                 descriptors 3 to 10) and write 600 lines of its own into
 *                 each, allocating between them, as a daemon does after it
 *                 starts
 *   reexec N      execute itself again with "reexec N-1" and the arguments
 *                 after these while N > 0
 *   unlink FILE   remove FILE
 *   leak          leave one block of 4242 bytes unfreed
 * and exits 0. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void churn(int n)
{
    for (int i = 0; i < n; i++) {
        void *p = malloc(16 + (size_t)i % 200); /* SITE:churn */
        free(p);
    }
}

int main(int argc, char **argv)
{
    churn(1000);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "chdir") == 0 && i + 1 < argc) {
            if (chdir(argv[++i]) != 0) {
                perror("chdir");
                return 2;
            }
        } else if (strcmp(argv[i], "daemon") == 0 && i + 1 < argc) {
            const char *file = argv[++i];
            for (int fd = 3; fd < 1024; fd++)
                close(fd);
            int fds[8];
            for (int k = 0; k < 8; k++) {
                char name[4096];
                snprintf(name, sizeof name, "%s.%d", file, k);
                fds[k] = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                if (fds[k] < 0) {
                    perror(name);
                    return 2;
                }
            }
            for (int line = 0; line < 600; line++) {
                char text[64];
                int n = snprintf(text, sizeof text, "the program's line %d\n", line);
                for (int k = 0; k < 8; k++)
                    if (write(fds[k], text, (size_t)n) != n)
                        return 3;
                churn(200);
                if (line % 100 == 0) { /* the writer's half second */
                    struct timespec ts = { 0, 150000000 };
                    nanosleep(&ts, NULL);
                }
            }
            for (int k = 0; k < 8; k++)
                close(fds[k]);
        } else if (strcmp(argv[i], "reexec") == 0 && i + 1 < argc) {
            int n = atoi(argv[++i]);
            if (n > 0) {
                char left[16];
                snprintf(left, sizeof left, "%d", n - 1);
                char *args[64] = { argv[0], "reexec", left };
                int k = 3;
                for (int j = i + 1; j < argc && k < 63; j++)
                    args[k++] = argv[j];
                args[k] = NULL;
                execv("/proc/self/exe", args);
                perror("exec");
                return 2;
            }
        } else if (strcmp(argv[i], "unlink") == 0 && i + 1 < argc) {
            if (unlink(argv[++i]) != 0) {
                perror("unlink");
                return 2;
            }
        } else if (strcmp(argv[i], "leak") == 0) {
            void *volatile p = malloc(4242); /* SITE:leak */
            (void)p;
        }
    }
    churn(1000);
    return 0;
}
