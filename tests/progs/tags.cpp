/* SPDX-License-Identifier: LGPL-2.1-or-later */
// Tag scopes (tests/e2e/tags.sh): known allocations per scope and thread,
// built without -lmemtrace (the header's weak declarations), so that it
// runs as is and under LD_PRELOAD. Every count below is what the suite
// expects in PATH.json; nothing else allocates inside a scope.
//
// main       main_work: 3 x 100 bytes, 1 freed; main_work/parse: 2 x 1000,
//            and malloc(10) resized to 5000 (the old block freed)
// "alpha"    io: 4 x 50 (2 of them freed by main after the join: frees
//            from another thread); io/read: 1 x 7
// "beta"     io: 3 x new char[60], 1 deleted (the C++ RAII scope)
//
// `tags cache` checks that the push cache (tags.h) is only a hint: one
// buffer pushed as "a" (11 bytes) and, rewritten, as "b" (13 bytes) under
// the same node, so at the same address in the same cache slot, must reach
// two nodes; 100 parents p0 .. p99 (one buffer again) each enter "c" and
// allocate i + 1 bytes there, twice round: 100 (parent, "c") pairs share
// the cache's 64 slots, so the second round finds other parents' c's in
// some slots and must still count in each parent's own c.
//
// `tags bad` makes the refused calls instead and prints their results;
// `tags report` asks the profiler for a report at checkpoint() (through
// dlsym: the program is not linked with memtrace).
#include "memtrace.h"

#include <dlfcn.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *handed[2]; // alpha's blocks main frees
static void *kept[16];
static int nkept;

extern "C" void checkpoint(void) // gdb's breakpoint: every count is final
{
    __asm__ volatile("" ::: "memory");
}

static void *alpha(void *)
{
    pthread_setname_np(pthread_self(), "alpha");
    memtrace_tag_push("io");
    handed[0] = malloc(50);
    handed[1] = malloc(50);
    kept[nkept++] = malloc(50);
    kept[nkept++] = malloc(50);
    memtrace_tag_push("read");
    kept[nkept++] = malloc(7);
    memtrace_tag_pop();
    memtrace_tag_pop();
    return NULL;
}

static void *beta(void *)
{
    pthread_setname_np(pthread_self(), "beta");
    {
        memtrace::tag_scope scope("io");
        char *a = new char[60], *b = new char[60], *c = new char[60];
        delete[] b;
        kept[nkept++] = a;
        kept[nkept++] = c;
    }
    return NULL;
}

static int bad(void)
{
    char longname[64];
    memset(longname, 'x', 48);
    longname[48] = '\0';
    printf("pop-empty %d\n", memtrace_tag_pop());
    printf("push-null %d\n", memtrace_tag_push(NULL));
    printf("push-empty %d\n", memtrace_tag_push(""));
    printf("push-long %d\n", memtrace_tag_push(longname));
    longname[47] = '\0';
    printf("push-47 %d\n", memtrace_tag_push(longname));
    printf("pop-47 %d\n", memtrace_tag_pop());
    int deep = 0;
    while (deep < 100 && memtrace_tag_push("d") == 0)
        deep++;
    printf("deep %d\n", deep);
    int popped = 0;
    while (popped < 100 && memtrace_tag_pop() == 0)
        popped++;
    printf("popped %d\n", popped);
    return 0;
}

static void *blocks[2 + 2 * 100]; // cache()'s, kept to the end

static int cache(void)
{
    int n = 0;
    char buf[8] = "a";
    memtrace_tag_push(buf);
    blocks[n++] = malloc(11);
    memtrace_tag_pop();
    buf[0] = 'b';
    memtrace_tag_push(buf);
    blocks[n++] = malloc(13);
    memtrace_tag_pop();
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 100; i++) {
            snprintf(buf, sizeof buf, "p%d", i);
            memtrace_tag_push(buf);
            memtrace_tag_push("c");
            blocks[n++] = malloc(i + 1);
            memtrace_tag_pop();
            memtrace_tag_pop();
        }
    printf("cache %d\n", n);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "bad") == 0)
        return bad();
    if (argc > 1 && strcmp(argv[1], "cache") == 0)
        return cache();
    pthread_t t;
    pthread_create(&t, NULL, alpha, NULL);
    pthread_join(t, NULL);
    pthread_create(&t, NULL, beta, NULL);
    pthread_join(t, NULL);
    if (memtrace_tag_push("main_work") != 0)
        return 1;
    void *a = malloc(100);
    kept[nkept++] = malloc(100);
    kept[nkept++] = malloc(100);
    free(a);
    memtrace_tag_push("parse");
    kept[nkept++] = malloc(1000);
    kept[nkept++] = malloc(1000);
    void *r = malloc(10);
    kept[nkept++] = realloc(r, 5000);
    memtrace_tag_pop();
    memtrace_tag_pop();
    free(handed[0]);
    free(handed[1]);
    checkpoint();
    if (argc > 1 && strcmp(argv[1], "report") == 0) {
        void (*report)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "memtrace_report");
        if (report)
            report();
    }
    printf("done %d\n", nkept);
    return 0;
}
