/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Known call sites holding known bytes, for tests/e2e/profiler.sh. Each site
 * is one noinline function whose malloc line is marked "SITE:<name>"; the
 * test reads the line numbers from here. Reports are asked for with
 * memtrace_report (found with dlsym, so the program also runs without
 * memtrace) at fixed points, so the exact numbers do not depend on timing.
 * The program writes nothing itself (stdio would allocate).
 *
 *   profile_sites demand     three reports with known contents, then leaks
 *   profile_sites periodic   5 changes 400 ms apart, then 1 s of quiet
 *   profile_sites threads    8 threads churn a site, then one report
 *   profile_sites handover   threads end, later ones take over their counts
 *                            and free their blocks, then one report
 *   profile_sites fork       parent and child each report their own heap
 *   profile_sites signal F   raises MEMTRACE_SIGNAL, waits for "signal" in F */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void (*report)(void);

__attribute__((noinline)) static void *alloc_big(size_t n)
{
    return malloc(n); /* SITE:big */
}

__attribute__((noinline)) static void *alloc_mid(size_t n)
{
    return malloc(n); /* SITE:mid */
}

__attribute__((noinline)) static void *alloc_small(size_t n)
{
    return malloc(n); /* SITE:small */
}

__attribute__((noinline)) static void *alloc_leak(size_t n)
{
    return malloc(n); /* SITE:leak */
}

__attribute__((noinline)) static void *alloc_thread(size_t n)
{
    return malloc(n); /* SITE:thread */
}

__attribute__((noinline)) static void *alloc_handover(size_t n)
{
    return malloc(n); /* SITE:handover */
}

__attribute__((noinline)) static void *alloc_child(size_t n)
{
    return malloc(n); /* SITE:child */
}

static void ask_report(void)
{
    if (report)
        report();
}

/* Report 1: big 120000/3, mid 20000/4, small 1000/10 (peak 141000).
 * Report 2: big 40000/1 (2 freed), mid 50000/10 (6 more), small unchanged.
 * Report 3: nothing changed (an on-demand report still prints).
 * Exit: small 1000/10 and leak 1554/2 remain. */
static int demand(void)
{
    void *big[3], *mid[10], *small[10];
    /* Every site is called from one line only (a second calling line would
     * be a second stack), so the mid blocks come from one loop run twice. */
    for (int round = 0, from = 0, to = 4; round < 2; round++, from = 4, to = 10) {
        for (int i = from; i < to; i++)
            mid[i] = alloc_mid(5000);
        if (round == 1)
            break;
        for (int i = 0; i < 3; i++)
            big[i] = alloc_big(40000);
        for (int i = 0; i < 10; i++)
            small[i] = alloc_small(100);
        ask_report();
        free(big[0]);
        free(big[1]);
    }
    ask_report();
    ask_report();
    free(big[2]);
    for (int i = 0; i < 10; i++)
        free(mid[i]);
    for (int i = 0; i < 2; i++)
        alloc_leak(777);
    (void)small;
    return 0;
}

static int periodic(void)
{
    void *keep[5];
    for (int i = 0; i < 5; i++) {
        keep[i] = alloc_big(1000 * (size_t)(i + 1));
        usleep(400000);
    }
    usleep(1000000);
    for (int i = 0; i < 5; i++)
        free(keep[i]);
    return 0;
}

/* Each of 8 threads: 2000 blocks of (t+1)*16 bytes through a ring of 100,
 * so 100 stay live per thread: 8 * 100 blocks, 100 * 16 * 36 = 57600 bytes. */
static void *thread_main(void *arg)
{
    size_t size = (size_t)(long)arg * 16;
    void *ring[100] = { 0 };
    for (int i = 0; i < 2000; i++) {
        free(ring[i % 100]);
        ring[i % 100] = alloc_thread(size);
    }
    return NULL;
}

static int threads(void)
{
    pthread_t t[8];
    for (long i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, thread_main, (void *)(i + 1));
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    ask_report();
    return 0;
}

/* The profiler's per-thread counts (site.c's tables) when threads end:
 * 4 threads allocate 300 blocks of 24 bytes each and end; 4 more free
 * those (a free in another thread than the allocation's) and allocate 300
 * of 40 bytes each; then 20 threads one after another allocate one block
 * of 8 bytes each (each takes over an ended thread's table); main frees
 * 100 of the 40-byte blocks. The site: 76960 bytes in 2420 blocks
 * allocated, 32800 bytes in 1300 blocks freed, 44160 in 1120 live. */
static void *handover_blocks[8][300];

static void *handover_main(void *arg)
{
    long i = (long)arg;
    if (i >= 4 && i < 8)
        for (int k = 0; k < 300; k++)
            free(handover_blocks[i - 4][k]);
    /* One calling line: one stack. */
    int n = i < 8 ? 300 : 1;
    size_t size = i < 4 ? 24 : i < 8 ? 40 : 8;
    for (int k = 0; k < n; k++)
        *(i < 8 ? &handover_blocks[i][k] : &handover_blocks[0][i - 8]) = alloc_handover(size);
    return NULL;
}

static int handover(void)
{
    pthread_t t[4];
    for (long wave = 0; wave < 2; wave++) {
        for (long i = 0; i < 4; i++)
            pthread_create(&t[i], NULL, handover_main, (void *)(wave * 4 + i));
        for (int i = 0; i < 4; i++)
            pthread_join(t[i], NULL);
    }
    for (long i = 8; i < 28; i++) {
        pthread_create(&t[0], NULL, handover_main, (void *)i);
        pthread_join(t[0], NULL);
    }
    for (int k = 0; k < 100; k++)
        free(handover_blocks[4][k]);
    ask_report();
    return 0;
}

/* Parent: big 3 * 1000. Child: frees one of them, adds child 2 * 500,
 * reports and exits (its exit report: big 2000/2, child 1000/2). Parent,
 * after the child: reports (big 3000/3, no child site) and exits. */
static int forking(void)
{
    void *b[3];
    for (int i = 0; i < 3; i++)
        b[i] = alloc_big(1000);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        free(b[0]);
        for (int i = 0; i < 2; i++)
            alloc_child(500);
        ask_report();
        exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    ask_report();
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

static int file_has(const char *path, const char *what)
{
    static char buf[1 << 16];
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return strstr(buf, what) != NULL;
}

static int signalled(const char *path)
{
    alloc_big(4321);
    raise(SIGUSR2);
    for (int i = 0; i < 200; i++) {
        if (file_has(path, "(signal)"))
            return 0;
        usleep(50000);
    }
    return 1;
}

int main(int argc, char **argv)
{
    report = (void (*)(void))dlsym(RTLD_DEFAULT, "memtrace_report");
    const char *mode = argc > 1 ? argv[1] : "demand";
    if (strcmp(mode, "demand") == 0)
        return demand();
    if (strcmp(mode, "periodic") == 0)
        return periodic();
    if (strcmp(mode, "threads") == 0)
        return threads();
    if (strcmp(mode, "handover") == 0)
        return handover();
    if (strcmp(mode, "fork") == 0)
        return forking();
    if (strcmp(mode, "signal") == 0 && argc > 2)
        return signalled(argv[2]);
    return 2;
}
