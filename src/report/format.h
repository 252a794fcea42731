/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one formatter: every line of text memtrace prints about stacks and
 * blocks is written here, from data (symbolized rows, table records), for
 * every entry point: print_trace (describe.c), the gdb command (through
 * memtrace-symbolize, which decodes the tables' records the helper sends),
 * the profiler's reports and its folded files (their lines:
 * format_profile.h). The wording is an interface: scripts parse these
 * lines. */
#ifndef MT_FORMAT_H
#define MT_FORMAT_H

#include "base/output.h"
#include "base/upcalls.h"
#include "symbolize/symbolize.h"

#include <stdbool.h>
#include <stdint.h>

/* ------------------------------------------------------------ stacks */

/* The rows of one return address as frame N: "  #N FUNCTION at FILE:LINE:COL"
 * (or "FUNCTION in MODULE+0xOFF"; without a name "0xPC in MODULE+0xOFF",
 * PC = RET - 1, the byte OFF names, which addr2line -e MODULE takes; "0xRET"
 * in no module), then
 * "     inlined into FUNCTION at FILE:LINE:COL" per outer row. */
void mt_fmt_frame(mt_out *out, unsigned n, const mt_frame *rows, unsigned count);

/* Frame FRAMES[I] of a recorded stack (return addresses, innermost first;
 * FRAMES[0] called an allocation function) numbered N, after the frames
 * that tail calls left off the stack between it and FRAMES[I - 1], each
 * rebuilt from the debug information and marked " (tail call)" on its first
 * line. Returns the number of the next frame. Symbolized through DWFL (see
 * mt_sym_frames for REFRESH); the caller holds the symbolizer's lock. */
unsigned mt_fmt_stack_frame(mt_out *out, mt_sym_state *dwfl, bool refresh, unsigned n,
                            const uintptr_t *frames, unsigned i);
/* FRAMES[0..DEPTH), return addresses innermost first, as frames #0.., the
 * tail-call frames included. */
void mt_fmt_stack(mt_out *out, mt_sym_state *dwfl, bool refresh, const uintptr_t *frames,
                  unsigned depth);
/* The same frames unsymbolized: "  #N 0xRET". */
void mt_fmt_raw_stack(mt_out *out, const uintptr_t *frames, unsigned depth);

/* The folded-stack names of FRAMES[I] (flamegraph.pl's input): its rows'
 * functions outermost first, then those of the tail-call frames between it
 * and FRAMES[I - 1] (see mt_fmt_stack_frame), outermost first,
 * ';'-separated, each cut to 1023 bytes with ';' written as ':', "0xRET"
 * for a row without a name. */
void mt_fmt_folded_frame(mt_out *out, mt_sym_state *dwfl, bool refresh, const uintptr_t *frames,
                         unsigned i);

/* ------------------------------------------------------------ answers */

/* What print_trace and `memtrace EXPR` say about one address. The caller
 * looks the address up and hands over what it found, in this order:
 * mt_answer_begin, mt_answer_lookup, mt_answer_freed for each freed record
 * covering the address newest first, mt_answer_near, mt_answer_near_freed
 * for each freed record near it newest first, mt_answer_end.
 *
 * An address no block covers, live or freed, is answered with the blocks
 * near it: the nearest live block below it and the nearest above it, and
 * the newest MT_NEAR_FREED_MAX freed ones, each at most MT_NEAR_BYTES from
 * the address (mt_block_gap). The answer's first line states the bound. */
#define MT_NEAR_BYTES 4096u
#define MT_NEAR_FREED_MAX 4u

/* A live block's earlier lives at its address (the freed records covering
 * it) are shown up to mt_answer.history of them, newest first (default
 * MT_HISTORY_DEFAULT, MEMTRACE_HISTORY); the rest are counted on one line
 *   "  N earlier freed blocks at this address not shown; MEMTRACE_HISTORY=all
 *    or `memtrace --all EXPR` in gdb shows them"
 * (one line). A dead address's records are all shown. */
#define MT_HISTORY_DEFAULT 3u
#define MT_HISTORY_ALL 0xffffffffu

/* Writes the frames of a stack of DEPTH > 0 frames: symbolized in the
 * process, by memtrace-symbolize elsewhere, raw with a note when the
 * symbolizer cannot be had. */
typedef void mt_stack_writer(void *ctx, mt_out *out, const uintptr_t *frames, unsigned depth);

typedef struct {
    uint32_t number;  /* memtrace's thread number, main thread = 1 */
    const char *name; /* NULL: none given */
} mt_fmt_thread;

typedef struct {
    const uintptr_t *frames; /* return addresses, innermost first */
    unsigned depth;          /* 0: no stack was recorded */
} mt_fmt_stack_ref;

/* A block's recorded stack as answers show it: through PUT_STACK, or "(no
 * stack was recorded for this block)" when its depth is 0. */
void mt_fmt_block_stack(mt_out *out, mt_stack_writer *put_stack, void *ctx,
                        const mt_fmt_stack_ref *s);

typedef struct {
    uintptr_t ptr;
    uint64_t size;
    uint64_t seq; /* allocation number */
    mt_fmt_thread thread;
    mt_fmt_stack_ref stack;
} mt_fmt_live;

typedef struct {
    uintptr_t ptr;
    uint64_t size;
    uint64_t alloc_seq, free_seq;
    mt_fmt_thread alloc_thread, free_thread;
    mt_fmt_stack_ref alloc_stack, free_stack;
} mt_fmt_freed;

typedef struct {
    mt_out *out;
    uintptr_t addr;
    mt_stack_writer *put_stack;
    void *stack_ctx;
    bool live;            /* a live block was found */
    bool unlocked;        /* the live table was read without a lock somewhere */
    uint64_t sampled;     /* MEMTRACE_SAMPLE's rate, 0 = every block traced */
    unsigned history;     /* a live block's freed records shown at most; set
                             after mt_answer_begin (MT_HISTORY_DEFAULT) */
    unsigned nfreed;      /* freed records covering the address given */
    unsigned nhidden;     /* of which not written (history) */
    unsigned nnear;       /* blocks near the address written, live and freed */
    unsigned nnear_freed; /* of which freed */
} mt_answer;

/* False (after writing the answer, one line) when ADDR is null: there is
 * nothing to look up. */
bool mt_answer_begin(mt_answer *a, mt_out *out, uintptr_t addr, mt_stack_writer *put_stack,
                     void *stack_ctx);
/* The live block holding the address (NULL: none), and whether the table
 * was read without its lock (UNLOCKED). */
void mt_answer_lookup(mt_answer *a, const mt_fmt_live *live, bool unlocked);
void mt_answer_freed(mt_answer *a, const mt_fmt_freed *r);
/* The live block with the greatest start below the address and the one
 * with the least start above it (NULL: none), whatever their distance:
 * written when no block covers the address and they lie within
 * MT_NEAR_BYTES of it. */
void mt_answer_near(mt_answer *a, const mt_fmt_live *below, const mt_fmt_live *above);
/* A freed record that does not cover the address: written when no block
 * covers the address, it lies within MT_NEAR_BYTES, and fewer than
 * MT_NEAR_FREED_MAX were written. */
void mt_answer_near_freed(mt_answer *a, const mt_fmt_freed *r);
/* Ends the answer; false when nothing was known about the address, nor
 * near it (the answer is then one "memtrace: ...: not a live heap block
 * known to memtrace" line, an error for the gdb command). */
bool mt_answer_end(mt_answer *a);

/* What an address no heap block holds is, after the line mt_answer_end
 * wrote for it, as valgrind describes one ("0 bytes inside data symbol
 * g_list", "on thread 1's stack"): print_trace (describe.c) and the
 * symbolizer's "where" answer (tools/target_where.c), one line. */
enum { MT_WHERE_SYMBOL, MT_WHERE_STACK, MT_WHERE_TLS, MT_WHERE_MAPPING, MT_WHERE_NONE };
typedef struct {
    int kind; /* MT_WHERE_* */
    /* SYMBOL: OFFSET bytes into SYMBOL (a function when FUNCTION) of
     * MODULE (a file name), in its SECTION ("" unknown) */
    uint64_t offset;
    const char *symbol, *module, *section;
    bool function;
    /* STACK, TLS: thread NUMBER (LWP TID); STACK: in frame #FRAME
     * FRAME_FUNCTION (FRAME -1: no frame known), or BELOW_SP (no frame
     * uses it) */
    unsigned number;
    uint32_t tid;
    int frame;
    const char *frame_function;
    bool below_sp;
    /* MAPPING: [LO, HI) of PATH ("" anonymous, "[heap]", ...), at file
     * offset OFFSET when FILE */
    uintptr_t lo, hi;
    const char *path;
    bool file;
} mt_fmt_where;
void mt_fmt_where_line(mt_out *out, const mt_fmt_where *w);

/* ------------------------------------------------------------ recording */

/* Since when memtrace records (recording.h's words). */
typedef struct {
    bool on;       /* recording now */
    bool ever_off; /* recording was ever off: only then is anything said */
    uint64_t seq;  /* the allocation number the next recorded block got
                      when recording last changed */
    uint64_t sec;  /* the time of that change, seconds since 1970 UTC */
    bool attached; /* loaded by `memtrace attach` into a running process */
    bool detached; /* and detached since (`memtrace detach`) */
} mt_fmt_recording_state;

/* The line that ends every answer (print_trace, the gdb command) and
 * follows the first line of every profiler report once recording was ever
 * off; nothing when it never was:
 *   "memtrace: recording since allocation #SEQ (YYYY-MM-DD HH:MM:SS UTC);
 *    blocks allocated while it was off are unknown"
 *   "memtrace: recording off since YYYY-MM-DD HH:MM:SS UTC (after
 *    allocation #SEQ-1); blocks allocated since are unknown"
 * and, in a process memtrace attached to (`memtrace attach`), instead:
 *   "memtrace: attached to a running process; recording since allocation
 *    #SEQ (YYYY-MM-DD HH:MM:SS UTC); blocks allocated before the attach
 *    or while recording was off are unknown"
 *   "memtrace: detached since YYYY-MM-DD HH:MM:SS UTC (after allocation
 *    #SEQ-1); blocks allocated since are unknown"
 * (each one line). */
void mt_fmt_recording(mt_out *out, const mt_fmt_recording_state *r);

/* ------------------------------------------------------------ bad frees */

/* A free memtrace saw go wrong, reported before the real allocator gets it.
 * The first line says what, and is parsed by scripts:
 *   "memtrace: double free of a N-byte block at START"
 *   "memtrace: CALL of an address K bytes inside a N-byte block at START"
 *   "memtrace: CALL of a N-byte block allocated by ALLOC at START"
 *   "memtrace: CALL of ADDR, which no block memtrace knows starts at"
 * then "  CALL by thread T at:" and this call's stack; for a double free
 * "  freed before by thread T (after allocation #S) at:" and that free's
 * stack; last "  allocated by thread T (allocation #S) at:" and the
 * block's allocation stack (none for WILD). CALL is free, realloc, delete,
 * delete[] or memtrace_freelike; ALLOC is malloc, new, new[] or
 * memtrace_malloclike. */
enum { MT_BAD_FREE_DOUBLE, MT_BAD_FREE_INSIDE, MT_BAD_FREE_MISMATCH, MT_BAD_FREE_WILD };

typedef struct {
    int what;          /* MT_BAD_FREE_* */
    const char *call;  /* the function that was called: "free", "delete", ... */
    const char *alloc; /* MISMATCH: the block's allocation function */
    uintptr_t addr;    /* the pointer handed to CALL */
    uintptr_t ptr;     /* the block's start */
    uint64_t size;
    uint64_t alloc_seq; /* the block's allocation number */
    uint64_t free_seq;  /* DOUBLE: allocation numbers handed out before the first free */
    mt_fmt_thread thread, alloc_thread, free_thread; /* free_thread: DOUBLE */
    mt_fmt_stack_ref stack, alloc_stack, free_stack; /* free_stack: DOUBLE */
} mt_fmt_bad_free_report;

void mt_fmt_bad_free(mt_out *out, const mt_fmt_bad_free_report *b, mt_stack_writer *put_stack,
                     void *ctx);

/* ------------------------------------------------------------ heap errors */

/* A damaged or misused block, in one format for every kind and
 * every detector (the redzone and quarantine checks in the process, the
 * guard pages' faults, `memtrace check` out of process). The first line
 * names the kind and is parsed by scripts:
 *   "memtrace: heap-buffer-overflow: N bytes past the end of a S-byte block at START"
 *   "memtrace: heap-buffer-overflow: N bytes at offset O, D bytes past the end of a ..."
 *   "memtrace: heap-buffer-underflow: N bytes before the start of a S-byte block at START"
 *   "memtrace: write-after-free: N bytes at offset O of a freed S-byte block at START"
 *   "memtrace: use-after-free: N bytes at offset O of a freed S-byte block at START"
 * ("1 byte"; "at least N bytes" when the damage reaches the last byte the
 * detector sees). The kind is followed by " read" or " write" when the
 * access itself was seen (a guard page's fault): "memtrace:
 * heap-buffer-overflow write: 1 byte past the end of ...", "memtrace:
 * use-after-free read: 1 byte at offset 8 of a freed ...". Then
 * "  allocated by thread T (allocation #S) at:" and the block's stack; for
 * a freed block "  freed by thread T (after allocation #S) at:" and its
 * free's stack; last "  detected in WHERE by thread T at:" and the
 * detecting stack ("  detected in WHERE" alone when there is no stack,
 * out of process). */
/* The kinds and accesses, MT_HEAP_*, are base/upcalls.h's (the hot path's
 * checks name them too). */

typedef struct {
    int kind;       /* MT_HEAP_* */
    int access;     /* MT_HEAP_ACCESS_UNSEEN (damage found afterwards), READ or WRITE */
    uintptr_t ptr;  /* the block's start */
    uint64_t size;  /* its size, as the program asked for it */
    int64_t offset; /* of the first bad byte from the start: >= size past
                       the end, < 0 before the start */
    uint64_t bytes; /* bad bytes from there, at least 1 */
    bool at_least;  /* the damage may go on past what the detector sees */
    bool freed;     /* the block was freed: free_* are set */
    uint64_t alloc_seq, free_seq;
    mt_fmt_thread alloc_thread, free_thread, thread; /* thread: the detecting
                                                        one, number 0 = none */
    mt_fmt_stack_ref alloc_stack, free_stack, stack; /* stack: the detecting one */
    const char *where; /* what found it: "free", "realloc", "exit", ... */
} mt_fmt_heap_error_report;

void mt_fmt_heap_error(mt_out *out, const mt_fmt_heap_error_report *e, mt_stack_writer *put_stack,
                       void *ctx);

/* ------------------------------------------------------------ leaks */

/* The leak report (leak_check.c at exit; the gdb command), in this order:
 * mt_fmt_leak_begin; mt_fmt_leak_group for each group of lost blocks
 * sharing an allocation stack and a class, definitely lost first; the
 * notes on what could not be scanned; mt_fmt_leak_suppressed for each
 * suppression that took something; last mt_fmt_leak_summary, the line
 * scripts parse: "memtrace: leaks: D bytes definitely lost in N blocks, I
 * bytes indirectly lost in M blocks, P bytes possibly lost in K blocks, R
 * bytes still reachable in S blocks". */
void mt_fmt_leak_begin(mt_out *out, int pid, uint64_t blocks, uint64_t roots, double seconds);
/* CLASS is MT_LEAK_* (leak_scan.h). In valgrind's words: "memtrace: T (B
 * direct, H indirect) bytes in K blocks are definitely lost (with HB
 * indirectly lost blocks), allocated at:" (T = B + H: the K blocks and
 * what they hold, H bytes in HB blocks), or "memtrace: B bytes in K blocks
 * are indirectly lost, allocated at:" (or "possibly lost"); then the stack
 * as answers write it. */
void mt_fmt_leak_group(mt_out *out, int class, uint64_t bytes, uint64_t blocks, uint64_t held_bytes,
                       uint64_t held_blocks, mt_stack_writer *put_stack, void *ctx,
                       const mt_fmt_stack_ref *s);
/* "memtrace: leaks: K more sites not listed", after the N groups the
 * gdb command was asked for. */
void mt_fmt_leak_more(mt_out *out, uint64_t groups);
/* A thread whose stack and registers the scan could not see (it did not
 * stop, or it blocks the signal), with what was scanned instead (WHAT). */
void mt_fmt_leak_thread_note(mt_out *out, uint32_t tid, const char *what);
/* Root bytes and blocks whose memory could not be read. */
void mt_fmt_leak_unreadable(mt_out *out, uint64_t root_bytes, uint64_t blocks);
/* COUNT live table entries dropped as damaged, the lowest naming FIRST. */
void mt_fmt_leak_damaged(mt_out *out, uint64_t count, uintptr_t first);
/* Not every thread could be listed and stopped, or a root recorded. */
void mt_fmt_leak_incomplete(mt_out *out, const char *what);
/* "memtrace: leaks: suppressed by leak:PATTERN: B bytes in K blocks". */
void mt_fmt_leak_suppressed(mt_out *out, const char *pattern, uint64_t bytes, uint64_t blocks);
void mt_fmt_leak_summary(mt_out *out, uint64_t definite_bytes, uint64_t definite_blocks,
                         uint64_t indirect_bytes, uint64_t indirect_blocks, uint64_t possible_bytes,
                         uint64_t possible_blocks, uint64_t reachable_bytes,
                         uint64_t reachable_blocks);

/* ------------------------------------------------------------ refs */

/* `memtrace refs ADDR` (memtrace-symbolize): every place holding a pointer
 * into the live block at PTR, one line each, "  AT: WHAT, to offset N"
 * (AT: the place's address), then a count. CLASS is the block's MT_LEAK_*
 * verdict. */
void mt_fmt_refs_begin(mt_out *out, uintptr_t ptr, uint64_t size, uint64_t offset, int class);
/* WHAT: "global NAME in MODULE", "thread N (LWP T) stack, frame #K FUNC",
 * "thread N (LWP T) thread-local storage". */
void mt_fmt_ref_place(mt_out *out, const char *what, uintptr_t at, uint64_t to);
void mt_fmt_ref_register(mt_out *out, uint32_t thread, uint32_t tid, const char *reg, uint64_t to);
/* A word at OFFSET in the heap block at PTR, then that block's stack. */
void mt_fmt_ref_block(mt_out *out, uintptr_t ptr, uint64_t size, uint64_t offset, uint64_t to,
                      int class, mt_stack_writer *put_stack, void *ctx, const mt_fmt_stack_ref *s);
void mt_fmt_refs_end(mt_out *out, uint64_t places);

#endif
