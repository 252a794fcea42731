/* Threads allocate, check and free blocks while the main thread forks 20
 * children that allocate and exit. Exits 0 only if every block kept its
 * pattern, every child exited 0, and nothing hung (the harness times out).
 * A lock held across fork shows here as a child that never exits. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { THREADS = 4, OPS = 200000, SLOTS = 1000, FORKS = 20 };

static int bad;

static uint64_t next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void fill(unsigned char *p, size_t n, unsigned char v)
{
    memset(p, v, n);
}

static int intact(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

static void churn(uint64_t seed, int ops)
{
    unsigned char *slot[SLOTS] = { 0 };
    size_t size[SLOTS] = { 0 };
    uint64_t x = seed;
    for (int i = 0; i < ops; i++) {
        size_t k = next(&x) % SLOTS;
        unsigned char tag = (unsigned char)k;
        if (slot[k]) {
            if (!intact(slot[k], size[k], tag))
                __atomic_store_n(&bad, 1, __ATOMIC_RELAXED);
            if (next(&x) % 4 == 0) {
                size_t n = 1 + next(&x) % 2000;
                unsigned char *q = realloc(slot[k], n);
                if (!q)
                    continue;
                fill(q, n, tag);
                slot[k] = q;
                size[k] = n;
                continue;
            }
            free(slot[k]);
            slot[k] = NULL;
        } else {
            size_t n = 1 + next(&x) % 600;
            slot[k] = (next(&x) & 1) ? malloc(n) : calloc(1, n);
            if (!slot[k])
                continue;
            fill(slot[k], n, tag);
            size[k] = n;
        }
    }
    for (size_t k = 0; k < SLOTS; k++)
        free(slot[k]);
}

static void *worker(void *arg)
{
    churn((uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1, OPS);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)(i + 1));
    int failed_children = 0;
    for (int f = 0; f < FORKS; f++) {
        pid_t pid = fork();
        if (pid == 0) {
            churn(1000 + (uint64_t)f, 20000);
            exit(bad ? 1 : 0);
        }
        int status;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
            failed_children++;
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("stress_fork: %d forks, %d failed children, %s\n", FORKS, failed_children,
           bad ? "corrupted blocks" : "all blocks intact");
    return failed_children || bad ? 1 : 0;
}
