/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lookup: the cost of print_trace in a big process, and the heap to measure
 * metadata per block against.
 *
 *   lookup hold   allocate 1,000,000 blocks of 32 bytes, write each, exit
 *   lookup leaks  the same, then lose every other block and stop in
 *                 checkpoint(), where run.sh writes a core file for
 *                 `memtrace leaks` to read
 *   lookup probe  say whether print_trace is there (memtrace preloaded)
 *   lookup        the same, then time print_trace: the first call and the
 *                 median of 20 later calls (each on another block)
 *
 * print_trace is found with dlsym(RTLD_DEFAULT), so this program links
 * nothing of memtrace; it is linked against a dozen ordinary shared libraries
 * (see bench.mk) because symbolizing has to read every loaded module. The
 * output of print_trace goes to /dev/null while it is timed. */
#define _GNU_SOURCE
#include "../include/memtrace.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { BLOCKS = 1000000, LATER = 20 };

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int count_module(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)info;
    (void)size;
    ++*(int *)data;
    return 0;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One print_trace call with fd 2 pointed at /dev/null; returns milliseconds. */
static double timed_call(void (*print_trace)(const void *), const void *p, int devnull)
{
    int saved = dup(2);
    dup2(devnull, 2);
    double t0 = now_ms();
    print_trace(p);
    double t = now_ms() - t0;
    dup2(saved, 2);
    close(saved);
    return t;
}

__attribute__((noinline)) static char *allocate_block(void)
{
    char *p = malloc(32);
    __asm__ volatile("" ::: "memory");
    return p;
}

/* Where run.sh's gdb stops `lookup leaks` to write its core file. */
__attribute__((noinline)) void checkpoint(char **block);
__attribute__((noinline)) void checkpoint(char **block)
{
    __asm__ volatile("" : : "r"(block) : "memory");
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "probe") == 0) {
        /* for run.sh: is memtrace preloaded and complete? */
        printf("lookup: print_trace %s\n",
               dlsym(RTLD_DEFAULT, "print_trace") ? "found" : "missing");
        return 0;
    }
    char **block = malloc(BLOCKS * sizeof *block);
    if (!block)
        return 1;
    for (int i = 0; i < BLOCKS; i++) {
        block[i] = allocate_block();
        if (!block[i])
            return 1;
        memset(block[i], i, 32);
    }
    if (argc > 1 && strcmp(argv[1], "leaks") == 0) {
        /* Half lost, half still reachable through BLOCK: the scan reads
         * every block, the report groups 500,000 lost ones. */
        for (int i = 0; i < BLOCKS; i += 2)
            block[i] = NULL;
        checkpoint(block);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "hold") == 0) {
        printf("lookup: holding %d blocks of 32 bytes\n", BLOCKS);
        /* memtrace's own count of what it mapped, when it is preloaded */
        void (*stats)(struct memtrace_stats *) =
            (void (*)(struct memtrace_stats *))dlsym(RTLD_DEFAULT, "memtrace_get_stats");
        if (stats) {
            struct memtrace_stats st;
            stats(&st);
            printf("live_blocks=%lu metadata_bytes=%lu\n", st.live_blocks, st.metadata_bytes);
        }
        return 0;
    }

    int modules = 0;
    dl_iterate_phdr(count_module, &modules);
    void (*print_trace)(const void *) =
        (void (*)(const void *))dlsym(RTLD_DEFAULT, "print_trace");
    if (!print_trace) {
        printf("lookup: print_trace not found (memtrace not preloaded); %d modules\n",
               modules);
        return 3;
    }
    int devnull = open("/dev/null", O_WRONLY);
    double first = timed_call(print_trace, block[BLOCKS / 2], devnull);
    double later[LATER];
    for (int i = 0; i < LATER; i++)
        later[i] = timed_call(print_trace, block[(i * 49999L) % BLOCKS], devnull);
    qsort(later, LATER, sizeof later[0], by_value);
    printf("modules=%d first_ms=%.3f later_median_ms=%.3f later_max_ms=%.3f\n",
           modules, first, (later[LATER / 2 - 1] + later[LATER / 2]) / 2,
           later[LATER - 1]);
    return 0;
}
