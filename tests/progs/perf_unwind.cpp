/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* perf_unwind: stacks that fool an unwinder reusing its thread's last walk
 * (the cfi unwinder's memo, src/capture/capture_cfi.c). Each mode makes
 * many allocations whose consecutive stacks share frames' places with the
 * last one but not what lies above them, then prints "@@ NAME" and
 * print_trace of a few known blocks on stderr, whose frames
 * tests/e2e/perf_unwind.sh compares with the SITE: lines below.
 *   twosites    mid() called from two sites of one caller, at one depth:
 *               leaf's and mid's frames are the same, the caller's return
 *               address differs;
 *   exceptions  blocks allocated in frames a C++ exception then unwinds,
 *               then at the same depth through other functions;
 *   longjmp     an allocation at the bottom of a recursion left by
 *               longjmp, then one at the top;
 *   coro        swapcontext coroutines allocating on their own stacks (one
 *               mapped, one an array in a frame of the thread's stack) and
 *               switching back to the thread's, which allocates;
 *   signal      a timer's signal handler that allocates, interrupting a
 *               loop that allocates at several depths;
 *   threads     four threads alternating two call sites at one depth;
 *   vla         a frame whose size varies (a VLA: its CFA from rbp)
 *               between two callers whose frames differ in size.
 * Exits 0, or 2 when a premise does not hold. */
#include "memtrace.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <ucontext.h>

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")

static void mark(const char *name, const void *p)
{
    fprintf(stderr, "@@ %s\n", name);
    fflush(stderr);
    print_trace(p);
}

NOINLINE static void *leaf(size_t n)
{
    void *p = malloc(n); // SITE:leaf
    BARRIER();
    return p;
}

NOINLINE static void *mid(size_t n)
{
    void *p = leaf(n); // SITE:mid
    BARRIER();
    return p;
}

/* ---- twosites */
NOINLINE static void twosites(void)
{
    void *a = NULL, *b = NULL;
    for (int i = 0; i < 2000; i++) {
        free(a);
        free(b);
        a = mid(24); // SITE:site_a
        b = mid(24); // SITE:site_b
    }
    mark("twosites_a", a);
    mark("twosites_b", b);
    free(a);
    free(b);
}

/* ---- exceptions */
enum { THROW_DEPTH = 20 };
static void *thrown[THROW_DEPTH + 1];

NOINLINE static void thrower(int d)
{
    thrown[d] = malloc(16); // SITE:thr_alloc
    if (d == 0)
        throw d;
    thrower(d - 1); // SITE:thr_rec
    BARRIER();
}

NOINLINE static void exceptions(void)
{
    void *q = NULL;
    for (int round = 0; round < 300; round++) {
        for (int d = 0; d <= THROW_DEPTH; d++) {
            free(thrown[d]);
            thrown[d] = NULL;
        }
        free(q);
        try {
            thrower(THROW_DEPTH); // SITE:ex_call
        } catch (int) {
        }
        q = mid(24); // SITE:ex_after
    }
    mark("exceptions_deepest", thrown[0]);
    mark("exceptions_after", q);
    for (int d = 0; d <= THROW_DEPTH; d++)
        free(thrown[d]);
    free(q);
}

/* ---- longjmp */
static jmp_buf jump;
static void *dived;

NOINLINE static void dive(int d)
{
    if (d < 0)
        return;
    if (d == 0) {
        dived = malloc(40); // SITE:dive_alloc
        longjmp(jump, 1);
    }
    dive(d - 1); // SITE:dive_rec
    BARRIER();
}

NOINLINE static void longjumps(void)
{
    void *volatile q = NULL;
    for (volatile int round = 0; round < 300; round++) {
        free(dived);
        free(q);
        if (!setjmp(jump))
            dive(30); // SITE:lj_call
        q = mid(24);  // SITE:lj_after
    }
    mark("longjmp_deep", dived);
    mark("longjmp_after", q);
    free(dived);
    free(q);
}

/* ---- coro */
static ucontext_t main_ctx, coro_ctx;
static void *coro_block;

static void coro_body(void)
{
    for (;;) {
        void *p = mid(24); // SITE:coro_alloc
        free(coro_block);
        coro_block = p;
        swapcontext(&coro_ctx, &main_ctx);
    }
}

NOINLINE static void coro_run(char *stack, size_t size, const char *name)
{
    getcontext(&coro_ctx);
    coro_ctx.uc_stack.ss_sp = stack;
    coro_ctx.uc_stack.ss_size = size;
    coro_ctx.uc_link = &main_ctx;
    makecontext(&coro_ctx, coro_body, 0);
    void *q = NULL;
    for (int i = 0; i < 1000; i++) {
        swapcontext(&main_ctx, &coro_ctx);
        free(q);
        q = mid(24); // SITE:coro_main
    }
    char label[64];
    snprintf(label, sizeof label, "coro_%s_inside", name);
    mark(label, coro_block);
    snprintf(label, sizeof label, "coro_%s_outside", name);
    mark(label, q);
    free(q);
    free(coro_block);
    coro_block = NULL;
}

NOINLINE static void coro_on_thread_stack(void)
{
    char stack[256 * 1024];
    coro_run(stack, sizeof stack, "array"); // SITE:coro_array
}

NOINLINE static void coros(void)
{
    size_t size = 256 * 1024;
    char *stack = (char *)malloc(size);
    coro_run(stack, size, "mapped"); // SITE:coro_mapped
    free(stack);
    coro_on_thread_stack(); // SITE:coro_array_call
}

/* ---- signal */
static volatile sig_atomic_t in_malloc;
static void *volatile handled;
static volatile int handled_count;

static void on_alarm(int sig)
{
    (void)sig;
    if (in_malloc || handled)
        return;        /* glibc's malloc is not re-entrant */
    handled = mid(24); // SITE:sig_alloc
    handled_count = handled_count + 1;
}

NOINLINE static void *deeper(int d)
{
    if (d == 0) {
        in_malloc = 1;
        void *p = mid(32);
        in_malloc = 0;
        return p;
    }
    void *p = deeper(d - 1);
    BARRIER();
    return p;
}

NOINLINE static void signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = { { 0, 200 }, { 0, 200 } };
    setitimer(ITIMER_REAL, &it, NULL);
    int seen = 0;
    for (int i = 0; i < 200000; i++) {
        void *p = deeper(i % 7);
        in_malloc = 1;
        free(p);
        in_malloc = 0;
        if (handled) {
            seen++;
            if (seen < 20) {
                void *h = handled;
                in_malloc = 1;
                handled = NULL;
                free(h);
                in_malloc = 0;
            }
        }
    }
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, NULL);
    if (!handled)
        raise(SIGALRM); /* no tick came at a good moment: one now */
    mark("signal_handler", handled);
    free(handled);
}

/* ---- threads */
static void *thread_blocks[4][2];

static void *thread_body(void *arg)
{
    void **mine = (void **)arg, *a = NULL, *b = NULL;
    for (int i = 0; i < 20000; i++) {
        free(a);
        free(b);
        a = mid(24); // SITE:thr_a
        b = mid(24); // SITE:thr_b
    }
    mine[0] = a;
    mine[1] = b;
    return NULL;
}

NOINLINE static void threads(void)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, thread_body, thread_blocks[i]);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 4; i++) {
        char label[32];
        snprintf(label, sizeof label, "thread%d_a", i);
        mark(label, thread_blocks[i][0]);
        snprintf(label, sizeof label, "thread%d_b", i);
        mark(label, thread_blocks[i][1]);
        free(thread_blocks[i][0]);
        free(thread_blocks[i][1]);
    }
}

/* ---- vla */
NOINLINE static void *with_vla(int n)
{
    char room[n];
    __asm__ volatile("" : : "r"(room) : "memory"); /* the VLA stays */
    void *p = mid(24);                             // SITE:vla_call
    BARRIER();
    return p;
}

NOINLINE static void *vla_small(void)
{
    char pad[16];
    __asm__ volatile("" : : "r"(pad) : "memory");
    void *p = with_vla(64); // SITE:vla_a
    BARRIER();
    return p;
}

NOINLINE static void *vla_big(void)
{
    char pad[64];
    __asm__ volatile("" : : "r"(pad) : "memory");
    void *p = with_vla(16); // SITE:vla_b
    BARRIER();
    return p;
}

NOINLINE static void vlas(void)
{
    void *a = NULL, *b = NULL;
    for (int i = 0; i < 2000; i++) {
        free(a);
        free(b);
        a = vla_small(); // SITE:vla_small
        b = vla_big();   // SITE:vla_big
    }
    mark("vla_a", a);
    mark("vla_b", b);
    free(a);
    free(b);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "twosites"))
        twosites(); // SITE:main_twosites
    else if (!strcmp(mode, "exceptions"))
        exceptions(); // SITE:main_exceptions
    else if (!strcmp(mode, "longjmp"))
        longjumps(); // SITE:main_longjmp
    else if (!strcmp(mode, "coro"))
        coros(); // SITE:main_coro
    else if (!strcmp(mode, "signal"))
        signals(); // SITE:main_signal
    else if (!strcmp(mode, "threads"))
        threads();
    else if (!strcmp(mode, "vla"))
        vlas(); // SITE:main_vla
    else {
        fprintf(stderr, "usage: perf_unwind twosites|exceptions|longjmp|coro|signal|threads|vla\n");
        return 2;
    }
    return 0;
}
