/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A program with known phases for the recording's tests
 * (tests/e2e/timeline.sh). It allocates nothing but what it says, writes
 * with write(2) only, and logs each change of its own live bytes and
 * blocks as "NS BYTES BLOCKS" lines into the file argv[1], NS from the
 * start of main (CLOCK_MONOTONIC), before and after each change:
 *   hold:  1000 blocks of 1000 bytes (SITE:hold), kept;
 *   temp:  5000 malloc(64)/free pairs (SITE:temp): 5000 temporary;
 *   peak:  500 blocks of 4000 bytes (SITE:peak), freed oldest first;
 *   leave: 900 of the hold blocks freed, 100 leaked.
 * Each phase ends with 200 ms of sleep. With "forever" as argv[2] it then
 * allocates and frees without end (the truncation test kills it). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int log_fd;
static struct timespec start;
static long long bytes, blocks;
void *volatile g_sink;

static void note(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long ns = (now.tv_sec - start.tv_sec) * 1000000000LL + (now.tv_nsec - start.tv_nsec);
    char line[96];
    int n = snprintf(line, sizeof line, "%lld %lld %lld\n", ns, bytes, blocks);
    if (write(log_fd, line, (size_t)n) != n)
        _exit(3);
}

static void pause_ms(int ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

__attribute__((noinline)) static void *hold_block(void)
{
    return malloc(1000); /* SITE:hold */
}

__attribute__((noinline)) static void *temp_block(void)
{
    return malloc(64); /* SITE:temp */
}

__attribute__((noinline)) static void *peak_block(void)
{
    return malloc(4000); /* SITE:peak */
}

int main(int argc, char **argv)
{
    clock_gettime(CLOCK_MONOTONIC, &start);
    if (argc < 2 || (log_fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0)
        return 2;
    static void *hold[1000], *peak[500];
    note();
    for (int i = 0; i < 1000; i++)
        hold[i] = hold_block();
    bytes += 1000 * 1000;
    blocks += 1000;
    note();
    pause_ms(200);
    note();
    for (int i = 0; i < 5000; i++) {
        void *p = temp_block();
        g_sink = p;
        free(p);
    }
    note();
    pause_ms(200);
    note();
    for (int i = 0; i < 500; i++)
        peak[i] = peak_block();
    bytes += 500 * 4000;
    blocks += 500;
    note();
    pause_ms(200);
    note();
    for (int i = 0; i < 500; i++)
        free(peak[i]);
    bytes -= 500 * 4000;
    blocks -= 500;
    note();
    pause_ms(200);
    note();
    for (int i = 0; i < 900; i++)
        free(hold[i]);
    bytes -= 900 * 1000;
    blocks -= 900;
    note();
    pause_ms(200);
    note();
    while (argc > 2 && strcmp(argv[2], "forever") == 0) {
        for (int i = 0; i < 1000; i++)
            free(g_sink = hold_block());
        pause_ms(1);
    }
    return 0;
}
