/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A program started without memtrace that gets SIGUSR1 every millisecond
 * (a POSIX timer) while `memtrace attach` and `memtrace detach` work on
 * it (tests/e2e/attach.sh). The handler counts its calls
 * and does some work with each: acc is the sum of mix(n) over every n it
 * counted, which main checks at the end (a handler run twice, or a call
 * cut short, breaks the sum). The signal lands in the main thread, which
 * waits in nanosleep: the thread gdb calls into the process from. A
 * second thread (the signal blocked) allocates and frees meanwhile.
 *
 *   trust_attach_signals DIR
 *
 * Prints "@@ before ADDR", then, once DIR/go exists, "@@ after ADDR" (a
 * block allocated then: trust-attach-after); once DIR/stop exists, stops
 * the timer and the thread and prints the same lines on every run, with
 * status 7 (1 when something was found wrong). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *dir;
static volatile sig_atomic_t hits;
static volatile uint64_t acc;
static atomic_int stop;

static uint64_t mix(uint64_t n)
{
    uint64_t x = n * 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 200; i++)
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
}

static void on_usr1(int sig)
{
    (void)sig;
    int saved = errno;
    uint64_t n = (uint64_t)hits + 1;
    acc += mix(n);
    hits = (sig_atomic_t)n;
    errno = saved;
}

static void *churn(void *arg)
{
    (void)arg;
    /* The handler's sums are main's alone: two threads in it at once
     * would race. */
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &usr1, NULL);
    void *slot[32] = { 0 };
    uint32_t x = 2463534242u;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        int i = (int)(x % 32);
        free(slot[i]);
        slot[i] = malloc(1 + (x >> 8) % 300);
        if (slot[i])
            memset(slot[i], 1, 1);
        if ((x & 255) == 0)
            usleep(100);
    }
    for (int i = 0; i < 32; i++)
        free(slot[i]);
    return NULL;
}

/* Waits in nanosleep, which the signal cuts short again and again. */
static void wait_for(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct timespec ts = { 0, 5 * 1000 * 1000 };
    while (access(path, F_OK) != 0)
        nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    dir = argv[1];
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, NULL) != 0)
        return 2;
    timer_t timer;
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = SIGUSR1;
    if (timer_create(CLOCK_MONOTONIC, &ev, &timer) != 0)
        return 2;
    struct itimerspec every_ms = { { 0, 1000 * 1000 }, { 0, 1000 * 1000 } };
    if (timer_settime(timer, 0, &every_ms, NULL) != 0)
        return 2;
    pthread_t t;
    if (pthread_create(&t, NULL, churn, NULL) != 0)
        return 2;
    void *before = malloc(100); /* SITE:trust-attach-before */
    printf("@@ before %p\n", before);
    fflush(stdout);
    wait_for("go");
    void *after = malloc(123); /* SITE:trust-attach-after */
    printf("@@ after %p\n", after);
    fflush(stdout);
    wait_for("stop");
    struct itimerspec off = { { 0, 0 }, { 0, 0 } };
    timer_settime(timer, 0, &off, NULL);
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    free(before);
    free(after);
    /* Blocked: no call of the handler from here on changes what is read. */
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, NULL);
    uint64_t n = (uint64_t)hits, want = 0;
    for (uint64_t i = 1; i <= n; i++)
        want += mix(i);
    int ok = n >= 10 && acc == want;
    printf("handler: %s\n", n >= 10 ? "called" : "hardly called");
    printf("handler: its work %s\n", acc == want ? "intact" : "NOT intact");
    return ok ? 7 : 1;
}
