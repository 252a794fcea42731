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
 * place with mt_os_commit. NULL on failure. */
void *mt_os_reserve(size_t size, const char *what);
int mt_os_commit(void *p, size_t size, const char *what);

size_t mt_os_page_size(void);

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

/* CLOCK_MONOTONIC in nanoseconds (the vDSO: no system call, no lock). */
static inline uint64_t mt_os_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
