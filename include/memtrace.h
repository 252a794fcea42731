/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memtrace public API: functions exported by libmemtrace.so and
 * libmemtrace-profiler.so. Everything else in the libraries is hidden.
 * They are meant to be called from a debugger ("call print_trace(p)") or by a
 * program that wants to ask about its own heap, or tell memtrace about it.
 *
 * A program that may run without memtrace: every function here is
 * declared weak, and a macro of the same name calls it only when it is
 * defined, so a program built with this header links without -lmemtrace
 * and runs as ever until it runs under memtrace (LD_PRELOAD, the
 * launcher), when the calls are memtrace's. Without memtrace each call
 * does nothing and returns 0 (NULL for memtrace_version; a stats struct
 * is zeroed). Built with -lmemtrace, they are memtrace's always. Define
 * MEMTRACE_NO_WEAK before the include for plain declarations and no
 * macros (the program must then link with -lmemtrace).
 *
 * Not part of the API: memtrace_attach and memtrace_detach, which the
 * library also exports, are the launcher's (`memtrace attach`) and are
 * called by it alone, from gdb, in a process it stopped. */
#ifndef MEMTRACE_H
#define MEMTRACE_H

#include <stddef.h> /* size_t */

#if defined(MEMTRACE_DEFINING) || defined(MEMTRACE_NO_WEAK)
#define MEMTRACE_WEAK_
#else
#define MEMTRACE_WEAK_ __attribute__((weak))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Print, on file descriptor 2, where the heap block PTR was allocated: one
 * header line (address, block size, allocating thread, allocation number)
 * followed by the call stack, one frame a line, with function (demangled),
 * file:line:column and every inlined frame, or module+offset for code without
 * debug information. A PTR that is not a live block memtrace knows gets one
 * line that says so. Never allocates from the traced heap and never waits for
 * a lock that the allocation path holds for long, so it is safe to call from
 * gdb while other threads are stopped anywhere, including inside malloc; if
 * the table shard holding PTR is being modified by a stopped thread, the
 * answer is read without the lock and says so. Returns nothing; all output is
 * written with write(2). */
void print_trace(const void *ptr) MEMTRACE_WEAK_;

/* The function print_trace names: print_trace is its alias, the
 * spelling gdb users know (the same code, the same answer). */
void memtrace_print_trace(const void *ptr) MEMTRACE_WEAK_;

/* Counts at one moment.
 *
 * How this struct evolves (the ABI): fields are only ever added at the
 * end, and every call says how large the caller's struct is, so that a
 * library never writes past it: memtrace_get_stats_sized takes the size,
 * and the memtrace_get_stats macro below passes sizeof for the caller. The
 * exported function memtrace_get_stats itself, which programs built
 * against the first header (memtrace 0.1.0, up to `recording`) call, fills
 * only those first five fields, for good. */
struct memtrace_stats {
    unsigned long live_blocks;      /* blocks recorded and not yet freed */
    unsigned long live_bytes;       /* their requested sizes, summed */
    unsigned long stacks;           /* distinct allocation stacks stored */
    unsigned long metadata_bytes;   /* memory memtrace mapped for its tables */
    int recording;                  /* 0 while no new block is recorded: turned
                                       off (memtrace_set_recording), or stopped
                                       for good (see stderr) */
    unsigned long unwind_fallbacks; /* stack captures memtrace's own (cfi)
                                       unwinder could not make, made by
                                       libunwind instead (MEMTRACE_UNWIND) */
};

/* Fills the first SIZE bytes of *OUT (pass sizeof *OUT): the fields this
 * library knows that fit, and zeros past them (fields of a newer header).
 * Returns how many bytes the library filled, sizeof its own struct at
 * most, so a caller built against a newer header knows which fields an
 * older library left at 0. Exact when no other thread is allocating;
 * otherwise each count is exact for some moment during the call. Never
 * allocates. Through dlsym, ask for this name. */
size_t memtrace_get_stats_sized(struct memtrace_stats *out, size_t size) MEMTRACE_WEAK_;

/* The exported function fills the first five fields only (the first
 * header's struct); the macro fills every field of this header's. */
void memtrace_get_stats(struct memtrace_stats *out) MEMTRACE_WEAK_;

/* Profiler build (libmemtrace-profiler.so): writes a report now, in the
 * calling thread, to MEMTRACE_OUTPUT (stderr by default): the top
 * MEMTRACE_TOP call sites by live bytes, largest last, each with its exact
 * live bytes and blocks, what it allocated and freed since the previous
 * report, and its symbolized stack. Returns when the report is written.
 * Safe from any thread; waits while another report is being written. Not
 * async-signal-safe (use MEMTRACE_SIGNAL for that). In the tracer build
 * (libmemtrace.so) it writes one line saying reports need the profiler. */
void memtrace_report(void) MEMTRACE_WEAK_;

/* Turns recording on (ON nonzero) or off. While off, new blocks are not
 * recorded and are unknown for good: print_trace knows nothing of them,
 * their frees pass through untouched and are never reported as bad; the
 * records of blocks allocated while on still leave when they are freed.
 * The same as MEMTRACE_TOGGLE_SIGNAL; MEMTRACE_START=0 starts off. Every
 * answer and report then says since when memtrace records. Returns what
 * recording was before the call, 1 on or 0 off, or -1 when it cannot
 * change (recording stopped for good after a failed metadata mapping).
 * Safe from any thread and from a signal handler; never allocates. */
int memtrace_set_recording(int on) MEMTRACE_WEAK_;

/* 1 while new blocks are recorded, else 0. */
int memtrace_recording(void) MEMTRACE_WEAK_;

/* The library's version, as "memtrace --version" prints it ("0.1.0"). */
const char *memtrace_version(void) MEMTRACE_WEAK_;

/* Checks the heap now: every live block's redzone (the bytes after its
 * end, MEMTRACE_REDZONE) and every freed block held in quarantine
 * (MEMTRACE_QUARANTINE) that memtrace can read without waiting on
 * another thread. Each damaged block gets a report on stderr, as at its
 * free ("memtrace: heap-buffer-overflow: ..." or "memtrace:
 * write-after-free: ..." and the stacks); returns how many. Safe from any
 * thread; not from a signal handler. */
int memtrace_check(void) MEMTRACE_WEAK_;

/* Called after every heap error or bad free report, before MEMTRACE_ON_ERROR=abort
 * aborts: `break memtrace_on_error` in gdb stops at the moment of
 * detection. Does nothing itself. */
void memtrace_on_error(void) MEMTRACE_WEAK_;

/* Tag scopes: named scopes a thread enters and leaves, nesting into a
 * tree per thread; memtrace counts every allocation in the current scope
 * of the thread that makes it (bytes and blocks live, allocations and
 * frees; a free counts against the scope the block was allocated in,
 * whichever thread frees it). MEMTRACE_TAGS=PATH writes the trees to
 * PATH.json and PATH.dot; `memtrace tags` in gdb prints them.
 *
 * memtrace_tag_push(NAME) enters scope NAME (1 to 47 bytes; copied) under
 * the thread's current one; memtrace_tag_pop() leaves it. Each returns 0,
 * or -1 after one "memtrace:" line on stderr when the call is refused and
 * nothing changed: a NULL, empty or longer name, more than 64 scopes open
 * on the thread, a pop with no scope entered, the table full (65,535
 * scopes in all). Safe from any thread; never allocates from the traced
 * heap; not from a signal handler. */
int memtrace_tag_push(const char *name) MEMTRACE_WEAK_;
int memtrace_tag_pop(void) MEMTRACE_WEAK_;

/* 1 when the calling process runs under memtrace (the tracer or the
 * profiler, preloaded or attached), 0 otherwise: valgrind's
 * RUNNING_ON_VALGRIND. Never allocates; safe from a signal handler. */
int memtrace_running(void) MEMTRACE_WEAK_;

/* A program's own allocator (a pool, an arena, a free list carved from
 * one big block) tells memtrace about its blocks, as valgrind's
 * VALGRIND_MALLOCLIKE_BLOCK and FREELIKE_BLOCK do.
 *
 * memtrace_malloclike(P, SIZE): the SIZE bytes at P are a block now,
 * allocated by the caller: recorded with the caller's stack as malloc's
 * blocks are, so that print_trace, `memtrace EXPR`, `memtrace top`, the
 * leak check, pprof profiles and MEMTRACE_RECORD timelines know it. It
 * gets no redzone and is never checked for one, never quarantined, and
 * memtrace never hands it to the real allocator: free, realloc or delete
 * of it is reported as a mismatched free and does nothing. A block may lie
 * in memory of another block (a pool malloc'd whole) or in any mapping:
 * for the leak check, a heap block that holds such blocks is the pool's
 * storage, not a block of its own, and is left out of the verdict, as
 * valgrind does (what the pool's blocks point to is still followed).
 * P NULL does nothing. A P already recorded replaces its record.
 *
 * memtrace_freelike(P): the block P starts is freed. P must be a block
 * memtrace_malloclike recorded; any other address (never recorded,
 * freed already, a block of malloc's) is a bad free, reported as free's
 * are (one report with both stacks when memtrace has them), and nothing
 * changes. P NULL does nothing.
 *
 * Both are safe from any thread; not from a signal handler. Recording off
 * (memtrace_set_recording), both do nothing. */
void memtrace_malloclike(const void *p, size_t size) MEMTRACE_WEAK_;
void memtrace_freelike(const void *p) MEMTRACE_WEAK_;

/* Runs the leak check now (MEMTRACE_LEAK_CHECK's, LeakSanitizer's
 * __lsan_do_recoverable_leak_check): stops the other threads briefly,
 * scans, writes the report to MEMTRACE_OUTPUT as at exit (suppressions
 * applied) and returns the bytes definitely and indirectly lost that no
 * suppression covers; the program goes on. May be called any number of
 * times; the check at exit, when on, still runs. The calling thread's
 * stack is scanned from this call's frame up, with its registers. Returns
 * 0 after one "memtrace:" line when the check cannot run. Safe from any
 * thread; not from a signal handler. */
size_t memtrace_leak_check(void) MEMTRACE_WEAK_;

/* The live block P points into (its start or any byte of it) is never
 * reported lost, nor what only it reaches: it is held as the roots hold
 * what they point to (LeakSanitizer's __lsan_ignore_object). Lasts the
 * block's life: a new block at the same address is checked again. An
 * address in no live block memtrace knows gets one "memtrace:" line and
 * changes nothing. Safe from any thread; not from a signal handler. */
void memtrace_ignore_object(const void *p) MEMTRACE_WEAK_;

/* The SIZE bytes at P are scanned as a root by every leak check from now
 * on (memory the scan does not see otherwise: a mapping of the program's,
 * a pool's storage), until memtrace_unregister_root_region(P, SIZE)
 * removes them (LeakSanitizer's __lsan_register_root_region). A region
 * that overlaps one registered already is registered too, after one
 * "memtrace:" line (what lies in both is scanned twice, harmlessly); an
 * unregister of a region not registered with exactly that P and SIZE gets
 * one "memtrace:" line and changes nothing, as does a register past the
 * table's 1024 regions. Bytes of a region that cannot be read when a
 * check runs are counted unreadable and skipped. Safe from any thread;
 * not from a signal handler. */
void memtrace_register_root_region(const void *p, size_t size) MEMTRACE_WEAK_;
void memtrace_unregister_root_region(const void *p, size_t size) MEMTRACE_WEAK_;

/* The calls, for a program built without -lmemtrace (see the top). Each
 * name is also a function-like macro, so its address (&print_trace, a
 * dlsym) is the function's, or NULL without memtrace. */
#if !defined(MEMTRACE_DEFINING) && !defined(MEMTRACE_NO_WEAK)
static inline size_t memtrace_absent_stats_(struct memtrace_stats *out, size_t size)
{
    unsigned char *b = (unsigned char *)out;
    for (size_t i = 0; i < size; i++)
        b[i] = 0;
    return 0;
}
static inline void memtrace_absent_(void) {}
#define print_trace(ptr) (print_trace ? (print_trace)(ptr) : memtrace_absent_())
#define memtrace_print_trace(ptr) \
    (memtrace_print_trace ? (memtrace_print_trace)(ptr) : memtrace_absent_())
#define memtrace_get_stats_sized(out, size)                               \
    (memtrace_get_stats_sized ? (memtrace_get_stats_sized)((out), (size)) \
                              : memtrace_absent_stats_((out), (size)))
#define memtrace_report() (memtrace_report ? (memtrace_report)() : memtrace_absent_())
#define memtrace_set_recording(on) (memtrace_set_recording ? (memtrace_set_recording)(on) : 0)
#define memtrace_recording() (memtrace_recording ? (memtrace_recording)() : 0)
#define memtrace_version() (memtrace_version ? (memtrace_version)() : (const char *)0)
#define memtrace_check() (memtrace_check ? (memtrace_check)() : 0)
#define memtrace_on_error() (memtrace_on_error ? (memtrace_on_error)() : memtrace_absent_())
#define memtrace_tag_push(name) (memtrace_tag_push ? (memtrace_tag_push)(name) : 0)
#define memtrace_tag_pop() (memtrace_tag_pop ? (memtrace_tag_pop)() : 0)
#define memtrace_running() (memtrace_running ? (memtrace_running)() : 0)
#define memtrace_malloclike(p, size) \
    (memtrace_malloclike ? (memtrace_malloclike)((p), (size)) : memtrace_absent_())
#define memtrace_freelike(p) (memtrace_freelike ? (memtrace_freelike)(p) : memtrace_absent_())
#define memtrace_leak_check() (memtrace_leak_check ? (memtrace_leak_check)() : (size_t)0)
#define memtrace_ignore_object(p) \
    (memtrace_ignore_object ? (memtrace_ignore_object)(p) : memtrace_absent_())
#define memtrace_register_root_region(p, size)                                    \
    (memtrace_register_root_region ? (memtrace_register_root_region)((p), (size)) \
                                   : memtrace_absent_())
#define memtrace_unregister_root_region(p, size)                                      \
    (memtrace_unregister_root_region ? (memtrace_unregister_root_region)((p), (size)) \
                                     : memtrace_absent_())
#endif
/* Every field of this header's struct (the exported function of the same
 * name fills the first five only: see memtrace_get_stats_sized). */
#define memtrace_get_stats(out) ((void)memtrace_get_stats_sized((out), sizeof *(out)))

#ifdef __cplusplus
}

namespace memtrace {
/* The scope NAME for the life of the object:
 *     { memtrace::tag_scope scope("parser"); parse(text); }
 * enters it when made and leaves it when destroyed (a scope that was
 * refused is not left). */
class tag_scope {
public:
    explicit tag_scope(const char *name) noexcept : entered_(memtrace_tag_push(name) == 0) {}
    ~tag_scope()
    {
        if (entered_)
            memtrace_tag_pop();
    }
    tag_scope(const tag_scope &) = delete;
    tag_scope &operator=(const tag_scope &) = delete;

private:
    bool entered_;
};
} // namespace memtrace
#endif

#endif
