/* The leak check at exit (leak_check.h): gathers the roots of the process
 * itself, stops its other threads, takes the live blocks, runs the scan
 * (leak_scan.c), lets the threads go, and reports.
 *
 * How the other threads are kept from changing what is scanned: each one
 * (every task in /proc/self/task, registered with memtrace or not) gets a
 * real-time signal, with tgkill, whose handler saves its registers, stack
 * pointer and thread pointer and then waits on a futex until the scan is
 * done. A thread blocked in a system call (read, poll, a lock) runs the
 * handler all the same; SA_RESTART restarts the call afterwards, and the
 * handler rewinds one the kernel never restarts (nanosleep, pause,
 * epoll_wait: restart_call), so the program sees nothing and no thread
 * runs on because of the check (main leaving its sleep while another
 * thread is in exit). Chosen over
 * LeakSanitizer's ptrace-ing child because ptrace is often refused
 * (Yama, containers, a process already being debugged), and over a forked
 * copy because a fork has the other threads' memory but not their
 * registers. A thread that does not arrive within half a second (it blocks
 * the signal, or is exiting) is scanned without its registers, from the
 * stack pointer /proc/self/task/TID/syscall shows when it waits in a system
 * call, and the report says so: what it alone holds may be counted lost.
 *
 * Nothing here runs before the threads are stopped that could wait for a
 * stopped thread: the loader's lock (dl_iterate_phdr, dlsym) is taken
 * before they are stopped, the live table is read with mt_live_foreach's
 * bounded wait, and the report is written after they go on. */
#define UNW_LOCAL_ONLY
#include "leak/leak_check.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/config.h"
#include "base/os.h"
#include "base/output.h"
#include "base/reentry.h"
#include "capture/real.h"
#include "leak/leak_report.h"
#include "leak/suppressions.h"
#include "profile/profiler.h"
#include "report/describe.h"
#include "report/format.h"
#include "runtime/recording.h"
#include "scan/leak_roots.h"
#include "scan/leak_scan.h"
#include "store/live_table.h"
#include "store/stack_store.h"
#include "store/threads.h"
#include "symbolize/symbolize.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libunwind.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

/* ------------------------------------------------------------ memory */

/* Work arrays come from mmap, not from the allocator being examined nor
 * mt_os_map (whose failure stops recording): a check that cannot get memory
 * says so and lets the program exit as it would have. */
static void *map_bytes(size_t size)
{
    void *p = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* A growable array of fixed-size items in its own mapping. */
struct vec {
    char *p;
    size_t n, cap, item;
};

static void *vec_push(struct vec *v)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 256;
        char *p = map_bytes(cap * v->item);
        if (!p)
            return NULL;
        if (v->p) {
            memcpy(p, v->p, v->n * v->item);
            munmap(v->p, v->cap * v->item);
        }
        v->p = p;
        v->cap = cap;
    }
    return v->p + v->n++ * v->item;
}

static void vec_free(struct vec *v)
{
    if (v->p)
        munmap(v->p, v->cap * v->item);
    *v = (struct vec){ .item = v->item };
}

/* Reads the whole of PATH (a /proc file or the suppressions) into a fresh
 * mapping with raw calls; NULL on failure, errno set. *LEN excludes the
 * NUL written after the text. */
static char *read_file(const char *path, size_t *len, size_t *mapped)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = map_bytes(cap);
    while (buf) {
        if (n + 1 == cap) {
            char *bigger = map_bytes(cap * 2);
            if (bigger)
                memcpy(bigger, buf, n);
            munmap(buf, cap);
            buf = bigger;
            cap *= 2;
            if (!buf)
                break;
        }
        ssize_t got = read(fd, buf + n, cap - 1 - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int err = errno;
            munmap(buf, cap);
            buf = NULL;
            errno = err;
            break;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    if (!buf)
        return NULL;
    buf[n] = '\0';
    *len = n;
    *mapped = cap;
    return buf;
}

/* ------------------------------------------------------------ the maps */

/* The process's mappings as /proc/thread-self/maps lists them (ascending),
 * read while the other threads are stopped: what the reader may touch.
 * Through the calling thread, not /proc/self: once main has called
 * pthread_exit, /proc/self is a zombie's, whose maps are empty. */
struct mapping {
    uintptr_t lo, hi;
    bool readable;
    bool file; /* backed by a file: a page past its end raises SIGBUS */
};

static bool read_maps(struct vec *maps)
{
    size_t len, mapped;
    char *text = read_file("/proc/thread-self/maps", &len, &mapped);
    if (!text)
        text = read_file("/proc/self/maps", &len, &mapped); /* Linux before 3.17 */
    if (!text)
        return false;
    for (char *line = text; line < text + len;) {
        char *end = strchr(line, '\n');
        if (!end)
            end = text + len;
        *end = '\0';
        char *rest;
        uintptr_t lo = strtoul(line, &rest, 16);
        uintptr_t hi = *rest == '-' ? strtoul(rest + 1, &rest, 16) : 0;
        struct mapping *m = hi > lo ? vec_push(maps) : NULL;
        if (m) {
            /* " PERMS OFFSET DEV INODE PATH"; [vvar] pages may fault when
             * read, and nothing there is a root. */
            char *p = rest + 6 <= end ? rest + 6 : end;
            strtoul(p, &p, 16);
            while (*p == ' ')
                p++;
            while (*p && *p != ' ')
                p++;
            unsigned long inode = strtoul(p, NULL, 10);
            *m = (struct mapping){ lo, hi, rest[1] == 'r' && !strstr(rest, "[vvar"), inode != 0 };
        }
        line = end + 1;
    }
    munmap(text, mapped);
    return maps->n > 0; /* none: not this process's maps (the code itself is mapped) */
}

/* The mapping holding ADDR, or NULL. */
static const struct mapping *mapping_of(const struct vec *maps, uintptr_t addr)
{
    const struct mapping *m = (const struct mapping *)maps->p;
    size_t lo = 0, hi = maps->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m[mid].hi <= addr)
            lo = mid + 1;
        else if (m[mid].lo > addr)
            hi = mid;
        else
            return &m[mid];
    }
    return NULL;
}

/* Where read_self copies memory of file-backed mappings; memtrace's own
 * data, which is no root. */
static char copy_buf[64 << 10];

/* mt_leak_read_fn for the process itself, once the maps say every byte is
 * mapped readable (adjacent mappings may share the range): anonymous
 * memory (the heap, stacks, .bss) is read in place; memory of a file (the
 * modules' .data) is copied with process_vm_readv, which fails where a
 * direct read would raise SIGBUS (a file truncated under its mapping). */
static const void *read_self(void *ctx, uintptr_t addr, size_t len)
{
    const struct vec *maps = ctx;
    uintptr_t at = addr, end = addr + len;
    bool file = false;
    if (end < addr)
        return NULL;
    while (at < end) {
        const struct mapping *m = mapping_of(maps, at);
        if (!m || !m->readable)
            return NULL;
        file |= m->file;
        at = m->hi;
    }
    if (!file || len > sizeof copy_buf)
        return (const void *)addr;
    struct iovec local = { copy_buf, len }, remote = { (void *)addr, len };
    /* The calling thread's id: the process's id names main, whose memory
     * cannot be read once it has called pthread_exit. */
    ssize_t got = syscall(SYS_process_vm_readv, (pid_t)syscall(SYS_gettid), &local, 1UL, &remote,
                          1UL, 0UL);
    if (got == (ssize_t)len)
        return copy_buf;
    if (got < 0 && (errno == ENOSYS || errno == EPERM))
        return (const void *)addr; /* refused by a seccomp filter: read in place */
    return NULL;
}

/* mt_leak_region_fn for the process itself, from the maps read while the
 * other threads are stopped. */
static int region_self(void *ctx, uintptr_t addr, uintptr_t *end)
{
    const struct vec *maps = ctx;
    const struct mapping *m = (const struct mapping *)maps->p;
    size_t lo = 0, hi = maps->n; /* the first mapping ending above ADDR */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m[mid].hi <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == maps->n) {
        *end = 0;
        return MT_MEM_NONE;
    }
    if (m[lo].lo > addr) {
        *end = m[lo].lo;
        return MT_MEM_NONE;
    }
    *end = m[lo].hi;
    return m[lo].readable ? MT_MEM_READABLE : MT_MEM_UNREADABLE;
}

/* ------------------------------------------------------------ roots */

struct roots {
    struct vec regions; /* mt_leak_root */
    struct vec words;   /* uintptr_t: registers */
    bool failed;        /* a push found no memory: the verdict is not whole */
    uintptr_t linker_lo, linker_hi; /* the dynamic linker's code */
};

/* mt_leak_roots_sink.add: one more region (leak_roots.h decides which). */
static void push_region(void *ctx, const mt_leak_root *root)
{
    struct roots *r = ctx;
    mt_leak_root *p = vec_push(&r->regions);
    if (p)
        *p = *root;
    else
        r->failed = true;
}

/* The sink for R, reading through the maps MAPS. */
static mt_leak_roots_sink sink_of(struct roots *r, const struct vec *maps)
{
    return (mt_leak_roots_sink){ push_region, r, read_self, (void *)maps };
}

static void add_word(struct roots *r, uintptr_t w)
{
    uintptr_t *p = vec_push(&r->words);
    if (p)
        *p = w;
    else
        r->failed = true;
}

/* Whether one of INFO's executable segments holds ADDR. */
static bool module_holds(const struct dl_phdr_info *info, uintptr_t addr)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && addr >= lo &&
            addr - lo < ph->p_memsz)
            return true;
    }
    return false;
}

/* A module's roots (leak_roots.h): memtrace's own library is the one
 * holding this code, the allocator's the one holding the real malloc. */
static int add_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct roots *r = arg;
    if (module_holds(info, (uintptr_t)add_module))
        return 0;
    bool allocator = mt_real.malloc && module_holds(info, (uintptr_t)mt_real.malloc);
    bool linker = info->dlpi_addr == getauxval(AT_BASE);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (linker && ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            r->linker_lo = info->dlpi_addr + ph->p_vaddr;
            r->linker_hi = r->linker_lo + ph->p_memsz;
        }
    }
    mt_leak_roots_sink s = sink_of(r, NULL); /* reads nothing */
    mt_leak_roots_module(&s, info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum,
                         allocator ? MT_LEAK_MODULE_ALLOCATOR : MT_LEAK_MODULE_PROGRAM);
    return 0;
}

/* glibc's static TLS layout (x86-64 and aarch64 alike put the thread
 * pointer at the thread's descriptor): the static TLS block of a thread
 * spans [tp + tcb - static_size, tp + tcb) where static_size comes from
 * _dl_get_tls_static_info and tcb is the descriptor's size (struct pthread,
 * which also holds pthread_setspecific's first values); the descriptor's
 * second word is the DTV, whose entries point at the dynamic TLS blocks of
 * dlopened modules, and whose word before the first entry is its length.
 * Found as LeakSanitizer finds them (through glibc's private symbols),
 * before the threads are stopped. */
struct tls_layout {
    size_t static_size, tcb_size;
};

static struct tls_layout tls_layout(void)
{
    struct tls_layout t = { 0, 0 };
    void (*get)(size_t *, size_t *) =
        (void (*)(size_t *, size_t *))dlsym(RTLD_DEFAULT, "_dl_get_tls_static_info");
    const unsigned *tcb = dlsym(RTLD_DEFAULT, "_thread_db_sizeof_pthread");
    if (get) {
        size_t align;
        get(&t.static_size, &align);
    }
    t.tcb_size = tcb ? *tcb : 2304; /* glibc 2.3x's struct pthread on x86-64 */
    return t;
}

static void add_tls(struct roots *r, const struct vec *maps, const struct tls_layout *t,
                    uintptr_t tp, uint32_t tid)
{
    mt_leak_roots_sink s = sink_of(r, maps);
    mt_leak_roots_tls(&s, tp, t->tcb_size, t->static_size ? t->static_size : t->tcb_size, tid);
}

/* A stack from SP (RED_ZONE: less the red zone, which a leaf function may
 * use) to the end of the mapping holding it. */
static void add_stack(struct roots *r, const struct vec *maps, uintptr_t sp, bool red_zone,
                      uint32_t tid)
{
    const struct mapping *m = mapping_of(maps, sp);
    if (!m)
        return;
    mt_leak_roots_sink s = sink_of(r, maps);
    mt_leak_roots_stack(&s, sp, red_zone, m->lo, m->hi, tid);
}

/* ------------------------------------------------------------ threads */

struct stopped_thread {
    pid_t tid;
    mt_atomic(int) state; /* 0 sent, 1 stopped (the fields below are set), 2 gone on */
    /* The system call it waited in when signalled (see restart_call). */
    bool in_call;
    long nr;
    uintptr_t arg0, call_pc;
    uintptr_t sp, tp;
    unsigned nregs;
    uintptr_t regs[32];
};

#define MAX_STOPPED 4096
static struct stopped_thread *stopped;        /* mapped once, never unmapped */
static mt_atomic(size_t) nstopped;            /* entries the handler may look at */
static mt_atomic(int) released = 1;           /* the handler waits while 0 */
static pid_t stopper_pid;
static int stop_signal;

static long futex(mt_atomic(int) *word, int op, int val)
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

/* The stack pointer of thread TID if it waits in a system call, else 0. */
static uintptr_t syscall_sp(pid_t tid)
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
static void restart_call(const struct stopped_thread *t, ucontext_t *uc)
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
    if (si->si_code != SI_TKILL || si->si_pid != stopper_pid ||
        mt_atomic_load_acquire(&released)) {
        errno = saved;
        return;
    }
    pid_t tid = (pid_t)syscall(SYS_gettid);
    size_t n = mt_atomic_load_acquire(&nstopped); /* pairs with the release in stop_thread */
    struct stopped_thread *t = NULL;
    for (size_t i = 0; i < n; i++)
        if (stopped[i].tid == tid)
            t = &stopped[i];
    if (!t || mt_atomic_load_relaxed(&t->state) != 0) {
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
    mt_atomic_store_release(&t->state, 1); /* pairs with the acquire in wait_stopped */
    while (!mt_atomic_load_acquire(&released)) /* pairs with the release in resume_threads */
        futex(&released, FUTEX_WAIT_PRIVATE, 0);
    restart_call(t, ucv);
    mt_atomic_store_release(&t->state, 2);
    errno = saved;
}

/* A real-time signal with no handler of the program's (from the top: the
 * low ones are the popular ones), installed for good: a thread that had it
 * blocked gets it late, and the handler must still be there to ignore it. */
static int install_handler(void)
{
    struct sigaction sa, old;
    /* A forked child inherits the parent's: the same signal, still ours. */
    if (stop_signal && sigaction(stop_signal, NULL, &old) == 0 &&
        (old.sa_flags & SA_SIGINFO) && old.sa_sigaction == on_stop_signal)
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
    stopped[n] = (struct stopped_thread){ .tid = tid };
    if (tid == stopper_pid && leader_gone()) {
        /* main called pthread_exit: nothing of it is left to scan */
        mt_atomic_store_relaxed(&stopped[n].state, 2);
        mt_atomic_store_release(&nstopped, n + 1);
        return;
    }
    uintptr_t sp;
    stopped[n].in_call = read_syscall(tid, &stopped[n].nr, &stopped[n].arg0, &sp,
                                      &stopped[n].call_pc);
    mt_atomic_store_release(&nstopped, n + 1); /* pairs with the acquire in on_stop_signal */
    if (syscall(SYS_tgkill, stopper_pid, tid, stop_signal) != 0)
        mt_atomic_store_relaxed(&stopped[n].state, 2); /* gone already */
}

static bool stop_other(pid_t tid, void *self)
{
    /* memtrace's own threads hold no pointer of the program: neither
     * stopped (not waited for) nor scanned. */
    if (tid != *(pid_t *)self && !mt_threads_is_own(tid))
        stop_thread(tid);
    return true;
}

/* Signals every task but the caller, twice over the task list so that a
 * thread created meanwhile is caught; false if the list cannot be read. */
static bool stop_threads(pid_t self)
{
    for (int round = 0; round < 2; round++)
        if (!mt_os_each_task(stop_other, &self))
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
            all = mt_atomic_load_acquire(&stopped[i].state) != 0;
        if (all)
            return;
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
}

static void resume_threads(void)
{
    mt_atomic_store_release(&released, 1); /* pairs with the acquire in on_stop_signal */
    futex(&released, FUTEX_WAKE_PRIVATE, 1 << 30);
}

/* ------------------------------------------------------------ suppressions */

static char suppressions_path[1024];

/* Reads MEMTRACE_SUPPRESSIONS into a mapping of MT_SUPPRESSIONS_MAX
 * entries (*OUT, NULL if none); one warning for a file that cannot be read,
 * one per bad line (which is then ignored). Returns how many. */
static size_t load_suppressions(mt_suppression **out)
{
    *out = NULL;
    if (!suppressions_path[0])
        return 0;
    size_t len, mapped;
    char *text = read_file(suppressions_path, &len, &mapped);
    if (!text) {
        mt_warn("MEMTRACE_SUPPRESSIONS: cannot read %s (%s); no suppressions", suppressions_path,
                strerror(errno));
        return 0;
    }
    mt_suppression *s = map_bytes(MT_SUPPRESSIONS_MAX * sizeof *s);
    size_t n = s ? mt_suppressions_parse(suppressions_path, text, len, s) : 0;
    munmap(text, mapped);
    *out = s;
    return n;
}

static void copy_block(const mt_live_entry *e, void *ctx)
{
    struct vec *v = ctx;
    if (v->n == v->cap)
        return; /* more than counted: a thread was stopped inside insert */
    mt_leak_block *b = (mt_leak_block *)v->p + v->n++;
    const uintptr_t *frames;
    /* Stack 0 is a capture the store could not keep; any other id the
     * store never gave out comes from a damaged entry. */
    bool impossible = e->stack && !mt_stack_get(e->stack, &frames);
    *b = (mt_leak_block){ .ptr = e->ptr, .size = e->size, .stack = e->stack,
                          .flags = impossible ? MT_LEAK_FLAG_DAMAGED : 0 };
}

/* Marks the blocks the dynamic linker allocated (see MT_LEAK_FLAG_ROOT):
 * the innermost frame of their stack is in its code. */
static void flag_linker_blocks(mt_leak_block *b, size_t n, const struct roots *r)
{
    if (!r->linker_hi)
        return;
    for (size_t i = 0; i < n; i++) {
        const uintptr_t *frames;
        unsigned depth = mt_stack_get(b[i].stack, &frames);
        if (mt_leak_roots_linker_block(frames, depth, r->linker_lo, r->linker_hi))
            b[i].flags |= MT_LEAK_FLAG_ROOT;
    }
}

/* The allocator's heap of a process memtrace was attached to
 * (leak_roots.h): sorts B[0..N) by start for mt_leak_roots_heap. */
static void add_heap(struct roots *r, const struct vec *maps, mt_leak_block *b, size_t n)
{
    if (!(mt_atomic_load_relaxed(&mt_recording_state.ever_off) & MT_REC_ATTACHED))
        return;
    mt_leak_sort(b, n);
    mt_leak_roots_sink s = sink_of(r, maps);
    const struct mapping *m = (const struct mapping *)maps->p;
    for (size_t i = 0; i < maps->n; i++)
        if (m[i].readable)
            mt_leak_roots_heap(&s, m[i].lo, m[i].hi, b, n);
}

struct unstopped {
    pid_t tid;
    bool stack_scanned;
};

/* mt_leak_report_input's callbacks for the process itself. */
static unsigned stack_of(void *ctx, uint32_t id, const uintptr_t **frames)
{
    (void)ctx;
    mt_fmt_stack_ref s = mt_describe_stack_ref(id);
    *frames = s.frames;
    return s.depth;
}

static size_t match_self(void *ctx, const uintptr_t *frames, unsigned depth,
                         const mt_suppression *sup, size_t nsup)
{
    (void)ctx;
    if (!mt_sym_self_lock())
        return nsup;
    size_t found = mt_leak_match_frames(mt_sym_self(), true, frames, depth, sup, nsup);
    mt_sym_self_unlock();
    return found;
}

/* Everything the check writes (leak_report.c). Returns the lost bytes left
 * after the suppressions. */
static uint64_t report(mt_leak_block *blocks, size_t n, const mt_leak_totals *t, size_t nroots,
                       const struct unstopped *un, size_t nun, bool incomplete)
{
    mt_suppression *sup;
    size_t nsup = load_suppressions(&sup);
    mt_leak_note notes[64];
    size_t nnotes = 0;
    for (size_t i = 0; i < nun && nnotes < sizeof notes / sizeof *notes; i++)
        notes[nnotes++] = (mt_leak_note){
            (uint32_t)un[i].tid,
            un[i].stack_scanned ? "its stack was scanned from the stack pointer of its "
                                  "system call, its registers were not"
                                : "its stack, registers and TLS were not scanned" };
    mt_leak_report_input in = {
        .pid = (int)getpid(), .blocks = blocks, .nblocks = n, .totals = t, .nroots = nroots,
        .max_groups = SIZE_MAX, .sup = sup, .nsup = nsup,
        .stack = stack_of, .match = match_self, .put_stack = mt_describe_stack,
        .notes = notes, .nnotes = nnotes, .incomplete = incomplete || nnotes < nun,
    };
    mt_out o;
    bool own;
    mt_report_open(&o, &own);
    /* Blocks allocated while recording was off are not in the scan: say so
     * first, the summary line stays last. */
    mt_recording_say(&o);
    uint64_t lost = mt_leak_report(&o, &in);
    mt_report_close(&o, own);
    if (sup)
        munmap(sup, MT_SUPPRESSIONS_MAX * sizeof *sup);
    return lost;
}

/* ------------------------------------------------------------ the check */

/* The verdict of this process's scan, made once (scan_once) and then read
 * by the profiler's exit report (leak_classes_of) and written out by the
 * last exit handler. Only the exiting thread touches it. */
static struct {
    pid_t pid;              /* the process that made it; 0: none yet */
    bool scanned;           /* false: why_not says why there is no verdict */
    const char *why_not;
    struct vec blocks;      /* mt_leak_block, sorted by (stack, class) */
    mt_leak_totals t;
    size_t nroots;
    struct vec un;          /* struct unstopped */
    bool incomplete;
} verdict = { .blocks = { .item = sizeof(mt_leak_block) },
              .un = { .item = sizeof(struct unstopped) } };

/* The exiting thread's registers, as the exit handler found them (UC). */
static void add_context_registers(struct roots *r, const ucontext_t *uc)
{
    /* Only the callee-saved ones: the others are dead at the handler's
     * entry (it takes no argument) and hold what exit's code last left
     * in them, stale pointers included. */
#if defined(__x86_64__)
    static const int saved[] = { REG_RBX, REG_RBP, REG_R12, REG_R13, REG_R14, REG_R15 };
    for (unsigned k = 0; k < sizeof saved / sizeof *saved; k++)
        add_word(r, (uintptr_t)uc->uc_mcontext.gregs[saved[k]]);
#elif defined(__aarch64__)
    for (unsigned k = 19; k < 31; k++) /* x19-x28, the frame pointer, the link register */
        add_word(r, (uintptr_t)uc->uc_mcontext.regs[k]);
#else
    (void)r, (void)uc;
#endif
}

/* The thread pointer (pthread_self) memtrace's registry holds for kernel
 * thread TID, the newest registration first (a tid is reused after a
 * thread ends); 0 if it never allocated. For a thread that did not stop. */
static uintptr_t registered_tp(pid_t tid)
{
    const mt_thread_info *reg = mt_threads_registry();
    uint32_t n = reg ? mt_atomic_load_acquire(mt_threads_highest()) : 0;
    for (; n > 0 && n <= MT_THREADS_MAX; n--)
        if (reg[n - 1].tid == (uint32_t)tid)
            return (uintptr_t)reg[n - 1].self;
    return 0;
}

/* The stack pointer of the function that called exit (main's caller,
 * __libc_start_call_main, when main returned), found by unwinding the
 * calling thread up to exit's frame; 0 when exit is not on this stack (a
 * handler run otherwise). What lies below it is dead: the frames of main
 * (when it returned) and of everything main called, which exit, its
 * handlers and memtrace's own frames now reuse, their unwritten slots still
 * holding the stale pointers of the calls made there (the malloc that
 * returned a block now lost among them). valgrind and LeakSanitizer scan a
 * stack from its pointer as well, but their frames at exit do not overlay
 * the program's. The caller's callee-saved registers as they were at the
 * call (which exit's frames may have saved below that stack pointer) go to
 * REGS[0..*NREGS). */
static uintptr_t exit_caller_sp(uintptr_t regs[12], unsigned *nregs)
{
    *nregs = 0;
    unw_context_t ctx;
    unw_cursor_t c;
    if (unw_getcontext(&ctx) != 0 || unw_init_local(&c, &ctx) != 0)
        return 0;
    unw_word_t exit_fn = (unw_word_t)(uintptr_t)exit;
    for (int depth = 0; depth < 256 && unw_step(&c) > 0; depth++) {
        unw_proc_info_t pi;
        if (unw_get_proc_info(&c, &pi) != 0 || pi.start_ip != exit_fn)
            continue;
        unw_word_t sp;
        if (unw_step(&c) <= 0 || unw_get_reg(&c, UNW_REG_SP, &sp) != 0)
            return 0;
#if defined(__x86_64__)
        static const int saved[] = { UNW_X86_64_RBX, UNW_X86_64_RBP, UNW_X86_64_R12,
                                     UNW_X86_64_R13, UNW_X86_64_R14, UNW_X86_64_R15 };
#elif defined(__aarch64__)
        static const int saved[] = { UNW_AARCH64_X19, UNW_AARCH64_X20, UNW_AARCH64_X21,
                                     UNW_AARCH64_X22, UNW_AARCH64_X23, UNW_AARCH64_X24,
                                     UNW_AARCH64_X25, UNW_AARCH64_X26, UNW_AARCH64_X27,
                                     UNW_AARCH64_X28, UNW_AARCH64_X29 };
#else
        static const int saved[1] = { 0 };
        return 0;
#endif
        for (unsigned k = 0; k < sizeof saved / sizeof *saved && k < 12; k++) {
            unw_word_t v;
            if (unw_get_reg(&c, saved[k], &v) == 0)
                regs[(*nregs)++] = (uintptr_t)v;
        }
        return (uintptr_t)sp;
    }
    return 0;
}

/* Makes this process's verdict, once (a forked child makes its own). Call
 * inside memtrace (mt_enter) with cancellation disabled. The calling
 * thread's stack is scanned from STACK_FROM, the frame of the exit handler
 * that asks: what lies below it is memtrace's own frames, and dead frames
 * of the program's (main's among them) whose stale pointers would keep
 * lost blocks. UC holds the registers the handler was entered with (its
 * callers' callee-saved values; getcontext as the handler's first act). */
static MT_NOINLINE void scan_once(const ucontext_t *uc, uintptr_t stack_from)
{
    pid_t pid = getpid();
    if (verdict.pid == pid)
        return;
    vec_free(&verdict.blocks);
    vec_free(&verdict.un);
    verdict.pid = pid;
    pid_t self = (pid_t)syscall(SYS_gettid);
    stopper_pid = pid;

    struct roots r = { .regions = { .item = sizeof(mt_leak_root) },
                       .words = { .item = sizeof(uintptr_t) } };
    struct vec maps = { .item = sizeof(struct mapping) };
    struct vec *blocks = &verdict.blocks;
    uintptr_t caller_regs[12];
    unsigned ncaller_regs;
    uintptr_t caller_sp = exit_caller_sp(caller_regs, &ncaller_regs);
    /* Under the loader's lock, while no thread is stopped. */
    dl_iterate_phdr(add_module, &r);
    struct tls_layout tls = tls_layout();
    if (!stopped)
        stopped = map_bytes(MAX_STOPPED * sizeof *stopped);
    stop_signal = stopped ? install_handler() : 0;
    mt_atomic_store_relaxed(&nstopped, 0);
    mt_atomic_store_release(&released, 0);
    bool listed = stop_signal && stop_threads(self);
    wait_stopped();

    /* From here until resume_threads: no allocation, no lock without a
     * bound (a stopped thread may hold any). */
    bool ok = read_maps(&maps);
    size_t n = mt_atomic_load_relaxed(&nstopped);
    for (size_t i = 0; ok && i < n; i++) {
        struct stopped_thread *t = &stopped[i];
        int state = mt_atomic_load_acquire(&t->state);
        if (state == 1) {
            add_stack(&r, &maps, t->sp, true, (uint32_t)t->tid);
            for (unsigned k = 0; k < t->nregs; k++)
                add_word(&r, t->regs[k]);
            add_tls(&r, &maps, &tls, t->tp, (uint32_t)t->tid);
        } else if (state == 0) {
            struct unstopped *u = vec_push(&verdict.un);
            uintptr_t sp = syscall_sp(t->tid);
            if (u)
                *u = (struct unstopped){ t->tid, sp != 0 };
            if (sp)
                add_stack(&r, &maps, sp, true, (uint32_t)t->tid);
            add_tls(&r, &maps, &tls, registered_tp(t->tid), (uint32_t)t->tid);
        }
    }
    if (ok) {
        /* The exit handler's caller frames are live; when exit's caller
         * is known, only its frame and those above it are (no red zone:
         * it called exit). */
        uintptr_t from = caller_sp > stack_from ? caller_sp : stack_from;
        add_stack(&r, &maps, from, false, (uint32_t)self);
        for (unsigned k = 0; k < ncaller_regs; k++)
            add_word(&r, caller_regs[k]);
        add_context_registers(&r, uc);
        add_tls(&r, &maps, &tls, (uintptr_t)pthread_self(), (uint32_t)self);
    }
    size_t cap = mt_live_count() + 4096;
    blocks->p = map_bytes(cap * sizeof(mt_leak_block));
    blocks->cap = blocks->p ? cap : 0;
    bool unlocked = false;
    if (blocks->p) {
        mt_live_foreach(copy_block, blocks, &unlocked);
        flag_linker_blocks((mt_leak_block *)blocks->p, blocks->n, &r);
        if (ok)
            add_heap(&r, &maps, (mt_leak_block *)blocks->p, blocks->n);
    }
    mt_leak_input in = {
        .blocks = (mt_leak_block *)blocks->p, .nblocks = blocks->n,
        .roots = (const mt_leak_root *)r.regions.p, .nroots = r.regions.n,
        .words = (const uintptr_t *)r.words.p, .nwords = r.words.n,
        .read = read_self, .read_ctx = &maps, .region = region_self,
    };
    verdict.scanned = ok && blocks->p && mt_leak_scan(&in, &verdict.t);
    if (verdict.scanned)
        blocks->n -= verdict.t.damaged; /* the dropped entries are past the kept ones */
    resume_threads();

    verdict.why_not = !ok ? "/proc/thread-self/maps could not be read" : "no memory for its tables";
    verdict.nroots = r.regions.n;
    verdict.incomplete = r.failed || !listed;
    if (verdict.scanned)
        mt_leak_sort_by_stack((mt_leak_block *)blocks->p, blocks->n);
    vec_free(&r.regions);
    vec_free(&r.words);
    vec_free(&maps);
}

/* The profiler's exit handler asks (mt_profiler_set_leak_hooks). */
static void leak_scan_for_profiler(const ucontext_t *uc, uintptr_t stack_from)
{
    int cancel;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    int was = mt_enter();
    scan_once(uc, stack_from);
    mt_leave(was);
    pthread_setcancelstate(cancel, NULL);
}

static bool leak_classes_of(uint32_t stack, uint64_t bytes[4])
{
    bytes[0] = bytes[1] = bytes[2] = bytes[3] = 0;
    if (verdict.pid != getpid() || !verdict.scanned)
        return false;
    const mt_leak_block *b = (const mt_leak_block *)verdict.blocks.p;
    size_t lo = 0, hi = verdict.blocks.n; /* the first block of STACK */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b[mid].stack < stack)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < verdict.blocks.n && b[i].stack == stack; i++)
        bytes[b[i].class] += b[i].size;
    return true;
}

static mt_atomic(pid_t) checked_by;

/* The last exit handler's work: the verdict (made now unless the
 * profiler's exit report made it), the report, and the status. */
static MT_NOINLINE void leak_check(const ucontext_t *uc, uintptr_t stack_from)
{
    pid_t pid = getpid();
    if (mt_atomic_exchange_acq_rel(&checked_by, pid) == pid)
        return; /* each process once; a forked child checks for itself */
    int cancel;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    int was = mt_enter();
    scan_once(uc, stack_from);
    uint64_t lost = 0;
    if (!verdict.scanned)
        mt_warn("leaks: the leak check could not run (%s); no verdict", verdict.why_not);
    else
        lost = report((mt_leak_block *)verdict.blocks.p, verdict.blocks.n, &verdict.t,
                      verdict.nroots, (const struct unstopped *)verdict.un.p, verdict.un.n,
                      verdict.incomplete);
    mt_leave(was);
    pthread_setcancelstate(cancel, NULL);
    if (lost && mt_cfg.leak_exitcode) {
        /* As LeakSanitizer: the status says leaks remain. What the program
         * wrote to stdio buffers still goes out first. */
        fflush(NULL);
        _exit(mt_cfg.leak_exitcode);
    }
}

static void leak_check_at_exit(void)
{
    ucontext_t uc;
    if (getcontext(&uc) != 0) /* first, while the callers' registers are intact */
        memset(&uc, 0, sizeof uc);
    leak_check(&uc, (uintptr_t)__builtin_frame_address(0));
}

void mt_leak_check_register(void)
{
    mt_setting_path(MT_SET_SUPPRESSIONS, suppressions_path, sizeof suppressions_path,
                    "no suppressions");
    atexit(leak_check_at_exit);
    static const mt_leak_hooks hooks = { leak_scan_for_profiler, leak_classes_of };
    mt_profiler_set_leak_hooks(&hooks);
}
