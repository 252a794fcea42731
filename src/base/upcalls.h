/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Every call from a lower layer into a higher one (doc/design.adoc,
 * "Layers"), declared here and nowhere else. The layers are base < stores
 * < hot path < slow path, by folder; a lower file may not include a higher
 * one's header, yet a few things only a higher layer can do must happen
 * from below. Each is declared here with why; the higher layer defines it.
 * tests/static/layers.py reads the built objects' symbols (nm) and fails
 * on any reference from a lower layer's object to a symbol a higher
 * layer's object defines that is not declared in this file.
 *
 * Base only: this header includes nothing of memtrace, so any layer may
 * include it. */
#ifndef MT_UPCALLS_H
#define MT_UPCALLS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct mt_live_entry; /* store/live_table.h's mt_live_entry */

/* Hot path (capture/malloc.c) -> slow path (runtime/startup.c).
 * Looks up the real allocator and sets everything up, once. Called by the
 * hot path on a call that finds the phase UNINIT, outside memtrace
 * (mt_busy clear): memtrace starts on the program's first allocation,
 * whichever comes first of that and the library's constructor, and only
 * start-up knows the settings, the tables and the reports to set up. */
void mt_start(void);

/* Hot path (capture/record.h) -> slow path (runtime/startup.c).
 * Fills mt_ext (capture/state.h) on the first call of an entry point beyond
 * the C allocator's (aligned_alloc, the C++ operators, ...): dlsym is
 * start-up's business, and the names cannot be looked up at start-up (a
 * C++ runtime or an allocator may be loaded after the first malloc). Sets
 * mt_ext_ready (release; the hot path acquires it before reading mt_ext).
 * Racing lookups store the same values. */
void mt_ext_lookup(void);

/* Hot path (capture/record.h, malloc.c) -> slow path (report/bad_free.c).
 * A free the live table cannot match: PTR is no live block's start (FOUND
 * NULL), or FOUND, its record (already removed), was allocated by another
 * family than the free's KIND (MT_KIND_*, with MT_FREE_BY_REALLOC added
 * when the call is realloc's). Says so if it is a double free, a free
 * inside a block or a mismatched pair (the freed history, the symbolizer
 * and the formatter: all slow path); the caller then hands the call to the
 * real allocator unchanged. Called with mt_busy clear, in the READY
 * phase, before the real free; a report counts as an error
 * (mt_error_reported), and MEMTRACE_BAD_FREE=quiet makes none. */
#define MT_FREE_BY_REALLOC 0x100u
void mt_bad_free(const void *ptr, unsigned kind, const struct mt_live_entry *found);

/* Hot path (capture/: the redzone and quarantine checks; the guard
 * pages' fault handler) -> slow path (report/heap_error.c).
 * A heap error a check found: the report (symbolizer and formatter, both
 * slow path; report/format.h's mt_fmt_heap_error says the text), counted
 * for the exit status (MEMTRACE_ERROR_EXITCODE), then memtrace_on_error()
 * and MEMTRACE_ON_ERROR (abort). Called with mt_busy clear, from the
 * thread that found it. KIND and ACCESS are format.h's MT_HEAP_* values;
 * OFFSET is the first bad byte's from PTR (>= SIZE past the end, < 0
 * before the start), BYTES how many from there (at least 1). WHERE names
 * what found it ("free", "realloc", "exit", "memtrace_check", "a fault").
 * FRAMES, DEPTH: the detecting stack, innermost first; NULL to have it
 * captured by the report, in this thread. A freed block (FREED) has its
 * free's stack and thread; stacks are stack-store ids (0: none). */
enum { MT_HEAP_OVERFLOW, MT_HEAP_UNDERFLOW, MT_HEAP_WRITE_AFTER_FREE, MT_HEAP_USE_AFTER_FREE };
enum { MT_HEAP_ACCESS_UNSEEN, MT_HEAP_READ, MT_HEAP_WRITE };
struct mt_heap_error {
    int kind, access;
    uintptr_t ptr;
    uint64_t size;
    int64_t offset;
    uint64_t bytes;
    int at_least, freed;
    uint64_t alloc_seq, free_seq;
    uint32_t alloc_stack, free_stack, alloc_thread, free_thread;
    const char *where;
    const uintptr_t *frames;
    unsigned depth;
    /* The caller calls mt_error_reported (report/heap_error.h: the count,
     * memtrace_on_error, MEMTRACE_ON_ERROR's abort) itself, once back on
     * the faulting thread's stack (the guard pages' fault handler reports
     * on memtrace's own: an abort there leaves a core without the
     * program's frames). */
    int caller_counts;
};
void mt_heap_error_report(const struct mt_heap_error *e);
/* Base (base/os.c) -> slow path (runtime/startup.c).
 * A metadata mapping failed: called once per failed request with the
 * structure's name, the size and errno. The policy (stop recording, say so
 * once) is start-up's, which owns the phase; base/os.c has a weak default
 * that only warns, for the unit tests and memtrace-symbolize, which link
 * base without start-up. */
void mt_metadata_failed(const char *what, size_t size, int err);

/* Hot path (capture/interposed.def: the interposed names) -> slow path
 * (runtime/guard_signal.c, children.c, startup.c). The library defines
 * every name it interposes in one place, the hot path's; these few need
 * the slow path's state, and are called only through the interposed names
 * (never from an allocation or a free).
 *
 * sigaction and the signal family: for SIGSEGV while the guard pages'
 * handler is installed, they set and answer the program's action, which
 * the handler calls (or whose default it takes) after memtrace's report;
 * everything else goes to libc's, with its results and errno.
 * mt_sighandler is signal.h's __sighandler_t. */
typedef void (*mt_sighandler)(int);
int mt_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
mt_sighandler mt_signal(int sig, mt_sighandler handler);
mt_sighandler mt_bsd_signal(int sig, mt_sighandler handler);
mt_sighandler mt_sysv_signal(int sig, mt_sighandler handler);
mt_sighandler mt_sigset(int sig, mt_sighandler disp);
int mt_sigignore(int sig);
/* The exec family: the real function, with the memtrace entries handed on
 * when the process itself execs under MEMTRACE_CHILDREN=0 (children.c).
 * execv, execvp and the execl forms come here with environ. */
int mt_execve(const char *path, char *const argv[], char *const envp[]);
int mt_execvpe(const char *file, char *const argv[], char *const envp[]);
int mt_fexecve(int fd, char *const argv[], char *const envp[]);
/* unshare and setns: the kernel refuses unshare(CLONE_NEWUSER) (and the
 * other flags that unshare the thread group) and every setns but to a
 * single-threaded process, so memtrace's own threads are stopped around
 * the real call (mt_profiler_pause). Results and errno are the real
 * call's. */
int mt_unshare(int flags);
int mt_setns(int fd, int nstype);

#endif
