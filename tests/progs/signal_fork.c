/* fork() from a signal handler, as crash reporters and supervisors do: a
 * timer interrupts a single-threaded loop of malloc/realloc/free, wherever
 * it is (inside memtrace too), and the handler forks a child that exits at
 * once. The prepare handler used to spin on a lock held by the very code the
 * signal interrupted. Exits 0 after 300 forks whose children all exited 0. */
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

int main(void)
{
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
    printf("signal_fork: %d forks, %d bad\n", (int)forks, (int)bad);
    return bad != 0;
}
