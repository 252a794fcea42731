/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Blocks lost and kept in every way the leak check tells apart, each at a
 * site marked "SITE:<name>" with a size of its own (tests/e2e/leaks.sh):
 *   lost: direct (100), a list behind a lost head (48 + 3 x 32), a cycle
 *         of two (2 x 64);
 *   possibly lost: held only by an interior pointer (300 from +100);
 *   kept: from a global (200), a thread's stack while it waits in read (400), only a register of
 *         a thread waiting in a system call (500), through a reachable
 *         block (16 -> 700), thread-local storage (800).
 * The lost blocks are made in a thread that has finished, so no stale copy
 * of their addresses stays on a live stack. Argument "none": only the kept
 * blocks, and the program exits with 7 of its own. Argument "blocked": also
 * a thread that blocks every signal, so it cannot be stopped for the scan,
 * and holds a block (900) on its stack and one (1000) in its TLS while it
 * waits in read (glibc puts a thread's static TLS at the top of its stack
 * mapping, so the stack scan from its system call covers that one too). */
#include <signal.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct node {
    struct node *next;
    char pad[24];
};

void *g_global;
char *g_interior;
void **g_holder;
static __thread void *t_tls;
static int pipe_fds[2];
static volatile int started;

static __attribute__((noinline)) void lose_direct(void)
{
    void *volatile direct = malloc(100); /* SITE:direct */
    direct = NULL;
    (void)direct;
}

static __attribute__((noinline)) void make_list(void)
{
    struct node *head = malloc(48); /* SITE:list_head */
    head->next = NULL;
    for (int i = 0; i < 3; i++) {
        struct node *n = malloc(32); /* SITE:list_node */
        n->next = head->next;
        head->next = n;
    }
}

static __attribute__((noinline)) void make_cycle(void)
{
    void **cycle[2];
    for (int i = 0; i < 2; i++)
        cycle[i] = malloc(64); /* SITE:cycle */
    cycle[0][0] = cycle[1];
    cycle[1][0] = cycle[0];
}

static void lose(void)
{
    lose_direct();
    make_list();
    make_cycle();
}

static void *losing_thread(void *arg)
{
    (void)arg;
    lose();
    return NULL;
}

static void *stack_holder(void *arg)
{
    (void)arg;
    void *volatile mine = malloc(400); /* SITE:thread_stack */
    char c;
    __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
    while (read(pipe_fds[0], &c, 1) < 0)
        ;
    return mine;
}

/* Clears the stack below the caller's frame: what malloc left there. */
static __attribute__((noinline)) void clear_below(void)
{
    volatile char junk[8192];
    memset((char *)junk, 0, sizeof junk);
}

static void *blocked_holder(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    void *volatile mine = malloc(900); /* SITE:blocked */
    t_tls = malloc(1000); /* SITE:blocked_tls */
    clear_below(); /* no stale copy of it below this frame */
    char c;
    __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
    while (read(pipe_fds[0], &c, 1) < 0)
        ;
    return mine;
}

#define KEY ((uintptr_t)0x5a5a5a5a5a5a5a5aull)

/* The block's address lives only in r12 while the thread waits in a raw
 * read system call (which preserves r12): in memory it is kept XORed. */
static void *register_holder(void *arg)
{
    (void)arg;
    volatile uintptr_t hidden = (uintptr_t)malloc(500) ^ KEY; /* SITE:register */
    clear_below();
    __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
#if defined(__x86_64__)
    char c;
    long ret;
    uintptr_t h = hidden;
    hidden = 0;
    __asm__ volatile("mov %[h], %%r12\n\t"
                     "xor %[key], %%r12\n\t"
                     "xor %[h], %[h]\n\t"
                     "1: mov $0, %%eax\n\t" /* SYS_read */
                     "syscall\n\t"
                     "cmp $-4, %%rax\n\t" /* EINTR: again */
                     "je 1b\n\t"
                     "xor %%r12, %%r12"
                     : "=&a"(ret), [h] "+r"(h)
                     : "D"((long)pipe_fds[0]), "S"(&c), "d"(1L), [key] "r"(KEY)
                     : "rcx", "r11", "r12", "memory");
    (void)ret;
#endif
    return NULL;
}

/* Where the gdb tests stop the program (tests/e2e/leaks.sh): every thread
 * is in place, the lost blocks are lost. */
__attribute__((noinline)) void checkpoint(void)
{
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    if (pipe(pipe_fds) != 0)
        return 2;
    g_global = malloc(200); /* SITE:global */
    g_interior = (char *)malloc(300) + 100; /* SITE:interior */
    g_holder = malloc(16); /* SITE:holder */
    *g_holder = malloc(700); /* SITE:through */
    t_tls = malloc(800); /* SITE:tls */
    pthread_t t;
    if (!(argc > 1 && strcmp(argv[1], "none") == 0)) {
        pthread_create(&t, NULL, losing_thread, NULL);
        pthread_join(t, NULL);
    }
    pthread_create(&t, NULL, stack_holder, NULL);
    pthread_create(&t, NULL, register_holder, NULL);
    int threads = 2;
    if (argc > 1 && strcmp(argv[1], "blocked") == 0) {
        pthread_create(&t, NULL, blocked_holder, NULL);
        threads++;
    }
    while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < threads)
        usleep(1000);
    usleep(20000); /* both threads inside read */
    checkpoint();
    if (argc > 1 && strcmp(argv[1], "none") == 0)
        return 7;
    return 0;
}
