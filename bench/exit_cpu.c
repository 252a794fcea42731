/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* exit_cpu.so: the CPU time of the exit handlers that one library
 * registered, for bench/clang.sh. Preloaded after the profiler
 * (LD_PRELOAD="PROFILER exit_cpu.so"), it stands in for __cxa_atexit
 * (which atexit calls): a handler whose code lies in the file named by
 * EXIT_CPU_LIB is registered through a trampoline that reads the
 * process's CPU clock before and after it and appends "SECONDS\n" to
 * EXIT_CPU_OUT. Everything else is passed on unchanged.
 *
 * The profiler's exit report runs in such a handler, in the thread that
 * exits, with the other threads still running but idle (the workload is
 * done): its CPU is the report's, whatever else loads the machine. No
 * allocation here (the profiler is the allocator's wrapper). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int (*cxa_atexit_fn)(void (*)(void *), void *, void *);

enum { SLOTS = 8 };
static struct {
    void (*fn)(void *);
    void *arg;
} slot[SLOTS];
static int nslots;

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void timed(void *p)
{
    int i = (int)(long)p;
    double t0 = cpu_now();
    slot[i].fn(slot[i].arg);
    double t = cpu_now() - t0;
    const char *out = getenv("EXIT_CPU_OUT");
    int fd = out ? open(out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;
    if (fd >= 0) {
        char line[64];
        int n = snprintf(line, sizeof line, "%.6f\n", t);
        if (n > 0 && write(fd, line, (size_t)n) < 0)
            n = 0;
        close(fd);
    }
}

/* Whether FN's code is in the file whose name ends with EXIT_CPU_LIB. */
static int watched(void (*fn)(void *))
{
    const char *lib = getenv("EXIT_CPU_LIB");
    Dl_info info;
    if (!lib || !dladdr((void *)fn, &info) || !info.dli_fname)
        return 0;
    size_t n = strlen(info.dli_fname), m = strlen(lib);
    return n >= m && strcmp(info.dli_fname + n - m, lib) == 0;
}

int __cxa_atexit(void (*fn)(void *), void *arg, void *dso)
{
    static cxa_atexit_fn real;
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "__cxa_atexit");
    if (!real)
        return -1;
    if (nslots < SLOTS && watched(fn)) {
        int i = nslots++;
        slot[i].fn = fn;
        slot[i].arg = arg;
        return real(timed, (void *)(long)i, dso);
    }
    return real(fn, arg, dso);
}
