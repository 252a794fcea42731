/* memtrace public API: functions exported by libmemtrace.so and
 * libmemtrace-profiler.so. Everything else in the libraries is hidden.
 * They are meant to be called from a debugger ("call print_trace(p)") or by a
 * program that wants to ask about its own heap. */
#ifndef MEMTRACE_H
#define MEMTRACE_H

#include <stddef.h> /* size_t */

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
void print_trace(const void *ptr);

/* The same as print_trace, under the library's own prefix. */
void memtrace_print_trace(const void *ptr);

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
    unsigned long live_blocks;    /* blocks recorded and not yet freed */
    unsigned long live_bytes;     /* their requested sizes, summed */
    unsigned long stacks;         /* distinct allocation stacks stored */
    unsigned long metadata_bytes; /* memory memtrace mapped for its tables */
    int recording;                /* 0 while no new block is recorded: turned
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
size_t memtrace_get_stats_sized(struct memtrace_stats *out, size_t size);

/* The exported function fills the first five fields only (the first
 * header's struct); the macro fills every field of this header's. */
void memtrace_get_stats(struct memtrace_stats *out);
#define memtrace_get_stats(out) ((void)memtrace_get_stats_sized((out), sizeof *(out)))

/* Profiler build (libmemtrace-profiler.so): writes a report now, in the
 * calling thread, to MEMTRACE_OUTPUT (stderr by default): the top
 * MEMTRACE_TOP call sites by live bytes, largest last, each with its exact
 * live bytes and blocks, what it allocated and freed since the previous
 * report, and its symbolized stack. Returns when the report is written.
 * Safe from any thread; waits while another report is being written. Not
 * async-signal-safe (use MEMTRACE_SIGNAL for that). In the tracer build
 * (libmemtrace.so) it writes one line saying reports need the profiler. */
void memtrace_report(void);

/* Turns recording on (ON nonzero) or off. While off, new blocks are not
 * recorded and are unknown for good: print_trace knows nothing of them,
 * their frees pass through untouched and are never reported as bad; the
 * records of blocks allocated while on still leave when they are freed.
 * The same as MEMTRACE_TOGGLE_SIGNAL; MEMTRACE_START=0 starts off. Every
 * answer and report then says since when memtrace records. Returns what
 * recording was before the call, 1 on or 0 off, or -1 when it cannot
 * change (recording stopped for good after a failed metadata mapping).
 * Safe from any thread and from a signal handler; never allocates. */
int memtrace_set_recording(int on);

/* 1 while new blocks are recorded, else 0. */
int memtrace_recording(void);

/* The library's version, as "memtrace --version" prints it ("0.1.0"). */
const char *memtrace_version(void);

/* Checks the heap now: every live block's redzone (the bytes after its
 * end, MEMTRACE_REDZONE) and every freed block held in quarantine
 * (MEMTRACE_QUARANTINE) that memtrace can read without waiting on
 * another thread. Each damaged block gets a report on stderr, as at its
 * free ("memtrace: heap-buffer-overflow: ..." or "memtrace:
 * write-after-free: ..." and the stacks); returns how many. Safe from any
 * thread; not from a signal handler. */
int memtrace_check(void);

/* Called after every heap error or bad free report, before MEMTRACE_ON_ERROR=abort
 * aborts: `break memtrace_on_error` in gdb stops at the moment of
 * detection. Does nothing itself. */
void memtrace_on_error(void);

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
 * heap; not from a signal handler.
 *
 * A program that may run without memtrace: both are declared weak here
 * and the macros below call them only when they are defined, so a program
 * built with this header links without -lmemtrace and runs as ever (each
 * call returns 0 and does nothing) until it runs under memtrace
 * (LD_PRELOAD, the launcher), when they are memtrace's. Built with
 * -lmemtrace, they are memtrace's always. Define MEMTRACE_NO_WEAK before
 * the include for plain declarations (the program must then link with
 * -lmemtrace). */
#if defined(MEMTRACE_DEFINING) || defined(MEMTRACE_NO_WEAK)
#define MEMTRACE_TAG_WEAK_
#else
#define MEMTRACE_TAG_WEAK_ __attribute__((weak))
#endif
int memtrace_tag_push(const char *name) MEMTRACE_TAG_WEAK_;
int memtrace_tag_pop(void) MEMTRACE_TAG_WEAK_;
#if !defined(MEMTRACE_DEFINING) && !defined(MEMTRACE_NO_WEAK)
#define memtrace_tag_push(name) (memtrace_tag_push ? (memtrace_tag_push)(name) : 0)
#define memtrace_tag_pop() (memtrace_tag_pop ? (memtrace_tag_pop)() : 0)
#endif

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
    ~tag_scope() { if (entered_) memtrace_tag_pop(); }
    tag_scope(const tag_scope &) = delete;
    tag_scope &operator=(const tag_scope &) = delete;

private:
    bool entered_;
};
} // namespace memtrace
#endif

#endif
