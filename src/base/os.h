/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Metadata memory straight from the kernel. Every byte memtrace keeps for
 * itself comes through here, never from the allocator being traced. */
#ifndef MT_OS_H
#define MT_OS_H

#include <stdbool.h>
#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <ucontext.h>

/* Zeroed, readable and writable pages; NULL (never MAP_FAILED) on failure.
 * WHAT names the structure for the one-time "stopped recording" warning. */
void *mt_os_map(size_t size, const char *what);
/* Gives the pages of [P, P+SIZE) back to the kernel but keeps the range
 * mapped: a late reader finds zeros instead of a fault. */
void mt_os_retire(void *p, size_t size);
/* Address space only (PROT_NONE, not committed), for regions that grow in
 * place with mt_os_commit. NULL on failure. The range is left out of core
 * dumps (MADV_DONTDUMP) until committed: a committed part is in them
 * (MADV_DODUMP); a part made writable otherwise must be put back the same
 * way. */
void *mt_os_reserve(size_t size, const char *what);
int mt_os_commit(void *p, size_t size, const char *what);
/* In sample mode (MEMTRACE_SAMPLE), keeps [P, P+SIZE) off transparent huge
 * pages. Sampling's metadata is a few pages touched here and there in
 * ranges of megabytes (the shadow, the freed history, the thread
 * registry, the internal heap), and where THP is "always" (the kernel
 * default of several distributions) each first touch of an aligned 2 MiB
 * would cost 2 MiB: churn's peak sampled was 43.2 MB instead of 33.9 MB
 * with them all advised so. Full mode keeps the system's policy. Applied by
 * mt_os_map and mt_os_reserve to their ranges; call it on metadata mapped
 * otherwise. */
void mt_os_no_huge_pages(void *p, size_t size);

size_t mt_os_page_size(void);

/* From one of memtrace's exit handlers: the process is to end with STATUS
 * (leaks found, heap errors reported). Calls exit(STATUS) from inside the
 * exit in progress, which glibc allows: the handlers not run yet run, then
 * glibc's own stdio flush, which takes no stream's lock (a thread waiting
 * in fgets(stdin) holds stdin's: fflush(NULL) would wait for it forever),
 * then _exit with the last status asked. Only the first call of a process
 * does so; later ones return at once (the first reason wins). Never
 * returns otherwise. */
void mt_os_exit_with(int status);

/* A stack of memtrace's own, its address space taken once (at start-up),
 * for work deeper than the calling thread may have room for: the main
 * thread's stack grows on demand, and a process at its address-space limit
 * (ulimit -v) cannot grow it, so a report that symbolizes (libdw's line
 * tables take tens of KiB of stack) would die of SIGSEGV there. The lowest
 * page is a guard. Not counted as a metadata request (MEMTRACE_FAULT_MAP)
 * and never a reason to stop recording: without it the work runs on the
 * caller's stack. */
typedef struct {
    char *base;  /* NULL: not reserved */
    size_t size; /* with the guard page */
    int busy;    /* atomic: one user at a time */
    void (*fn)(void *);
    void *arg;
    ucontext_t back, there; /* of the switch in progress (busy) */
} mt_os_stack;

/* The one such stack for memtrace's answers and reports made in the
 * program's threads (print_trace, memtrace_report, the exit report),
 * MT_OWN_STACK_SIZE bytes reserved by mt_start. */
#define MT_OWN_STACK_SIZE ((size_t)4 << 20)
extern mt_os_stack mt_own_stack;

/* Maps S's SIZE bytes (a whole number of pages); false on failure. */
bool mt_os_stack_reserve(mt_os_stack *s, size_t size);
/* Runs FN(ARG) on S and returns when it does; on the caller's own stack
 * when S is not reserved or another thread is using it. FN must return
 * (no longjmp out of it). */
void mt_os_on_stack(mt_os_stack *s, void (*fn)(void *), void *arg);

/* Calls FN(TID, CTX) for each thread of the process, as /proc/self/task
 * lists them (memtrace's own and zombies included), until FN returns
 * false. False when the list cannot be read. Uses no heap. */
bool mt_os_each_task(bool (*fn)(pid_t tid, void *ctx), void *ctx);
/* The same for process PID's threads (/proc/PID/task; 0: this process). */
bool mt_os_each_task_of(pid_t pid, bool (*fn)(pid_t tid, void *ctx), void *ctx);

/* /proc/PID/maps, one line at a time, with no heap and no libc lock: for
 * the leak check (while the other threads are stopped), a thread's first
 * capture (stack_bounds.c), the symbolizer and memtrace-symbolize alike.
 * A line is "START-END PERMS OFFSET MAJOR:MINOR INODE [PATH]"; the path
 * runs to the end of the line, spaces included. */
typedef struct {
    uintptr_t start, end; /* [start, end) */
    char perms[5];        /* "r-xp": read, write, execute, p(rivate) or s(hared) */
    uint64_t offset;      /* in the file */
    uint64_t inode;       /* 0: not a file's */
    const char *path;     /* PATH_LEN bytes, not NUL-terminated: "/usr/lib/x.so",
                           * "[stack]", "[vvar]"; empty for anonymous memory */
    size_t path_len;      /* without the kernel's " (deleted)" */
    bool deleted;         /* the path ended in " (deleted)": the file is gone */
    bool truncated;       /* the line was longer than the buffer: PATH is its
                           * start, and LINE holds the buffer's worth */
    const char *line;     /* the line as read, its newline included if it has one */
    size_t line_len;
} mt_os_mapping;

/* The iterator's state: the caller's buffer and where it is in it. */
typedef struct {
    int fd;          /* -1: over a text already read */
    const char *buf; /* [at, have) not yet parsed */
    char *wbuf;      /* the caller's buffer (fd), else NULL */
    size_t size, at, have;
    bool eof, skipping; /* skipping: inside the rest of a truncated line */
    bool failed;        /* a read failed: what came before it was yielded */
} mt_os_maps;

/* Over the maps file open at FD (read with raw read(2) calls: no
 * cancellation point), through the caller's BUF[SIZE]; a line longer than
 * SIZE comes truncated (mt_os_mapping.truncated). The caller closes FD. */
void mt_os_maps_fd(mt_os_maps *m, int fd, char *buf, size_t size);
/* Over TEXT[LEN], whole maps already read; the mappings point into it. */
void mt_os_maps_text(mt_os_maps *m, const char *text, size_t len);
/* The next mapping into *OUT, valid until the next call; false at the end
 * (M->failed: a read failed). Lines that are no mapping are skipped. */
bool mt_os_maps_next(mt_os_maps *m, mt_os_mapping *out);
/* Opens the calling thread's maps with raw system calls: the fd, or -1.
 * Through /proc/thread-self, not /proc/self: once main has called
 * pthread_exit, /proc/self is a zombie's, whose maps are empty. */
int mt_os_maps_open_self(void);
/* Opens process PID's maps (0: this process, mt_os_maps_open_self) with
 * raw system calls: /proc/PID/maps, or, when it is empty (PID's main
 * thread has called pthread_exit: a zombie's maps are empty), the first
 * of its other threads' /proc/PID/task/TID/maps that is not; else the
 * empty one. The fd, or -1. The one way memtrace and memtrace-symbolize
 * find a process's maps. */
int mt_os_maps_open(pid_t pid);

/* CLOCK_MONOTONIC in nanoseconds (the vDSO: no system call, no lock). */
static inline uint64_t mt_os_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A clock for ordering events of different threads, cheap enough for the
 * hot path: the time-stamp counter on x86-64 (constant-rate and the same
 * on every CPU on the processors of the last 15 years; a few cycles of
 * skew between CPUs at most), CLOCK_MONOTONIC's nanoseconds elsewhere. Its
 * unit is not fixed: compare its values, nothing more. */
static inline uint64_t mt_os_ticks(void)
{
#if defined(__x86_64__)
    return __builtin_ia32_rdtsc();
#else
    return mt_os_now_ns();
#endif
}

#endif
