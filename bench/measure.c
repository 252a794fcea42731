/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* measure: run one command and report what it cost, for bench/run.sh.
 *
 *   measure [-e NAME=VALUE]... [-t SECONDS] [-o LOG] -- COMMAND [ARG]...
 *
 * Runs COMMAND (PATH search) with the extra environment variables, stdin from
 * /dev/null and stdout+stderr to LOG (default /dev/null), in its own process
 * group, and prints one line on stdout:
 *
 *   wall=SECONDS cpu=SECONDS rss_kb=KB status=STATUS
 *
 * cpu is user+sys of the whole process tree (getrusage RUSAGE_CHILDREN counts
 * every descendant that was waited for, so heaptrack's interpreter is
 * included); rss_kb is the largest peak RSS of any single process in that tree
 * (that is what the kernel keeps, it is not a sum). STATUS is "ok", "exit_N",
 * "signal_N" or "timeout"; anything but "ok" also makes measure exit 1. After a
 * timeout the whole process group is killed. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pid_t child;
static volatile sig_atomic_t timed_out;

static void on_alarm(int sig)
{
    (void)sig;
    timed_out = 1;
    kill(-child, SIGKILL);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double seconds(struct timeval tv)
{
    return tv.tv_sec + tv.tv_usec / 1e6;
}

static void usage(void)
{
    fprintf(stderr, "usage: measure [-e NAME=VALUE]... [-t SECONDS] [-o LOG] -- COMMAND [ARG]...\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *log = "/dev/null";
    unsigned timeout = 0;
    int opt;
    while ((opt = getopt(argc, argv, "+e:t:o:")) != -1) {
        switch (opt) {
        case 'e':
            if (!strchr(optarg, '=') || putenv(optarg) != 0)
                usage();
            break;
        case 't': timeout = (unsigned)atoi(optarg); break;
        case 'o': log = optarg; break;
        default: usage();
        }
    }
    if (optind >= argc)
        usage();

    int out = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int in = open("/dev/null", O_RDONLY);
    if (out < 0 || in < 0) {
        perror(log);
        return 2;
    }

    double start = now();
    child = fork();
    if (child < 0) {
        perror("fork");
        return 2;
    }
    if (child == 0) {
        setpgid(0, 0);
        dup2(in, 0);
        dup2(out, 1);
        dup2(out, 2);
        execvp(argv[optind], argv + optind);
        perror(argv[optind]);
        _exit(127);
    }
    setpgid(child, child); /* also here, so the alarm can never miss the group */
    if (timeout) {
        signal(SIGALRM, on_alarm);
        alarm(timeout);
    }
    int status;
    while (waitpid(child, &status, 0) < 0)
        if (errno != EINTR) {
            perror("waitpid");
            return 2;
        }
    double wall = now() - start;
    alarm(0);
    /* Reap anything of the group still running (heaptrack's pipeline ends
     * with its script, but be sure), so RUSAGE_CHILDREN has it all. */
    kill(-child, SIGKILL);

    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    char what[32];
    if (timed_out)
        snprintf(what, sizeof what, "timeout");
    else if (WIFSIGNALED(status))
        snprintf(what, sizeof what, "signal_%d", WTERMSIG(status));
    else if (WEXITSTATUS(status) != 0)
        snprintf(what, sizeof what, "exit_%d", WEXITSTATUS(status));
    else
        snprintf(what, sizeof what, "ok");
    printf("wall=%.4f cpu=%.4f rss_kb=%ld status=%s\n", wall,
           seconds(ru.ru_utime) + seconds(ru.ru_stime), ru.ru_maxrss, what);
    return strcmp(what, "ok") != 0;
}
