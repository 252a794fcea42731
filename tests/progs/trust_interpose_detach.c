/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A program started without memtrace for `memtrace attach` (or preloaded,
 * mode "off"), driven by files in DIR:
 *
 *   trust_interpose_detach MODE DIR
 *
 * Prints "@@ ready" and waits for DIR/attached, then:
 *   usable  allocates a 13-byte block and frees 4 MiB of 16 KiB blocks
 *           (the quarantine holds them), prints "@@ attached-done" and
 *           waits for DIR/detached; then writes the block up to its
 *           malloc_usable_size (as Redis's sds does), frees it and one
 *           more, and prints "usable N" and whether the allocator still
 *           has the 4 MiB in use ("in use: released" or "in use: N KiB
 *           more"; glibc's count, mallinfo2).
 *   off     as usable's 4 MiB, but preloaded: no wait; then
 *           memtrace_set_recording(0) and a free, and the same in-use line.
 *   atexit  registers an atexit handler and has a destructor (each prints
 *           a line); attached, writes one byte past a 13-byte block and
 *           frees it (a heap error), prints "@@ attached-done", returns 0.
 * Exits 0 (the heap error's status aside). */
#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *dir;

static void wait_for(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct timespec ts = { 0, 20 * 1000 * 1000 };
    for (int i = 0; i < 3000 && access(path, F_OK) != 0; i++) /* 60 s at most */
        nanosleep(&ts, NULL);
}

static size_t in_use(void)
{
    return mallinfo2().uordblks;
}

/* 4 MiB of 16 KiB blocks allocated and freed. */
static void churn(void)
{
    for (int i = 0; i < 256; i++) {
        void *p = malloc(16384);
        memset(p, i, 16384);
        free(p);
    }
}

static void say_in_use(size_t before)
{
    size_t now = in_use();
    if (now < before + 1024 * 1024)
        printf("in use: released\n");
    else
        printf("in use: %zu KiB more\n", (now - before) / 1024);
}

static void at_exit_handler(void)
{
    printf("atexit ran\n");
}

__attribute__((destructor)) static void destructor(void)
{
    printf("destructor ran\n");
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    dir = argv[2];
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *mode = argv[1];
    if (strcmp(mode, "atexit") == 0)
        atexit(at_exit_handler);
    size_t before = in_use();
    if (strcmp(mode, "off") == 0) {
        churn();
        int (*set)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "memtrace_set_recording");
        if (!set)
            return 3;
        set(0);
        free(malloc(32));
        say_in_use(before);
        return 0;
    }
    printf("@@ ready\n");
    wait_for("attached");
    if (strcmp(mode, "usable") == 0) {
        char *p = malloc(13);
        churn();
        printf("@@ attached-done\n");
        wait_for("detached");
        size_t n = malloc_usable_size(p);
        memset(p, 'x', n);
        free(p);
        free(malloc(32));
        printf("usable %zu\n", n);
        say_in_use(before);
    } else if (strcmp(mode, "atexit") == 0) {
        char *volatile p = malloc(13);
        p[13] = 1;
        free(p);
        printf("@@ attached-done\n");
    }
    return 0;
}
