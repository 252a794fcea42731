/* The profiler against programs that do unusual things with threads,
 * descriptors, argv and environment, for tests/e2e/profiler.sh. Reports are
 * asked for with memtrace_report (found with dlsym). Every mode exits 0
 * when the program itself saw what it expected.
 *
 *   profile_corners cancel   a thread blocked inside memtrace_report (its
 *                            MEMTRACE_OUTPUT is a FIFO nobody reads yet) is
 *                            cancelled; the program then exits */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void (*report)(void);

static void ask_report(void)
{
    if (report)
        report();
}

static void *cancelled_main(void *arg)
{
    (void)arg;
    ask_report();
    for (;;)
        pause(); /* a cancellation point: the pending cancel lands here */
    return NULL;
}

/* The thread blocks in the report's open of the FIFO; the cancel comes
 * while it waits there. A report that can be cancelled mid-way leaves its
 * lock held and the exit report waits for it forever. */
static int cancel_case(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, cancelled_main, NULL) != 0)
        return 2;
    usleep(300000);
    pthread_cancel(t);
    void *res;
    pthread_join(t, &res);
    return res == PTHREAD_CANCELED ? 0 : 3;
}

int main(int argc, char **argv)
{
    report = (void (*)(void))dlsym(RTLD_DEFAULT, "memtrace_report");
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "cancel") == 0)
        return cancel_case();
    return 64;
}
