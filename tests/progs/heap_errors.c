/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Heap errors under memtrace (tests/e2e/heap_errors.sh), and the same
 * program built with -fsanitize=address as the oracle: each case makes
 * one error, at the marked sites, and the script compares what memtrace
 * and AddressSanitizer say about it (the kind, the sizes, the allocation
 * and free sites).
 *
 *   heap_errors CASE
 *
 * overflow1: 1 byte past a 100-byte block, then freed.
 * overflow_many: 40 bytes past a 100-byte block (the script sets
 *   MEMTRACE_REDZONE=64), then freed.
 * after_free: 4 bytes at offset 8 of a freed 64-byte block, then enough
 *   frees to push it out of the quarantine.
 * realloc: 3 bytes past a 50-byte block, then realloc'ed.
 * at_exit: 1 byte at offset 31 of a 30-byte block never freed.
 * check: memtrace_check() after 2 bytes past a 10-byte block (memtrace only).
 * aligned: 1 byte past a 100-byte aligned_alloc(64) block; prints whether
 *   the alignment and malloc_usable_size are the program's.
 * thread: a thread writes 1 byte at offset 0 of a 24-byte block it freed,
 *   then ends (its quarantine is checked as it ends).
 * fork: a forked child writes 2 bytes at offset 0 of a 48-byte block the
 *   parent freed before the fork, and exits: the child's exit check finds
 *   it (its status says so), the parent's finds nothing.
 * clean: every family, used to its last byte: no error. */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

char *g_kept;

/* Out of the compiler's sight, so that -O0 and the sanitizer see plain
 * stores at the marked lines. */
__attribute__((noinline)) static void poke(char *p, long offset, size_t n)
{
    memset(p + offset, 'x', n); /* SITE:poke */
}

static void churn(int n)
{
    for (int i = 0; i < n; i++)
        free(malloc(16));
}

static void *thread_main(void *arg)
{
    (void)arg;
    char *p = malloc(24); /* SITE:thread_alloc */
    free(p);              /* SITE:thread_free */
    poke(p, 0, 1);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "clean";
    if (!strcmp(what, "overflow1")) {
        char *p = malloc(100); /* SITE:overflow1_alloc */
        poke(p, 100, 1);       /* SITE:overflow1_write */
        free(p);               /* SITE:overflow1_free */
    } else if (!strcmp(what, "overflow_many")) {
        char *p = malloc(100); /* SITE:many_alloc */
        poke(p, 100, 40);      /* SITE:many_write */
        free(p);               /* SITE:many_free */
    } else if (!strcmp(what, "after_free")) {
        char *p = malloc(64); /* SITE:uaf_alloc */
        free(p);              /* SITE:uaf_free */
        poke(p, 8, 4);        /* SITE:uaf_write */
        churn(2000);          /* SITE:uaf_churn */
    } else if (!strcmp(what, "realloc")) {
        char *p = malloc(50); /* SITE:realloc_alloc */
        poke(p, 50, 3);       /* SITE:realloc_write */
        p = realloc(p, 200);  /* SITE:realloc_call */
        free(p);
    } else if (!strcmp(what, "at_exit")) {
        g_kept = malloc(30); /* SITE:exit_alloc */
        poke(g_kept, 31, 1); /* SITE:exit_write */
    } else if (!strcmp(what, "check")) {
        int (*check)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "memtrace_check");
        char *p = malloc(10); /* SITE:check_alloc */
        poke(p, 10, 2);
        printf("heap_errors: memtrace_check() = %d\n", check ? check() : -1); /* SITE:check_call */
        printf("heap_errors: again %d\n", check ? check() : -1);
        free(p);
    } else if (!strcmp(what, "aligned")) {
        char *p = aligned_alloc(64, 100); /* SITE:aligned_alloc */
        printf("heap_errors: aligned %s, usable %zu\n", (uintptr_t)p % 64 ? "no" : "yes",
               malloc_usable_size(p));
        poke(p, 100, 1);
        free(p); /* SITE:aligned_free */
    } else if (!strcmp(what, "thread")) {
        pthread_t t;
        if (pthread_create(&t, NULL, thread_main, NULL) != 0 || pthread_join(t, NULL) != 0)
            return 3;
        puts("heap_errors: joined");
    } else if (!strcmp(what, "fork")) {
        char *p = malloc(48); /* SITE:fork_alloc */
        free(p);              /* SITE:fork_free */
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            poke(p, 0, 2);
            exit(0);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        printf("heap_errors: child status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    } else if (!strcmp(what, "clean")) {
        /* Every byte each family says is the program's: no report. */
        size_t n = 100;
        char *a = malloc(n), *b = calloc(10, 10), *c = aligned_alloc(32, 96), *d;
        if (posix_memalign((void **)&d, 128, 100) != 0)
            return 3;
        memset(a, 1, malloc_usable_size(a));
        memset(b, 1, malloc_usable_size(b));
        memset(c, 1, malloc_usable_size(c));
        memset(d, 1, malloc_usable_size(d));
        a = realloc(a, 1000);
        memset(a, 2, malloc_usable_size(a));
        free(a), free(b), free(c), free(d);
        char *r = reallocarray(NULL, 7, 9);
        memset(r, 3, 63);
        free(r);
        churn(3000);
    } else {
        return 2;
    }
    puts("heap_errors: done");
    return 0;
}
