/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Stop-the-world (stop_world.h): the stop signal's handler, the task
 * list walked twice, the wait, the release. */
#include "base/stop_world.h"

#include "base/atomic.h"
#include "base/os.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define MAX_STOPPED 4096
static mt_world_thread *stopped;    /* mapped once, never unmapped */
static mt_atomic(size_t) nstopped;  /* entries the handler may look at */
static mt_atomic(int) released = 1; /* the handler waits while 0 */
static pid_t stopper_pid;
static int stop_signal;

static long futex(mt_atomic(int) * word, int op, int val)
{
    return syscall(SYS_futex, (int *)word, op, val, NULL, NULL, 0);
}

/* What /proc/self/task/TID/syscall says of a thread waiting in a system
 * call ("NR ARG1..ARG6 SP PC"): false if it runs or cannot be read. */
static bool read_syscall(pid_t tid, long *nr, uintptr_t *arg0, uintptr_t *sp, uintptr_t *pc)
{
    char path[64], text[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0)
        return false;
    text[n] = '\0';
    char *field[10], *save;
    int count = 0; /* strtok_r: the program's threads may be in strtok */
    for (char *p = strtok_r(text, " \n", &save); p && count < 10; p = strtok_r(NULL, " \n", &save))
        field[count++] = p;
    if (count < 3 || strcmp(field[0], "running") == 0)
        return false;
    *nr = strtol(field[0], NULL, 10);
    *arg0 = count == 9 ? strtoul(field[1], NULL, 16) : 0;
    *sp = strtoul(field[count - 2], NULL, 16);
    *pc = strtoul(field[count - 1], NULL, 16);
    return *nr >= 0;
}

uintptr_t mt_world_syscall_sp(pid_t tid)
{
    long nr;
    uintptr_t arg0, sp, pc;
    return read_syscall(tid, &nr, &arg0, &sp, &pc) ? sp : 0;
}

/* A stopped thread that was waiting in a system call the kernel does not
 * restart after a handler (nanosleep, pause, poll, epoll_wait, a futex
 * with a timeout) would return from it with EINTR, and the program would
 * run on because of the check: main leaving its sleep() and returning 0
 * while another thread is in exit(7). So, when the handler's context shows
 * exactly that call (the PC the kernel reported before the signal, just
 * past a system call instruction, returning -EINTR), it is rewound to be
 * made again with the same arguments, as the kernel restarts the calls it
 * may. A timed wait then starts its time over: it waits longer, and the
 * program sees nothing else. */
static void restart_call(const mt_world_thread *t, ucontext_t *uc)
{
    if (!t->in_call || t->nr == SYS_restart_syscall)
        return;
#if defined(__x86_64__)
    greg_t *g = uc->uc_mcontext.gregs;
    const unsigned char *pc = (const unsigned char *)g[REG_RIP];
    if (g[REG_RAX] == -EINTR && (uintptr_t)pc == t->call_pc && pc[-2] == 0x0f && pc[-1] == 0x05) {
        g[REG_RIP] -= 2;
        g[REG_RAX] = t->nr;
    }
#elif defined(__aarch64__)
    const uint32_t *pc = (const uint32_t *)uc->uc_mcontext.pc;
    if ((long)uc->uc_mcontext.regs[0] == -EINTR && (uintptr_t)pc == t->call_pc &&
        pc[-1] == 0xd4000001u && (long)uc->uc_mcontext.regs[8] == t->nr) {
        uc->uc_mcontext.pc -= 4;
        uc->uc_mcontext.regs[0] = t->arg0; /* the kernel's return value took its place */
    }
#else
    (void)uc;
#endif
}

/* The stop signal's handler: async-signal-safe (atomics, gettid, futex).
 * Ignores a signal that is not the checker's (another sender, or a late
 * delivery after the round: the thread had it blocked). */
static void on_stop_signal(int sig, siginfo_t *si, void *ucv)
{
    (void)sig;
    int saved = errno;
    if (si->si_code != SI_TKILL || si->si_pid != stopper_pid || mt_atomic_load_acquire(&released)) {
        errno = saved;
        return;
    }
    pid_t tid = (pid_t)syscall(SYS_gettid);
    size_t n = mt_atomic_load_acquire(&nstopped); /* pairs with the release in stop_thread */
    mt_world_thread *t = NULL;
    for (size_t i = 0; i < n; i++)
        if (stopped[i].tid == tid)
            t = &stopped[i];
    if (!t || mt_atomic_load_relaxed(&t->state) != MT_WORLD_SENT) {
        errno = saved;
        return;
    }
    const ucontext_t *uc = ucv;
#if defined(__x86_64__)
    t->nregs = NGREG < 32 ? NGREG : 32;
    for (unsigned k = 0; k < t->nregs; k++)
        t->regs[k] = (uintptr_t)uc->uc_mcontext.gregs[k];
    t->sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    t->nregs = 31;
    for (unsigned k = 0; k < 31; k++)
        t->regs[k] = (uintptr_t)uc->uc_mcontext.regs[k];
    t->sp = (uintptr_t)uc->uc_mcontext.sp;
#else
    (void)uc;
    t->nregs = 0;
    t->sp = (uintptr_t)__builtin_frame_address(0); /* the handler's frame: conservative */
#endif
    t->tp = (uintptr_t)pthread_self();
    mt_atomic_store_release(&t->state,
                            MT_WORLD_STOPPED); /* pairs with the acquire in wait_stopped */
    while (!mt_atomic_load_acquire(&released)) /* pairs with the release in resume_threads */
        futex(&released, FUTEX_WAIT_PRIVATE, 0);
    restart_call(t, ucv);
    mt_atomic_store_release(&t->state, MT_WORLD_GONE);
    errno = saved;
}

/* A real-time signal with no handler of the program's (from the top: the
 * low ones are the popular ones), installed for good: a thread that had it
 * blocked gets it late, and the handler must still be there to ignore it. */
static int install_handler(void)
{
    struct sigaction sa, old;
    /* A forked child inherits the parent's: the same signal, still ours. */
    if (stop_signal && sigaction(stop_signal, NULL, &old) == 0 && (old.sa_flags & SA_SIGINFO) &&
        old.sa_sigaction == on_stop_signal)
        return stop_signal;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_stop_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);
    for (int sig = SIGRTMAX; sig > SIGRTMIN + 2; sig--) {
        if (sigaction(sig, NULL, &old) != 0)
            continue;
        if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL &&
            sigaction(sig, &sa, NULL) == 0)
            return sig;
    }
    return 0;
}

/* True if the main thread has ended (pthread_exit) while the process
 * runs on: the kernel keeps it listed, a zombie, until the process ends. */
static bool leader_gone(void)
{
    char text[512];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return false;
    text[n] = '\0';
    const char *paren = strrchr(text, ')'); /* the name may hold spaces and parentheses */
    return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

static void stop_thread(pid_t tid)
{
    size_t n = mt_atomic_load_relaxed(&nstopped);
    for (size_t i = 0; i < n; i++)
        if (stopped[i].tid == tid)
            return;
    if (n == MAX_STOPPED)
        return;
    stopped[n] = (mt_world_thread){ .tid = tid, .state = MT_WORLD_SENT };
    if (tid == stopper_pid && leader_gone()) {
        /* main called pthread_exit: nothing of it is left to scan */
        mt_atomic_store_relaxed(&stopped[n].state, MT_WORLD_GONE);
        mt_atomic_store_release(&nstopped, n + 1);
        return;
    }
    uintptr_t sp;
    stopped[n].in_call =
        read_syscall(tid, &stopped[n].nr, &stopped[n].arg0, &sp, &stopped[n].call_pc);
    mt_atomic_store_release(&nstopped, n + 1); /* pairs with the acquire in on_stop_signal */
    if (syscall(SYS_tgkill, stopper_pid, tid, stop_signal) != 0)
        mt_atomic_store_relaxed(&stopped[n].state, MT_WORLD_GONE); /* gone already */
}

struct stop_ctx {
    pid_t self;
    bool (*skip)(pid_t tid);
};

static bool stop_other(pid_t tid, void *arg)
{
    const struct stop_ctx *c = arg;
    if (tid != c->self && !c->skip(tid))
        stop_thread(tid);
    return true;
}

/* Signals every task but the caller, twice over the task list so that a
 * thread created meanwhile is caught; false if the list cannot be read. */
static bool stop_threads(pid_t self, bool (*skip)(pid_t tid))
{
    struct stop_ctx c = { self, skip };
    for (int round = 0; round < 2; round++)
        if (!mt_os_each_task(stop_other, &c))
            return false;
    return true;
}

/* Waits up to half a second for the signalled threads to stop. */
static void wait_stopped(void)
{
    for (int ms = 0; ms < 500; ms++) {
        bool all = true;
        size_t n = mt_atomic_load_relaxed(&nstopped);
        for (size_t i = 0; i < n && all; i++)
            all = mt_atomic_load_acquire(&stopped[i].state) != MT_WORLD_SENT;
        if (all)
            return;
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
}

void mt_world_resume(void)
{
    mt_atomic_store_release(&released, 1); /* pairs with the acquire in on_stop_signal */
    futex(&released, FUTEX_WAKE_PRIVATE, 1 << 30);
}

bool mt_world_stop(bool (*skip)(pid_t tid))
{
    stopper_pid = getpid();
    if (!stopped) {
        void *p = mmap(NULL, MAX_STOPPED * sizeof *stopped, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        stopped = p == MAP_FAILED ? NULL : p;
    }
    stop_signal = stopped ? install_handler() : 0;
    mt_atomic_store_relaxed(&nstopped, 0);
    mt_atomic_store_release(&released, 0);
    bool listed = stop_signal && stop_threads((pid_t)syscall(SYS_gettid), skip);
    wait_stopped();
    return listed;
}

size_t mt_world_count(void)
{
    return mt_atomic_load_relaxed(&nstopped);
}

const mt_world_thread *mt_world_thread_at(size_t i, int *state)
{
    *state = mt_atomic_load_acquire(&stopped[i].state);
    return &stopped[i];
}
