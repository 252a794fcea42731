/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* exitstamp.so: preloaded by bench/profexit.sh. Writes the time at which
 * the program's main returned (or it called exit) into the file named by
 * EXITSTAMP: microseconds since the epoch (CLOCK_REALTIME, as bash's
 * EPOCHREALTIME reads it after waiting for the process) and the CPU time
 * the process (all its threads) had used by then, in microseconds. What
 * the process takes from there to its end is its exit's cost: the exit
 * handlers, the destructors and the kernel's teardown, with or without
 * memtrace's exit report. It wraps __libc_start_main's main, which returns before the exit
 * handlers run whatever order they were registered in, and exit itself for
 * a program that calls it (the first of the two is kept). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int (*real_main)(int, char **, char **);
static int stamped;

static void stamp(void)
{
    if (stamped++)
        return;
    struct timespec ts, cpu;
    clock_gettime(CLOCK_REALTIME, &ts);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
    const char *path = getenv("EXITSTAMP");
    if (!path)
        return;
    char buf[64];
    int n = snprintf(buf, sizeof buf, "%lld %lld\n",
                     (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000,
                     (long long)cpu.tv_sec * 1000000 + cpu.tv_nsec / 1000);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        if (write(fd, buf, (size_t)n) != n)
            unlink(path);
        close(fd);
    }
}

static int wrapped_main(int argc, char **argv, char **envp)
{
    int status = real_main(argc, argv, envp);
    stamp();
    return status;
}

void exit(int status)
{
    static void (*real_exit)(int);
    stamp();
    if (!real_exit)
        real_exit = (void (*)(int))dlsym(RTLD_NEXT, "exit");
    real_exit(status);
    __builtin_unreachable();
}

int __libc_start_main(int (*main)(int, char **, char **), int argc, char **argv,
                      void (*init)(void), void (*fini)(void), void (*rtld_fini)(void),
                      void *stack_end)
{
    int (*real)(int (*)(int, char **, char **), int, char **, void (*)(void), void (*)(void),
                void (*)(void), void *) = dlsym(RTLD_NEXT, "__libc_start_main");
    real_main = main;
    return real(wrapped_main, argc, argv, init, fini, rtld_fini, stack_end);
}
