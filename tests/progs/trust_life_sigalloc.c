/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A SIGALRM handler that allocates, every 200 us, while main allocates in a
 * loop for SECONDS (argument, default 2): every allocation re-enters the
 * allocator from inside itself at some point. Prints one line at the end,
 * the same natively and under memtrace. Natively safe by construction
 * (glibc's malloc is not async-signal-safe): the handler's 32 bytes come
 * from and go back to glibc's thread cache, which main's blocks (2 KiB
 * and more, above the cache's sizes) never touch. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile sig_atomic_t ticks;

static void on_alarm(int sig)
{
    (void)sig;
    char *p = malloc(32);
    if (p) {
        memset(p, 1, 32);
        free(p);
    }
    ticks++;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 2;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    free(malloc(32)); /* the handler's first block from the cache too */
    struct itimerval it = { { 0, 200 }, { 0, 200 } };
    setitimer(ITIMER_REAL, &it, NULL);

    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    void *held[64] = { 0 };
    unsigned long n = 0;
    for (;;) {
        for (int i = 0; i < 1000; i++, n++) {
            unsigned k = (unsigned)(n * 2654435761u) % 64;
            free(held[k]);
            held[k] = malloc(2048 + (n * 7919) % 4000);
            if (held[k])
                memset(held[k], 2, 16);
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= seconds)
            break;
    }
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, NULL);
    for (int k = 0; k < 64; k++)
        free(held[k]);
    printf("done: handler ran %s\n", ticks > 0 ? "yes" : "no");
    return 0;
}
