/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Eight threads resize small blocks so that they move (the old block is
 * freed inside realloc) while the others allocate blocks of the old one's
 * size: with one arena and no tcache (the script's GLIBC_TUNABLES), the
 * address freed by one thread's realloc is soon another thread's new
 * block. Runs for argv[1] seconds (default 2); frees everything it
 * allocated, so that a recording's replay must count as many frees as
 * allocations, less the blocks libc keeps. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static double seconds = 2;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
    (void)arg;
    double end = now() + seconds;
    void *keep[16] = { 0 };
    unsigned i = 0;
    while ((i & 255) || now() < end) {
        void *p = malloc(24);
        void *q = realloc(p, 2000 + (i & 7) * 64); /* moves: 24 bytes cannot grow to 2000 in place */
        if (q)
            p = q;
        void *r = malloc(24); /* the size of the block realloc just freed */
        free(keep[i & 15]);
        keep[i & 15] = r;
        free(p);
        i++;
    }
    for (unsigned k = 0; k < 16; k++)
        free(keep[k]);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        seconds = atof(argv[1]);
    pthread_t t[8];
    for (int k = 0; k < 8; k++)
        pthread_create(&t[k], NULL, worker, NULL);
    for (int k = 0; k < 8; k++)
        pthread_join(t[k], NULL);
    return 0;
}
