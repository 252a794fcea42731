/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The leak report, one writer for both places that make one: the check at
 * exit in the process (leak_check.c) and `memtrace leaks` in gdb through
 * memtrace-symbolize. Lost blocks grouped by allocation stack and class,
 * suppressions applied, definitely lost groups first (with what they hold), the notes, the summary
 * line (format.h's order). Uses no heap (its arrays are mmap'ed): safe in the library at exit. */
#ifndef MT_LEAK_REPORT_H
#define MT_LEAK_REPORT_H

#include "base/output.h"
#include "leak/suppressions.h"
#include "report/format.h"
#include "scan/leak_scan.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Sorts BLOCKS by (stack, class): the order mt_leak_report takes (and the
 * profiler's per-stack lookup at exit). Heapsort, no heap, no recursion. */
void mt_leak_sort_by_stack(mt_leak_block *blocks, size_t n);

/* A thread the scan could not see whole, and what was scanned instead. */
typedef struct {
    uint32_t tid;
    const char *what;
} mt_leak_note;

typedef struct {
    int pid;
    const mt_leak_block *blocks; /* classified, sorted by mt_leak_sort_by_stack */
    size_t nblocks;
    const mt_leak_totals *totals;
    size_t nroots;
    size_t max_groups;   /* groups listed at most; SIZE_MAX: all */
    mt_suppression *sup; /* may be NULL; their counts are added to */
    size_t nsup;
    /* The recorded frames of stack ID (innermost first) into *FRAMES, valid
     * until the next call; returns the depth, 0 for none. */
    unsigned (*stack)(void *ctx, uint32_t id, const uintptr_t **frames);
    /* The first of SUP[0..NSUP) that matches a frame of FRAMES, or NSUP
     * (mt_leak_match_frames does it for a Dwfl). NULL: nothing matches. */
    size_t (*match)(void *ctx, const uintptr_t *frames, unsigned depth, const mt_suppression *sup,
                    size_t nsup);
    mt_stack_writer *put_stack; /* writes a group's frames */
    void *ctx;                  /* for the three above */
    const mt_leak_note *notes;
    size_t nnotes;
    /* What went wrong with the roots, in the words of the warning
     * (mt_fmt_leak_incomplete: "..." then "; blocks held only from there
     * may be counted lost"); NULL: nothing. */
    const char *incomplete;
} mt_leak_report_input;

/* Writes the report to OUT; returns the lost bytes (definitely and
 * indirectly; not possibly lost, which may be a program's own interior
 * pointer) left after the suppressions, listed or not. */
uint64_t mt_leak_report(mt_out *out, const mt_leak_report_input *in);

/* mt_leak_report_input.match for DWFL: symbolizes FRAMES (inline rows
 * included, REFRESH as mt_sym_frames takes it) until a suppression
 * matches; the earliest suppression of the file wins. Caller holds what
 * mt_sym_frames needs. */
size_t mt_leak_match_frames(mt_sym_state *dwfl, bool refresh, const uintptr_t *frames,
                            unsigned depth, const mt_suppression *sup, size_t nsup);

#endif
