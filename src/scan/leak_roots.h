/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Where the leak scan's roots are: one policy for the check at exit in the
 * process (leak_check.c) and for a core file or a live process seen from
 * gdb (tools/target_leaks.c). Each caller finds the facts its own way (the
 * modules by dl_iterate_phdr or libdwfl, a thread's stack pointer from a
 * signal handler or from gdb, memory in place or from a core); what those
 * facts make roots, and what is left out, is decided here:
 *
 *  - a module's writable PT_LOAD segments (.data, .bss, the GOT), except
 *    memtrace's own library (its tables hold every block's address); in the
 *    allocator's module (the one whose malloc memtrace forwards to: glibc's
 *    libc.so.6, or a preloaded jemalloc or tcmalloc) only a start pointer
 *    holds a block: the allocator's bookkeeping there (glibc's main_arena
 *    bins and top chunk) points at chunk headers, which lie in the last
 *    bytes of the block before the chunk, never at a block's start
 *    (mt_leak_root.starts_only). valgrind and LeakSanitizer own their
 *    allocator, so its state is never a root for them either. The other
 *    arenas' state, glibc's tcache and jemalloc's and tcmalloc's metadata
 *    live in memory of the allocator's own mappings, which is no root;
 *  - a thread's stack from its stack pointer (less the 128-byte red zone a
 *    leaf function may use) to the end of the mapping holding it: only the
 *    live part. For the thread running the exit check, from the stack
 *    pointer of exit's caller (leak_self.c, exit_caller_sp): below it lie
 *    main's dead frame and the dead frames of everything main called,
 *    reused by exit and its handlers;
 *  - a thread's registers, as root words;
 *  - a thread's TLS: its descriptor, its static TLS block and its DTV;
 *  - the blocks the dynamic linker allocated (its DTVs and dynamic TLS),
 *    held as LeakSanitizer holds them (MT_LEAK_FLAG_ROOT);
 *  - in a process memtrace was attached to (its recording words say so:
 *    MT_REC_ATTACHED, in a core too), the allocator's heap outside the
 *    blocks memtrace knows (mt_leak_roots_heap): the blocks allocated
 *    before the attach lie there, unknown, and hold what they point to.
 * Pure computation over what the caller hands in; no heap. */
#ifndef MT_LEAK_ROOTS_H
#define MT_LEAK_ROOTS_H

#include "scan/leak_scan.h"

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where the roots go, and how the target's memory is read (the TLS's DTV). */
typedef struct {
    void (*add)(void *ctx, const mt_leak_root *root);
    void *ctx;
    mt_leak_read_fn *read;
    void *read_ctx;
} mt_leak_roots_sink;

enum { MT_LEAK_MODULE_PROGRAM, MT_LEAK_MODULE_MEMTRACE, MT_LEAK_MODULE_ALLOCATOR };

/* The roots of a module loaded at BIAS whose program headers are PH[0..N),
 * by its KIND (MT_LEAK_MODULE_*). */
void mt_leak_roots_module(const mt_leak_roots_sink *s, uintptr_t bias, const Elf64_Phdr *ph,
                          size_t n, int kind);

/* The roots of a thread's stack whose pointer is SP, in the mapping [MAP_LO,
 * MAP_HI) (MAP_HI 0: in no mapping known; the reader then refuses it and
 * the verdict counts it unreadable). RED_ZONE: SP is where the thread
 * stopped (a leaf function may keep data below it), not a caller's. */
void mt_leak_roots_stack(const mt_leak_roots_sink *s, uintptr_t sp, bool red_zone, uintptr_t map_lo,
                         uintptr_t map_hi, uint32_t tid);

/* The roots of the TLS of the thread whose thread pointer is TP (glibc on
 * x86-64 and aarch64: TP is the thread's descriptor, TCB_SIZE bytes that
 * also hold pthread_setspecific's first values; the static TLS block lies
 * below it; the descriptor's second word is the DTV, whose word before its
 * first entry is its length). STATIC_SIZE is the static TLS size glibc
 * reports (_dl_get_tls_static_info); 0 where nothing can be called (a
 * core): the block then starts at the lowest DTV entry below TP within 16
 * MiB, as every module with static TLS has one there. Returns the TLS
 * block's low end (0: TP is 0): a thread pthread_create made has its
 * descriptor and static TLS at the top of its stack's mapping, which the
 * stack's roots then end below (mt_leak_gather_threads). */
uintptr_t mt_leak_roots_tls(const mt_leak_roots_sink *s, uintptr_t tp, size_t tcb_size,
                            size_t static_size, uint32_t tid);

/* The roots of the allocator's heap in a process memtrace was attached
 * to (the caller asks only then): of the mapping [LO, HI), when it holds
 * the start of one of BLOCKS[0..N) (sorted by ptr: mt_leak_sort), the
 * words outside those blocks (mt_leak_root.outside_blocks), by start
 * pointers only (starts_only, as the allocator's data: chunk headers and
 * free lists point at chunk headers). The mappings that hold a known
 * block are the allocator's: glibc's [heap] and its arenas' heaps (a
 * large block's own mapping adds its chunk header only); no module's
 * segment, stack or memtrace table holds one. Their words outside the
 * known blocks are the blocks allocated before the attach (or while
 * recording was off), chunk headers, and freed chunks, whose stale
 * contents may keep a lost block reachable; a known block holds only when
 * reached, so a lost one stays lost unless such memory points at it. An
 * arena in which no known block lies is missed: what its blocks hold may
 * be reported lost. */
void mt_leak_roots_heap(const mt_leak_roots_sink *s, uintptr_t lo, uintptr_t hi,
                        const mt_leak_block *blocks, size_t n);

/* Whether a block whose allocation stack is FRAMES[0..DEPTH) was allocated
 * by the dynamic linker, whose code is [LO, HI): its innermost frame is in
 * it. Such a block is a root (MT_LEAK_FLAG_ROOT). */
bool mt_leak_roots_linker_block(const uintptr_t *frames, unsigned depth, uintptr_t lo,
                                uintptr_t hi);

#endif
