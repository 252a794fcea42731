/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Roots of every kind for `memtrace leaks`, `memtrace refs` and the
 * description of an address that is no heap block: a global (g_list), a
 * thread's TLS (t_held, in a second thread), a stack slot of main's, a
 * read-only data file mapped as glibc maps its locale files (argv[1]), and
 * one lost block of 100 bytes. Stops in stop_here, with the second thread
 * waiting. */
#include <fcntl.h>
#include <locale.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct node {
    struct node *next;
    long value;
};

struct node *g_list;
long g_pad[4];
static __thread char *t_held;
static pthread_barrier_t ready, done;
const char *g_data; /* the mapped data file */

__attribute__((noinline)) void stop_here(void *on_stack)
{
    __asm__ volatile("" ::"r"(on_stack) : "memory");
}

/* Zeroes the stack below the caller: the frames malloc used (memtrace's
 * among them) keep the new block's address in slots that the barrier's
 * frames, laid over them later, leave unwritten; the thread may be caught
 * in there, and refs would name those slots too. In main, the lost
 * block's address was found left in the 128-byte red zone below
 * stop_here's frame (which a leak check scans, as memcheck does), on one
 * host's glibc and not another's. */
static __attribute__((noinline)) void scrub(void)
{
    volatile char junk[16384];
    memset((char *)junk, 0, sizeof junk);
}

static void *holder(void *arg)
{
    (void)arg;
    t_held = malloc(48); /* held by the TLS only */
    memset(t_held, 1, 48);
    scrub();
    pthread_barrier_wait(&ready);
    pthread_barrier_wait(&done);
    free(t_held);
    return NULL;
}

int main(int argc, char **argv)
{
    setlocale(LC_ALL, "");
    if (argc > 1) {
        int fd = open(argv[1], O_RDONLY);
        if (fd >= 0) {
            g_data = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
            close(fd);
        }
    }
    for (int i = 0; i < 3; i++) {
        struct node *n = malloc(sizeof *n);
        n->next = g_list;
        n->value = i;
        g_list = n;
    }
    char *lost = malloc(100);
    memset(lost, 2, 100);
    lost = NULL;
    long local[4] = { 1, 2, 3, 4 };
    pthread_barrier_init(&ready, NULL, 2);
    pthread_barrier_init(&done, NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, holder, NULL);
    pthread_barrier_wait(&ready);
    scrub(); /* the lost block's address, left in the red zone below main's frame */
    stop_here(local);
    pthread_barrier_wait(&done);
    pthread_join(t, NULL);
    printf("%ld\n", local[0] + g_pad[0] + (lost != NULL));
    return 0;
}
