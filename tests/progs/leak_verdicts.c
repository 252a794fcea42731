/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The leak verdicts valgrind's memcheck gives, one scenario per argument
 * (tests/e2e/leaks.sh checks memtrace's exit check on each, and
 * tests/e2e/leak_oracle.sh checks valgrind agrees). Built -O0 -g, as a
 * user's first try would be.
 *   stack:    `void *lost = malloc(333); lost = 0; return 0;` in main: the
 *             copies malloc's call path left below main's frame are dead
 *             at exit; 333 bytes definitely lost in 1 block.
 *   threads:  the same with four threads sleeping in read.
 *   bins:     a lost 24-byte record holding a list of 40 blocks of 56
 *             bytes, followed in the heap by a free chunk that glibc's
 *             main_arena bins point at (the chunk's header lies in the
 *             record's last bytes): 24 bytes definitely lost in 1 block,
 *             2240 indirectly in 40. The stack below main's frame is
 *             cleared, then checkpoint() is called (gdb stops there).
 *   top:      the same record as the last block before glibc's top chunk
 *             (main_arena.top points at its last bytes).
 *   interior: a block held only by a global's interior pointer, and the
 *             block it holds by its start: both possibly lost (400 + 64
 *             bytes in 2 blocks).
 *   owner:    a 48-byte block holding four of 48: "240 (48 direct, 192
 *             indirect) bytes in 1 blocks", and nothing else lost.
 *   exit_r12: exit called with a block's only copy in r12 (x86-64): 777
 *             bytes still reachable, nothing lost. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct node {
    struct node *next;
    char pad[48];
};

struct record {
    struct node *head;
    char pad[16];
};

char *g_inner;
void *g_guard;
/* The lost record's address, XORed so that it holds nothing (for gdb's
 * `memtrace refs g_record ^ 0x5a5a5a5a5a5a5a5a`). */
#define KEY ((uintptr_t)0x5a5a5a5a5a5a5a5aull)
uintptr_t g_record;
static int pipe_fds[2];
static volatile int started;

static __attribute__((noinline)) struct node *make_list(int n)
{
    struct node *head = NULL;
    for (int i = 0; i < n; i++) {
        struct node *e = malloc(sizeof *e); /* SITE:bins_node */
        e->next = head;
        head = e;
    }
    return head;
}

/* The record, then a chunk of 2000 bytes freed into the unsorted bin (too
 * large for the tcache), fenced off the top chunk by a kept guard block. */
static __attribute__((noinline)) void lose_before_bin(void)
{
    struct node *list = make_list(40);
    struct record *r = malloc(sizeof *r); /* SITE:bins_record */
    void *gap = malloc(2000);
    g_guard = malloc(24);
    r->head = list;
    g_record = (uintptr_t)r ^ KEY;
    free(gap);
}

static __attribute__((noinline)) void lose_before_top(void)
{
    struct node *list = make_list(40);
    struct record *r = malloc(sizeof *r); /* SITE:top_record */
    r->head = list;
}

static __attribute__((noinline)) void lose_interior(void)
{
    void **outer = malloc(400); /* SITE:interior_outer */
    outer[10] = malloc(64); /* SITE:interior_inner */
    g_inner = (char *)outer + 40;
}

static __attribute__((noinline)) void lose_owner(void)
{
    void **owner = malloc(48); /* SITE:owner */
    for (int i = 0; i < 4; i++)
        owner[i] = malloc(48); /* SITE:owned */
}

/* Clears the stack below the caller's frame: the copies the losing calls
 * left there, so that only the allocator's state could hold the record. */
static __attribute__((noinline)) void clear_below(void)
{
    volatile char junk[8192];
    memset((char *)junk, 0, sizeof junk);
}

/* Where the gdb tests stop (tests/e2e/leaks.sh). */
__attribute__((noinline)) void checkpoint(void)
{
    __asm__ volatile("" ::: "memory");
}

/* exit(0) called with the block's address only in r12, a callee-saved
 * register (in memory it is kept XORed): exit's frames save r12 below the
 * caller's stack pointer and reuse it, and the block stays reachable, as
 * the caller's register at the call. */
static __attribute__((noinline, noreturn)) void exit_holding_in_r12(uintptr_t hidden)
{
#if defined(__x86_64__)
    __asm__ volatile("mov %[h], %%r12\n\t"
                     "xor %[key], %%r12\n\t"
                     "and $-16, %%rsp\n\t"
                     "xor %%edi, %%edi\n\t"
                     "call exit@PLT"
                     :
                     : [h] "r"(hidden), [key] "r"(KEY)
                     : "r12", "memory");
#endif
    exit(0);
}

static void *sleeper(void *arg)
{
    (void)arg;
    char c;
    __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
    while (read(pipe_fds[0], &c, 1) < 0)
        ;
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "stack";
    if (strcmp(mode, "threads") == 0) {
        if (pipe(pipe_fds) != 0)
            return 2;
        pthread_t t;
        for (int i = 0; i < 4; i++)
            pthread_create(&t, NULL, sleeper, NULL);
        while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < 4)
            usleep(1000);
        usleep(20000); /* all four inside read */
    }
    if (strcmp(mode, "bins") == 0)
        lose_before_bin();
    if (strcmp(mode, "top") == 0)
        lose_before_top();
    if (strcmp(mode, "bins") == 0 || strcmp(mode, "top") == 0) {
        clear_below();
        checkpoint();
    }
    if (strcmp(mode, "interior") == 0)
        lose_interior();
    if (strcmp(mode, "owner") == 0)
        lose_owner();
    if (strcmp(mode, "exit_r12") == 0) {
        volatile uintptr_t hidden = (uintptr_t)malloc(777) ^ KEY; /* SITE:exit_r12 */
        clear_below();
        exit_holding_in_r12(hidden);
    }
    if (strcmp(mode, "stack") == 0 || strcmp(mode, "threads") == 0) {
        void *lost = malloc(333); /* SITE:stack */
        lost = 0;
        (void)lost;
    }
    return 0;
}
