/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fork() from a signal handler, as crash reporters and supervisors do: a
 * timer interrupts a single-threaded loop of malloc/realloc/free, wherever
 * it is (inside memtrace too), and the handler forks a child that exits at
 * once. The prepare handler used to spin on a lock held by the very code the
 * signal interrupted. Exits 0 after 300 forks whose children all exited 0.
 *
 * With the argument "grow" the program also keeps up to 20,000 blocks from 1,024
 * distinct stacks that it never frees, so the live total keeps reaching new
 * peaks and the profiler (without its reporter thread) samples the peak
 * profile in this thread, under its report lock, often: the fork handler
 * used to wait for that lock, held by the code the signal interrupted. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

enum { FORKS = 300 };
static volatile sig_atomic_t forks, bad;

static void on_alarm(int sig)
{
    (void)sig;
    int saved = errno;
    pid_t c = fork();
    if (c == 0)
        _exit(0);
    int status;
    if (c < 0 || waitpid(c, &status, 0) != c || !WIFEXITED(status) || WEXITSTATUS(status))
        bad = bad + 1;
    forks = forks + 1;
    errno = saved;
}

/* A block allocated 10 calls deep, through alloc_0 or alloc_1 at each level
 * as the bits of PATH say: a distinct stack for each of 1,024 paths. */
static void *alloc_1(unsigned path, unsigned level, size_t size);

__attribute__((noinline)) static void *alloc_0(unsigned path, unsigned level, size_t size)
{
    void *p = level == 0 ? malloc(size)
              : (path & 1) ? alloc_1(path >> 1, level - 1, size)
                           : alloc_0(path >> 1, level - 1, size);
    __asm__ volatile("" ::: "memory"); /* not a tail call */
    return p;
}

__attribute__((noinline)) static void *alloc_1(unsigned path, unsigned level, size_t size)
{
    void *p = level == 0 ? malloc(size)
              : (path & 1) ? alloc_1(path >> 1, level - 1, size)
                           : alloc_0(path >> 1, level - 1, size);
    __asm__ volatile("" ::: "memory");
    return p;
}

int main(int argc, char **argv)
{
    int grow = argc > 1 && strcmp(argv[1], "grow") == 0;
    static void *kept[20000];
    unsigned nkept = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
    setitimer(ITIMER_REAL, &it, NULL);
    void *slots[64] = { 0 };
    unsigned seed = 1;
    while (forks < FORKS) {
        seed = seed * 1103515245u + 12345u;
        unsigned i = (seed >> 16) % 64, size = 1 + (seed >> 8) % 512;
        if (grow && nkept < 20000 && (seed & 0xff0) == 0) {
            kept[nkept] = alloc_0(nkept % 1024, 10, 64);
            nkept++;
        }
        if (!slots[i])
            slots[i] = malloc(size);
        else if (seed & 1)
            slots[i] = realloc(slots[i], size);
        else {
            free(slots[i]);
            slots[i] = NULL;
        }
    }
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, NULL);
    for (unsigned i = 0; i < 64; i++)
        free(slots[i]);
    for (unsigned i = 0; i < nkept; i++)
        free(kept[i]);
    printf("signal_fork: %d forks, %d bad\n", (int)forks, (int)bad);
    return bad != 0;
}
