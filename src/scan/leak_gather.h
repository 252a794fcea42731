/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The gathering of the leak scan's roots, once, with the target passed in
 * as callbacks (as libunwind's accessors or libdwfl's callbacks are): the
 * check at exit reads the process itself (src/leak/leak_self.c: modules by
 * dl_iterate_phdr, threads from the stopped world, memory in place), and
 * memtrace-symbolize a core file or a process from gdb
 * (tools/target_leaks.c: modules by libdwfl, threads from gdb, memory from
 * the core's segments or /proc/PID/mem). The source says what there is;
 * leak_roots.c's policy makes roots of it, in one order for both: the
 * modules' segments, then for each thread its stack, its registers as
 * root words and its TLS. Calls nothing but the source, the sink and
 * leak_roots.c; no heap, no lock. */
#ifndef MT_LEAK_GATHER_H
#define MT_LEAK_GATHER_H

#include "scan/leak_roots.h"
#include "scan/leak_scan.h"

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A loaded module. */
typedef struct {
    uintptr_t bias;       /* where its ELF addresses are loaded */
    const Elf64_Phdr *ph; /* its program headers; NULL: they could not be
                           * read (mt_leak_gathered.modules_unread) */
    size_t nph;
    int kind;    /* MT_LEAK_MODULE_* */
    bool linker; /* the dynamic linker: its blocks are roots */
} mt_leak_module;

/* A thread whose roots are scanned. */
typedef struct {
    uint32_t tid;
    uintptr_t sp;  /* its stack pointer; 0: its stack is not scanned */
    bool red_zone; /* SP is where it stopped (a leaf may use the red zone below
                    * it), not a caller's at a call */
    uintptr_t tp;  /* its thread pointer; 0: its TLS is not scanned */
} mt_leak_thread;

typedef struct {
    void *ctx; /* for every callback below */
    /* The target's memory (the TLS's DTV is read). */
    mt_leak_read_fn *read;
    /* The mapping holding ADDR into [*LO, *HI); false if none (a stack
     * there is counted unreadable). */
    bool (*mapping)(void *ctx, uintptr_t addr, uintptr_t *lo, uintptr_t *hi);
    /* Calls FN(ARG, M) for every module. */
    void (*modules)(void *ctx, void (*fn)(void *arg, const mt_leak_module *m), void *arg);
    /* Thread I (of NTHREADS, asked once each, in order) into *T; false:
     * nothing of it is scanned. */
    size_t nthreads;
    bool (*thread)(void *ctx, size_t i, mt_leak_thread *t);
    /* Register K of thread I into *VALUE (a root word); false past its last. */
    bool (*reg)(void *ctx, size_t i, size_t k, uintptr_t *value);
    /* glibc's TLS layout (mt_leak_roots_tls): the descriptor's size and the
     * static TLS size (0: unknown, found from the DTV). */
    size_t tcb_size, static_size;
    /* The frames of allocation stack ID, innermost first, valid until the
     * next call; 0 when none. */
    unsigned (*stack)(void *ctx, uint32_t id, const uintptr_t **frames);
} mt_leak_source;

/* Where the roots go, and what was learned on the way. */
typedef struct {
    void (*add_root)(void *ctx, const mt_leak_root *root);
    void (*add_word)(void *ctx, uintptr_t word);
    void *ctx;                      /* for ADD_ROOT and ADD_WORD */
    uintptr_t linker_lo, linker_hi; /* out: the dynamic linker's code; 0, 0: none */
    unsigned modules_unread;        /* out: modules whose headers could not be read */
} mt_leak_gathered;

/* The modules' roots, and the dynamic linker's code. In the process, before
 * the world is stopped (dl_iterate_phdr takes the loader's lock). */
void mt_leak_gather_modules(const mt_leak_source *src, mt_leak_gathered *g);

/* The threads' roots: stacks, registers, TLS. */
void mt_leak_gather_threads(const mt_leak_source *src, mt_leak_gathered *g);

/* Flags MT_LEAK_FLAG_ROOT on the blocks of B[0..N) the dynamic linker
 * allocated (mt_leak_roots_linker_block), after mt_leak_gather_modules.
 * One answer per stack id slot is kept, in a static table (one caller at a
 * time): a million blocks share a few thousand stacks. */
void mt_leak_gather_linker_blocks(const mt_leak_source *src, const mt_leak_gathered *g,
                                  mt_leak_block *b, size_t n);

/* In a process memtrace was attached to (the caller asks only then): the
 * allocator's heap outside the known blocks (mt_leak_roots_heap), for each
 * mapping that holds the start of one of B[0..N), which it sorts by start
 * (mt_leak_sort). */
void mt_leak_gather_heap(const mt_leak_source *src, const mt_leak_gathered *g, mt_leak_block *b,
                         size_t n);

#endif
