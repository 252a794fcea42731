/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What target_leaks.c and target_refs.c share inside memtrace-symbolize:
 * a "leaks" or "refs" request as read from the helper (the threads,
 * registers and frames gdb knows), and the roots gathered for it. */
#ifndef MT_TOOLS_TARGET_INTERNAL_H
#define MT_TOOLS_TARGET_INTERNAL_H

#include "base/output.h"
#include "scan/leak_gather.h"
#include "scan/leak_scan.h"
#include "symbolize/symbolize.h"
#include "tables.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct reg {
    char name[16];
    uint64_t value;
};

struct frame {
    unsigned level;
    uintptr_t sp;
    uintptr_t ret;      /* the frame's pc as a return address; 0: unknown */
    unsigned outer;     /* inlined frames between it and its real frame */
    char function[256]; /* gdb's name, when RET names nothing */
};

struct thread {
    uint32_t tid, number;
    uintptr_t sp, tp;
    struct reg *regs;
    size_t nregs;
    struct frame *frames;
    size_t nframes;
};

struct request {
    bool refs;
    bool where;   /* "where ADDR PID": mt_target_where */
    uint64_t arg; /* leaks: sites to list; refs: the address */
    int pid;
    mt_tables *tables; /* the live blocks and their stacks */
    uintptr_t self;    /* an address inside memtrace's library */
    uint64_t tcb_size;
    struct thread *threads;
    size_t nthreads;
    char suppressions[4096]; /* a path; "" for none */
    bool unlocked;           /* a shard was read while a stopped thread held its lock */
    uint64_t since;          /* leaks: report only the lost blocks numbered from it on; 0: all */
    struct seq_of *seqs;     /* with since: every block's number, sorted by ptr */
    size_t nseqs;
};

/* A block's allocation number, by address (`memtrace leaks new`). */
struct seq_of {
    uint64_t ptr, seq;
};

struct roots {
    mt_leak_root *regions;
    size_t nregions;
    uintptr_t *words;
    size_t nwords;
    mt_leak_gathered g; /* the dynamic linker's code, the modules unread */
};

/* The frames of stack ID from the target's stack store (kept by R's
 * tables); 0 when none (as mt_stack_get), or unreadable. */
unsigned mt_target_stack(const struct request *r, uint32_t id, const uintptr_t **frames);

/* The frame of thread T holding stack slot ADDR: the outermost frame
 * whose stack pointer is at or below ADDR (a frame's slots lie between its
 * SP and its caller's), as gdb numbers it; NULL when T has no frames. Its
 * function into NAME, as memtrace's frame lines name it (src/symbolize/,
 * one demangler), gdb's name when they cannot. */
const struct frame *mt_target_frame_of(mt_sym_state *dwfl, const struct thread *t, uintptr_t addr,
                                       char *name, size_t size);

/* `memtrace where`: what ADDR (Q->arg), in no heap block, is: a symbol's
 * bytes, a thread's stack frame or TLS (from the roots R), a mapping. */
bool mt_target_where(mt_sym_state *dwfl, const struct request *q, const struct roots *r,
                     mt_out *out);

/* `memtrace refs`: every place in the roots R, the threads' registers and
 * the live blocks B[0..N) (sorted, scanned) holding a pointer into the
 * block holding Q->arg, written to OUT. False (one "memtrace:" line) when
 * no live block holds it. */
bool mt_target_refs(mt_sym_state *dwfl, const struct request *q, const mt_leak_block *b, size_t n,
                    const struct roots *r, mt_out *out);

#endif
