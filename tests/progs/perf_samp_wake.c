/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* perf_samp_wake: an idle program for tests/e2e/perf_samp_wake.sh (the
 * profiler's reporter thread, idle with it).
 *
 *   perf_samp_wake MS [exit]
 *
 * Allocates a block of 16 MiB (sampled but once in e^32 runs at a rate of
 * 512 KiB: sampling draws bytes, 1 MiB went unsampled one run in 7), sleeps MS
 * milliseconds, and returns; with "exit", main ends with pthread_exit
 * after starting a thread that sleeps MS milliseconds more and returns:
 * the process ends when that thread does (the reporter's end-of-program
 * check). Prints "slept". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long ms;
static void *kept;

static void nap(long n)
{
    struct timespec ts = { n / 1000, n % 1000 * 1000000L };
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static void *late(void *arg)
{
    (void)arg;
    nap(ms);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    ms = atol(argv[1]);
    kept = malloc(1 << 24);
    memset(kept, 1, 1 << 24);
    nap(ms);
    printf("slept\n");
    fflush(stdout);
    if (argc > 2 && strcmp(argv[2], "exit") == 0) {
        pthread_t t;
        if (pthread_create(&t, NULL, late, NULL) != 0)
            return 3;
        pthread_exit(NULL);
    }
    return 0;
}
