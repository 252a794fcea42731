/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Regressions found in review, one mode each; every mode exits 0 when the
 * behaviour is right:
 *   atfork   fork while another library's prepare handler allocates (hung)
 *   fds      close every inherited descriptor, reuse the numbers for the
 *            program's own files, in the parent and in a forked child (the
 *            profiler's wake pipe read and closed them)
 *   aligned  3000 x aligned_alloc(4096, 1 MiB) after recording stopped (came
 *            from the bounded internal heap, failed after about 2000)
 *   fiber    malloc on a makecontext stack whose frame pointer points above
 *            it, into a PROT_NONE page (the fp unwinder faulted); then
 *            prints memtrace_get_stats_sized's unwind_fallbacks when preloaded
 *            (off the thread's stack the cfi unwinder hands the capture
 *            of that malloc and that free to libunwind: 2)
 *   threadfiber  a new thread's first allocation is on a fiber; then it
 *            allocates 10 blocks on its own stack. Prints memtrace_get_stats_sized's
 *            unwind_fallbacks: 2 (the fiber's malloc and free). The stack
 *            bounds used to be learnt from the fiber, and every later
 *            capture on the thread's own stack went to libunwind (22)
 *   fiberabove  a thread whose stack bounds memtrace learnt jumps to a
 *            stack mapped 256 MiB above its own, whose outermost frame
 *            returns to a real call site: the cfi walk's bounds check
 *            wrapped and it read past the top of that stack (SIGSEGV);
 *            exits 0, or 3 if no such mapping could be made (not tested)
 *   msabi    malloc from an ms_abi function, whose CFI saves xmm6-15
 *            (registers 17 and up, which libunwind does not know): the
 *            cfi unwinder must give up there as libunwind does
 *   freeall  allocate 50,000 blocks and free them all (used with a fault:
 *            the profiler kept blocks freed after the stop as live)
 *   getattr  the main thread's first allocation is inside pthread_getattr_np
 *            (glibc holds the thread's lock while it fopens /proc/self/maps;
 *            the fp unwinder asked for the bounds again: deadlock)
 *   threadname  a thread named by another before it ever allocated exits;
 *            the next thread, which reuses its pthread_t, allocates a block
 *            that print_trace shows (it was given the dead thread's name)
 *   wildrbp  malloc called with rbp = -16, as code without frame pointers
 *            may leave it (the fp unwinder's bound check wrapped: SIGSEGV) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "../../include/memtrace.h"

void *volatile keep;

static int atfork_case(void)
{
    pid_t c = fork();
    if (c == 0)
        _exit(0);
    int status;
    return c > 0 && waitpid(c, &status, 0) == c && WIFEXITED(status) &&
                   WEXITSTATUS(status) == 0 ? 0 : 1;
}

static int count_bad(const int *fds, int n)
{
    int bad = 0;
    for (int i = 0; i < n; i++) {
        char buf[16];
        bad += pread(fds[i], buf, 12, 0) != 12 || memcmp(buf, "hello world\n", 12) != 0;
    }
    return bad;
}

static int fds_case(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, "hello world\n", 12) != 12)
        return 2;
    close(fd);
    usleep(100000); /* the reporter thread is up */
    for (int i = 3; i < 64; i++)
        close(i); /* a daemon's close of inherited descriptors */
    int fds[8];
    for (int i = 0; i < 8; i++)
        fds[i] = open(path, O_RDONLY);
    usleep(50000);
    int bad = count_bad(fds, 8);
    pid_t c = fork();
    if (c == 0)
        _exit(count_bad(fds, 8));
    int status;
    waitpid(c, &status, 0);
    int child_bad = WIFEXITED(status) ? WEXITSTATUS(status) : 8;
    printf("regressions fds: %d bad in the parent, %d in the child\n", bad, child_bad);
    return bad || child_bad;
}

/* Held, not freed as they come: the internal heap recycles freed blocks, so
 * only a live total beyond its range shows where they came from. The pages
 * are never touched: 3 GiB of address space, no memory. */
static int aligned_case(void)
{
    enum { N = 3000 };
    static void *held[N];
    int n = 0;
    for (; n < N; n++)
        if (!(held[n] = aligned_alloc(4096, 1 << 20)))
            break;
    for (int i = 0; i < n; i++)
        free(held[i]);
    printf("regressions aligned: %d of %d held at once\n", n, N);
    return n == N ? 0 : 1;
}

static ucontext_t main_ctx, fiber_ctx;

static void fiber_main(void)
{
    keep = malloc(40);
    free(keep);
    swapcontext(&fiber_ctx, &main_ctx);
}

static void print_fallbacks(void)
{
    size_t (*get_stats)(struct memtrace_stats *, size_t) = (size_t (*)(
        struct memtrace_stats *, size_t))dlsym(RTLD_DEFAULT, "memtrace_get_stats_sized");
    if (get_stats) {
        struct memtrace_stats st;
        get_stats(&st, sizeof st);
        printf("unwind fallbacks: %lu\n", st.unwind_fallbacks);
    }
}

static void *thread_fiber_main(void *arg)
{
    (void)arg;
    size_t size = 1 << 16;
    char *volatile stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                                -1, 0);
    if (stack == MAP_FAILED)
        return NULL;
    getcontext(&fiber_ctx);
    fiber_ctx.uc_stack.ss_sp = stack;
    fiber_ctx.uc_stack.ss_size = size;
    fiber_ctx.uc_link = &main_ctx;
    makecontext(&fiber_ctx, fiber_main, 0);
    swapcontext(&main_ctx, &fiber_ctx);
    for (int i = 0; i < 10; i++) {
        keep = malloc(16);
        free(keep);
    }
    return stack;
}

static int thread_fiber_case(void)
{
    pthread_t t;
    void *done = NULL;
    if (pthread_create(&t, NULL, thread_fiber_main, NULL) != 0 || pthread_join(t, &done) != 0 ||
        !done)
        return 2;
    print_fallbacks();
    return 0;
}

static int fiber_case(void)
{
    size_t size = 1 << 16;
    char *guard = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (guard == MAP_FAILED || stack == MAP_FAILED)
        return 2;
    getcontext(&fiber_ctx);
    fiber_ctx.uc_stack.ss_sp = stack;
    fiber_ctx.uc_stack.ss_size = size;
    fiber_ctx.uc_link = &main_ctx;
    makecontext(&fiber_ctx, fiber_main, 0);
#ifdef REG_RBP
    /* what code without frame pointers may leave in rbp */
    fiber_ctx.uc_mcontext.gregs[REG_RBP] = (greg_t)(guard + 4096);
#endif
    swapcontext(&main_ctx, &fiber_ctx);
    print_fallbacks();
    return 0;
}

static int freeall_case(void)
{
    enum { N = 50000 };
    static void *p[N];
    for (int i = 0; i < N; i++)
        p[i] = malloc(100);
    for (int i = 0; i < N; i++)
        free(p[i]);
    return 0;
}

static int getattr_case(void)
{
    pthread_attr_t attr;
    void *addr;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr) != 0 ||
        pthread_attr_getstack(&attr, &addr, &size) != 0)
        return 2;
    pthread_attr_destroy(&attr);
    return size > 0 ? 0 : 1;
}

static int name_pipe[2];

static void *unnamed_until_exit(void *arg)
{
    (void)arg;
    char c;
    return read(name_pipe[0], &c, 1) == 1 ? NULL : (void *)1; /* no allocation */
}

static void *allocates(void *arg)
{
    (void)arg;
    return malloc(77);
}

static int threadname_case(void)
{
    pthread_t first, second;
    if (pipe(name_pipe) != 0 || pthread_create(&first, NULL, unnamed_until_exit, NULL) != 0)
        return 2;
    pthread_setname_np(first, "first");
    if (write(name_pipe[1], "x", 1) != 1 || pthread_join(first, NULL) != 0 ||
        pthread_create(&second, NULL, allocates, NULL) != 0)
        return 2;
    void *block;
    pthread_join(second, &block);
    void (*trace)(const void *) = (void (*)(const void *))dlsym(RTLD_DEFAULT, "print_trace");
    if (!trace)
        return 2;
    fprintf(stderr, "regressions threadname: pthread_t %s\n",
            pthread_equal(first, second) ? "reused" : "not reused");
    trace(block);
    free(block);
    return 0;
}

static int wildrbp_case(void)
{
#if defined(__x86_64__)
    void *p;
    /* Below the red zone, on a 16-byte aligned stack, with rbp and rsp
     * kept in callee-saved registers across the call. */
    __asm__ volatile("mov %%rbp, %%r12\n\t"
                     "mov %%rsp, %%r13\n\t"
                     "sub $256, %%rsp\n\t"
                     "and $-16, %%rsp\n\t"
                     "mov $-16, %%rbp\n\t"
                     "mov $40, %%edi\n\t"
                     "call malloc@PLT\n\t"
                     "mov %%r13, %%rsp\n\t"
                     "mov %%r12, %%rbp\n\t"
                     : "=a"(p)
                     :
                     : "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13",
                       "memory", "cc");
    keep = p;
    free(keep);
    return p ? 0 : 1;
#else
    return 0;
#endif
}

void *volatile sink;
static uintptr_t fake_ret;

__attribute__((noinline)) static void note_return(void)
{
    fake_ret = (uintptr_t)__builtin_return_address(0);
}

__attribute__((noinline)) static void call_site(void)
{
    sink = (void *)1;
    note_return();
    sink = NULL;
}

static void fiber_above_entry(void)
{
    sink = malloc(32);
    _exit(0);
}

static void *fiber_above_thread(void *arg)
{
    uintptr_t here = (uintptr_t)&arg & ~(uintptr_t)0xfffff;
    size_t size = 1 << 16;
    char *stack = mmap((void *)(here + (256 << 20)), size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (stack == MAP_FAILED || (uintptr_t)stack != here + (256 << 20))
        _exit(3);
    sink = malloc(16); /* memtrace learns this thread's stack bounds */
    call_site();
    uintptr_t *top = (uintptr_t *)(stack + size);
    top[-1] = fake_ret; /* the new stack's outermost frame returns into call_site */
    __asm__ volatile("mov %0, %%rsp\n\tjmp *%1" ::"r"(top - 1), "r"(fiber_above_entry) : "memory");
    return NULL;
}

static int fiber_above_case(void)
{
    pthread_t t;
    pthread_create(&t, NULL, fiber_above_thread, NULL);
    pthread_join(t, NULL);
    return 2; /* not reached: the thread exits the process */
}

__attribute__((ms_abi, noinline)) static void *ms_abi_alloc(double a, double b)
{
    register double x6 __asm__("xmm6") = a * b, x7 __asm__("xmm7") = a + b;
    __asm__ volatile("" : "+x"(x6), "+x"(x7));
    void *p = malloc(32);
    __asm__ volatile("" : "+x"(x6), "+x"(x7));
    sink = (void *)(uintptr_t)(x6 + x7);
    return p;
}

static int msabi_case(int n)
{
    for (int i = 0; i < 3; i++)
        free(ms_abi_alloc(n, 2));
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "atfork") == 0)
        return atfork_case();
    if (strcmp(mode, "fds") == 0 && argc > 2)
        return fds_case(argv[2]);
    if (strcmp(mode, "aligned") == 0)
        return aligned_case();
    if (strcmp(mode, "fiber") == 0)
        return fiber_case();
    if (strcmp(mode, "threadfiber") == 0)
        return thread_fiber_case();
    if (strcmp(mode, "fiberabove") == 0)
        return fiber_above_case();
    if (strcmp(mode, "msabi") == 0)
        return msabi_case(argc);
    if (strcmp(mode, "freeall") == 0)
        return freeall_case();
    if (strcmp(mode, "getattr") == 0)
        return getattr_case();
    if (strcmp(mode, "threadname") == 0)
        return threadname_case();
    if (strcmp(mode, "wildrbp") == 0)
        return wildrbp_case();
    fprintf(stderr, "usage: regressions atfork|fds FILE|aligned|fiber|threadfiber|fiberabove|msabi|freeall|getattr|threadname|wildrbp\n");
    return 64;
}
