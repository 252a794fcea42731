/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* top_target: memtrace top's bench (bench/top.sh).
 *
 *   top_target LIVE SECONDS
 *
 * Allocates LIVE blocks of 16 to 528 bytes from 8 call sites, prints
 * "ready PID" and waits for the file TOP_WAIT names (if set) to exist;
 * then, for SECONDS, frees a random block and allocates another in its
 * place, again and again, and prints "pairs_per_s N" (its throughput)
 * and "pairs_per_cpu_s N" (per second of its own CPU time: what it did
 * with the CPU it was given, apart from how much it was given).
 * The PRNG is fixed: runs are alike. */
#include <stdint.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static uint64_t rng = 88172645463325252ull;

static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

#define SITE(n) \
    __attribute__((noinline)) static void *site##n(size_t size) { return malloc(size); }
SITE(0) SITE(1) SITE(2) SITE(3) SITE(4) SITE(5) SITE(6) SITE(7)
static void *(*const sites[8])(size_t) = { site0, site1, site2, site3, site4, site5, site6, site7 };

static void *one(void)
{
    uint64_t r = next_random();
    char *p = sites[r & 7](16 + (r >> 8) % 513);
    if (p)
        p[0] = 1;
    return p;
}

static double cpu_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    long live = argc > 1 ? atol(argv[1]) : 1000000;
    double seconds = argc > 2 ? atof(argv[2]) : 5;
    void **blocks = calloc((size_t)live, sizeof *blocks);
    if (!blocks || live <= 0)
        return 1;
    for (long i = 0; i < live; i++)
        blocks[i] = one();
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    const char *wait = getenv("TOP_WAIT");
    struct timespec nap = { 0, 2000000 };
    while (wait && access(wait, F_OK) != 0)
        nanosleep(&nap, NULL);
    double t0 = now(), t = t0, c0 = cpu_now();
    long pairs = 0;
    while (t - t0 < seconds) {
        for (int k = 0; k < 4096; k++) {
            long i = (long)(next_random() % (uint64_t)live);
            free(blocks[i]);
            blocks[i] = one();
        }
        pairs += 4096;
        t = now();
    }
    double c = cpu_now() - c0;
    printf("pairs_per_s %.0f\npairs_per_cpu_s %.0f\n", pairs / (t - t0), c > 0 ? pairs / c : 0);
    return 0;
}
