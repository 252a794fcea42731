/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* unwind_memo: stacks that share a frame's position with the thread's last
 * stack but not what lies above it, for the cfi unwinder's memo of the
 * last walk (src/capture/capture_cfi.c), run under MEMTRACE_UNWIND=check
 * (tests/e2e/unwind_check.sh): a frame replayed from the memo that a
 * fresh walk would not find is a mismatch with libunwind.
 *   callers  leaf() called from two callers with frames of one size, in
 *            turn: leaf's frame is at the same place with the same return
 *            address, the frame above differs;
 *   alloca   the same, where the callers' frames differ in size and the
 *            function between them and leaf makes up the difference with
 *            alloca: leaf's frame and the alloca function's stack pointer
 *            and return address are the same, its rbp (and so its CFA and
 *            everything above) is not, and the words at the other call's
 *            CFA still hold what they held (alloca's bytes are never
 *            written);
 *   signal   a signal handler that allocates, raised between allocations
 *            at the same depth;
 *   longjmp  allocations at the bottom of a recursion left by longjmp,
 *            then at the same depth through other functions;
 *   threads  two threads doing callers and alloca at once.
 * Built -O0 (frame pointers, rbp-based CFA rules). Exits 2 when a premise
 * the cases rely on does not hold (the alloca case checks that leaf's
 * frame is at one place and the frames above differ), else 0. */
#include <alloca.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ROUNDS = 2000 };

static __thread uintptr_t leaf_frame; /* where leaf's last frame was */
/* Each thread's blocks, freed together after each case: leaf makes one
 * capture, so that consecutive captures are leaf's from different callers. */
enum { MAX_BLOCKS = 8192 };
static __thread void *blocks[MAX_BLOCKS];
static __thread unsigned nblocks;
static __thread char *volatile kept; /* alloca's block, never read */

static __attribute__((noinline)) void leaf(void)
{
    leaf_frame = (uintptr_t)__builtin_frame_address(0);
    if (nblocks < MAX_BLOCKS)
        blocks[nblocks++] = malloc(24);
}

/* Runs RUN, then frees the blocks it made. */
static int then_free(int (*run)(void))
{
    int rc = run();
    while (nblocks > 0)
        free(blocks[--nblocks]);
    return rc;
}

/* ---- callers: two callers, one frame size */
static __attribute__((noinline)) void caller_a(void)
{
    volatile char pad[48];
    pad[0] = 1;
    leaf();
}

static __attribute__((noinline)) void caller_b(void)
{
    volatile char pad[48];
    pad[0] = 2;
    leaf();
}

static int callers(void)
{
    uintptr_t a = 0, b = 0;
    for (int i = 0; i < ROUNDS; i++) {
        caller_a();
        a = leaf_frame;
        caller_b();
        b = leaf_frame;
    }
    if (a != b) {
        fprintf(stderr, "unwind_memo: callers: leaf's frame at %#lx and %#lx\n",
                (unsigned long)a, (unsigned long)b);
        return 2;
    }
    return 0;
}

/* ---- alloca: the gap between two callers' frames made up below them */
static __attribute__((noinline)) void with_alloca(size_t gap)
{
    char *p = alloca(gap); /* never written: the old frame's words stay */
    kept = p;
    leaf();
}

static __attribute__((noinline)) void small_caller(size_t gap)
{
    volatile char pad[16];
    pad[0] = 1;
    with_alloca(gap);
}

static __attribute__((noinline)) void big_caller(size_t gap)
{
    volatile char pad[16 + 256];
    pad[0] = 2;
    with_alloca(gap);
}

static int alloca_case(void)
{
    /* Measures the two paths with one gap, then evens leaf's frame out. */
    small_caller(512);
    uintptr_t s = leaf_frame;
    big_caller(512);
    uintptr_t b = leaf_frame;
    if (s <= b || (s - b) % 16 != 0 || s - b > 512) {
        fprintf(stderr, "unwind_memo: alloca: frames %#lx %#lx\n", (unsigned long)s,
                (unsigned long)b);
        return 2;
    }
    size_t big_gap = 512 - (s - b);
    for (int i = 0; i < ROUNDS; i++) {
        small_caller(512);
        s = leaf_frame;
        big_caller(big_gap);
        b = leaf_frame;
        small_caller(512);
    }
    if (s != b) {
        fprintf(stderr, "unwind_memo: alloca: leaf's frame at %#lx and %#lx\n",
                (unsigned long)s, (unsigned long)b);
        return 2;
    }
    return 0;
}

/* ---- signal */
static void on_signal(int sig)
{
    (void)sig;
    leaf();
}

static int signal_case(void)
{
    signal(SIGUSR1, on_signal);
    for (int i = 0; i < ROUNDS / 4; i++) {
        caller_a();
        raise(SIGUSR1);
        caller_b();
    }
    signal(SIGUSR1, SIG_DFL);
    return 0;
}

/* ---- longjmp */
static jmp_buf out;

static __attribute__((noinline)) void down(int n)
{
    volatile char pad[32];
    pad[0] = (char)n;
    if (n == 0) {
        leaf();
        longjmp(out, 1);
    }
    down(n - 1);
}

static __attribute__((noinline)) void down_other(int n)
{
    volatile char pad[32];
    pad[0] = (char)n;
    if (n == 0) {
        leaf();
        return;
    }
    down_other(n - 1);
}

static int longjmp_case(void)
{
    for (int i = 0; i < ROUNDS / 4; i++) {
        if (setjmp(out) == 0)
            down(12);
        down_other(12);
    }
    return 0;
}

/* ---- threads */
static void *thread_main(void *arg)
{
    int *rc = arg;
    *rc = then_free(callers);
    *rc |= then_free(alloca_case);
    return NULL;
}

static int threads_case(void)
{
    pthread_t t[2];
    int rc[2] = {0, 0};
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, thread_main, &rc[i]) != 0)
            return 2;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    return rc[0] | rc[1];
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    int rc = 0;
    if (!only || !strcmp(only, "callers"))
        rc |= then_free(callers);
    if (!only || !strcmp(only, "alloca"))
        rc |= then_free(alloca_case);
    if (!only || !strcmp(only, "signal"))
        rc |= then_free(signal_case);
    if (!only || !strcmp(only, "longjmp"))
        rc |= then_free(longjmp_case);
    if (!only || !strcmp(only, "threads"))
        rc |= threads_case();
    return rc;
}
