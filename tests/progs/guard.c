/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Heap errors the guard pages catch (tests/e2e/guard.sh), one case per
 * run, named by argv[1]; built as is and with -fsanitize=address (the
 * oracle: the same errors at the same sites). Under memtrace with
 * MEMTRACE_GUARD_SAMPLE=1 a thread's sampled blocks alternate between the
 * end of their page (right-aligned) and its start (left-aligned): block()
 * asks again, at most 3 more times, until it gets the placement its case
 * needs; under ASan the first block is as good as any. A write that
 * lands in the rest of a block's page faults on nothing: it is found when
 * the block is freed. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile char sink;

/* A block of SIZE bytes that starts a page when LEFT (so that an access
 * before it faults), else one that does not. */
static __attribute__((noinline)) char *block(size_t size, int left)
{
    char *p = malloc(size); /* SITE:block */
    for (int tries = 0; tries < 3 && (((uintptr_t)p & 4095) == 0) != left; tries++) {
        free(p);
        p = malloc(size); /* SITE:block_again */
    }
    memset(p, 'x', size);
    return p;
}

static __attribute__((noinline)) void read_at(char *p, long i)
{
    sink = p[i]; /* SITE:read */
}

static __attribute__((noinline)) void write_at(char *p, long i)
{
    p[i] = 'y'; /* SITE:write */
}

/* A 64-byte block freed, then written at offset 8: the cases that check
 * where the fault goes after its report. */
static void write_after_free(void)
{
    char *p = block(64, 0);
    free(p);
    write_at(p, 8);
}

static void *freer(void *p)
{
    pthread_setname_np(pthread_self(), "gw-freer");
    free(p); /* SITE:free_thread */
    return NULL;
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    static const char msg[] = "guard: the program's own SIGSEGV handler ran\n";
    (void)si;
    if (write(1, msg, sizeof msg - 1) < 0)
        _exit(2);
    _exit(42);
}

static void on_segv_plain(int sig)
{
    (void)sig;
    static const char msg[] = "guard: the program's signal() handler ran\n";
    if (write(1, msg, sizeof msg - 1) < 0)
        _exit(2);
    _exit(43);
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "";
    setvbuf(stdout, NULL, _IONBF, 0);
    if (strcmp(c, "overflow") == 0) {
        char *p = block(64, 0);
        read_at(p, 64);
    } else if (strcmp(c, "overflow_far") == 0) {
        char *p = block(128, 0);
        write_at(p, 130);
    } else if (strcmp(c, "underflow") == 0) {
        char *p = block(64, 1);
        read_at(p, -1);
    } else if (strcmp(c, "uaf_read") == 0) {
        char *p = block(64, 0);
        free(p); /* SITE:free_read */
        read_at(p, 8);
    } else if (strcmp(c, "uaf_write") == 0) {
        char *p = block(64, 0);
        free(p); /* SITE:free_write */
        write_at(p, 8);
    } else if (strcmp(c, "slack") == 0 || strcmp(c, "slack_left") == 0) {
        /* 1 byte past a 100-byte block: in the padding of its page (16-byte
         * alignment) or, left-aligned, in the rest of its page; found at
         * its free. */
        char *p = block(100, c[5] == '_');
        write_at(p, 100);
        free(p); /* SITE:free_slack */
        printf("guard: went on\n");
    } else if (strcmp(c, "thread") == 0) {
        /* Freed by another thread, named: its name and number in the report. */
        char *p = block(64, 0);
        pthread_t t;
        pthread_create(&t, NULL, freer, p);
        pthread_join(t, NULL);
        read_at(p, 16);
    } else if (strcmp(c, "handler") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_segv;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGSEGV, &sa, NULL);
        struct sigaction back;
        sigaction(SIGSEGV, NULL, &back);
        if (back.sa_sigaction != on_segv)
            return 3; /* the program must read back its own action */
        char *p = block(64, 0);
        read_at(p, 64);
    } else if (strcmp(c, "signal") == 0) {
        signal(SIGSEGV, on_segv_plain);
        char *p = block(64, 0);
        free(p); /* SITE:free_signal */
        write_at(p, 8);
    } else if (strcmp(c, "bsd_signal") == 0 || strcmp(c, "sysv_signal") == 0 ||
               strcmp(c, "iso_signal") == 0) {
        /* signal's other names: the last is what signal() is in strict
         * ISO C (-std=c11: glibc's signal.h redirects it). */
        extern __sighandler_t bsd_signal(int, __sighandler_t);
        if (c[0] == 'b')
            bsd_signal(SIGSEGV, on_segv_plain);
        else if (c[0] == 's')
            sysv_signal(SIGSEGV, on_segv_plain);
        else
            __sysv_signal(SIGSEGV, on_segv_plain);
        write_after_free();
    } else if (strcmp(c, "sigset") == 0) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* the point: old programs call them */
        /* SysV's: libc's own sets the action with its internal sigaction,
         * past any interposition. The answer is the action replaced. */
        extern __sighandler_t sigset(int, __sighandler_t);
        if (sigset(SIGSEGV, on_segv_plain) != SIG_DFL || sigset(SIGSEGV, on_segv_plain) != on_segv_plain)
            return 7;
        write_after_free();
    } else if (strcmp(c, "sigignore") == 0) {
        /* SIG_IGN: the kernel does not honour it for a fault; the default
         * action ends the process, as without memtrace. */
        extern int sigignore(int);
        if (sigignore(SIGSEGV) != 0)
            return 8;
#pragma GCC diagnostic pop
        write_after_free();
    } else if (strcmp(c, "double_free") == 0) {
        /* glibc aborts on the second free (tcache's double free check). */
        char *p = block(64, 0);
        free(p); /* SITE:guard_first_free */
        free(p); /* SITE:guard_double_free */
        printf("guard: went on\n");
    } else if (strcmp(c, "api") == 0) {
        /* No error: the pool's blocks behave as the allocator's. */
        char *p = block(100, 0);
        if (malloc_usable_size(p) < 100 || ((uintptr_t)p & 15) != 0)
            return 4;
        p = realloc(p, 3000);
        for (int i = 0; i < 100; i++)
            if (p[i] != 'x')
                return 5;
        free(p);
        int *z = calloc(500, sizeof(int));
        for (int i = 0; i < 500; i++)
            if (z[i] != 0)
                return 6;
        free(z);
        void *a = NULL;
        if (posix_memalign(&a, 256, 200) != 0 || ((uintptr_t)a & 255) != 0)
            return 7;
        free(a);
        char *b = aligned_alloc(64, 128);
        if (!b || ((uintptr_t)b & 63) != 0)
            return 8;
        free(b);
        char *s = malloc(3);
        free(s);
        printf("guard: api ok\n");
    } else {
        fprintf(stderr, "usage: guard CASE\n");
        return 2;
    }
    return 0;
}
