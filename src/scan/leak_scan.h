/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The leak scan: which live blocks can still be reached from the roots
 * (memory a program holds pointers in: writable module segments, thread
 * stacks, registers, TLS), by a conservative mark of every aligned word.
 * Pure computation over what its caller hands in: the blocks, the root
 * regions and words, and a reader of the target's memory. The same code
 * serves the process itself at exit (leak_check.c, reading its own memory)
 * and, later, a reader of a core file or of a process gdb holds stopped.
 * Uses no heap and no memtrace store: its work arrays come from mmap. */
#ifndef MT_LEAK_SCAN_H
#define MT_LEAK_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A block's verdict, in valgrind's memcheck's terms. A pointer to a
 * block's first byte is a start pointer; one to any other byte of it is an
 * interior pointer. */
enum {
    MT_LEAK_REACHABLE = 0, /* reached from a root by start pointers only,
                              directly or through reachable blocks */
    MT_LEAK_DEFINITE = 1,  /* not reached from a root, and no other lost
                              block reaches it; also one block of each lost
                              group that only points at itself (a cycle), as
                              valgrind does */
    MT_LEAK_INDIRECT = 2,  /* not reached from a root, but from a lost block */
    MT_LEAK_POSSIBLE = 3,  /* reached from a root, but only by chains with an
                              interior pointer, or through a possibly lost
                              block: "possibly lost" */
    MT_LEAK_CLASSES = 4,
};

/* A block the caller knows to be held from outside the roots it hands in:
 * reachable, and a root for what it points to. LeakSanitizer treats so the
 * blocks the dynamic linker allocates (DTVs and dynamic TLS, which a
 * finished thread's cached descriptor still holds from memory no root
 * covers). */
#define MT_LEAK_FLAG_ROOT 1u
/* The caller found the block's entry impossible (a stack id the stack
 * store never gave out): the scan counts it damaged and drops it. */
#define MT_LEAK_FLAG_DAMAGED 2u
/* A block of the program's own pool (memtrace_malloclike), which may lie
 * inside another block: a block that holds such blocks whole is the pool's
 * storage, not a block of its own, and is dropped (counted in
 * pool_storage), as valgrind's memcheck drops a malloc'd block holding
 * MALLOCLIKE blocks; what the pool's blocks point to is still followed
 * through them. */
#define MT_LEAK_FLAG_POOL 4u

/* One live block, as the caller knows it. The scan writes CLASS and the
 * HELD fields. */
typedef struct {
    uintptr_t ptr;  /* start; overlapping blocks are dropped as damaged */
    uint64_t size;  /* bytes; 0 is allowed (only a pointer to its start holds it) */
    uint32_t stack; /* the caller's allocation stack id, untouched */
    uint16_t class; /* out: MT_LEAK_* */
    uint16_t flags; /* in: MT_LEAK_FLAG_* */
    /* out, for a DEFINITE block: the INDIRECT blocks of its group (what it
     * holds, valgrind's "(D direct, I indirect)"); 0 for the others. */
    uint32_t held_blocks;
    uint64_t held_bytes;
} mt_leak_block;

/* What a region of roots is, for the verdict's notes. */
enum { MT_ROOT_GLOBALS, MT_ROOT_STACK, MT_ROOT_TLS, MT_ROOT_OTHER };

typedef struct {
    uintptr_t lo, hi; /* [lo, hi); words at 8-byte aligned addresses are read */
    int kind;         /* MT_ROOT_* */
    uint32_t thread;  /* kernel thread id for a stack or TLS; 0 otherwise */
    /* The allocator's own data (leak_roots.h): only a start pointer there
     * holds a block; an interior one is the allocator's bookkeeping (a bin
     * or the top chunk pointing at a chunk header, which lies in the last
     * bytes of the block before it) and holds nothing. */
    bool starts_only;
    /* Only the words outside every block of the scan are roots (the
     * allocator's heap of an attached process, leak_roots.h): what lies
     * in a block holds as that block's contents do, and only if it is
     * reached. */
    bool outside_blocks;
} mt_leak_root;

/* Returns where the LEN bytes at ADDR of the target can be read, valid
 * until the next call, or NULL when some byte of them cannot be read (the
 * scan then skips them and counts them unreadable). In the process itself:
 * ADDR, after checking the range is mapped readable; on a core file: a
 * pointer into the file's mapping; from a debugger: a buffer it filled. */
typedef const void *mt_leak_read_fn(void *ctx, uintptr_t addr, size_t len);

/* What the target's address space holds at ADDR (mt_leak_region_fn). */
enum { MT_MEM_NONE, MT_MEM_UNREADABLE, MT_MEM_READABLE };

/* Returns what is at ADDR and sets *END: for MT_MEM_READABLE and
 * MT_MEM_UNREADABLE, the end of the piece of the same kind holding ADDR
 * (above ADDR); for MT_MEM_NONE, the start of the next mapping above ADDR,
 * or 0 when there is none. The scan reads only what it says is readable,
 * so its work is bounded by the mappings, whatever the entries say. */
typedef int mt_leak_region_fn(void *ctx, uintptr_t addr, uintptr_t *end);

typedef struct {
    mt_leak_block *blocks; /* in/out: sorted by ptr in place by the scan */
    size_t nblocks;
    const mt_leak_root *roots; /* regions scanned word by word */
    size_t nroots;
    const uintptr_t *words; /* single root words: the threads' registers */
    size_t nwords;
    mt_leak_read_fn *read;
    void *read_ctx;            /* for READ and REGION */
    mt_leak_region_fn *region; /* NULL: every address is mapped and READ decides */
    /* Whether ADDR may be a C++ vtable pointer (a word of a module's
     * data that points at a module's code or data), for the
     * multipleinheritance heuristic; NULL: that heuristic is off. */
    bool (*vtable)(void *ctx, uintptr_t addr);
} mt_leak_input;

typedef struct {
    uint64_t bytes[MT_LEAK_CLASSES], blocks[MT_LEAK_CLASSES]; /* per MT_LEAK_* class */
    uint64_t unreadable_root_bytes;                           /* root bytes READ refused */
    uint64_t unreadable_blocks; /* blocks whose contents READ refused */
    uint64_t damaged;           /* entries dropped as damaged (see mt_leak_scan) */
    uintptr_t first_damaged;    /* the lowest address a damaged entry names */
    uint64_t pool_storage;      /* blocks dropped as a pool's storage
                                   (MT_LEAK_FLAG_POOL) */
    double seconds;             /* time the scan took (sort + marks) */
} mt_leak_totals;

/* Sorts IN->blocks by address, drops the damaged entries, marks from the
 * roots and classifies every block (see MT_LEAK_*), filling *OUT. An entry
 * is damaged (a wild write into memtrace's table, a damaged core) when its
 * block wraps around the address space, does not lie in mapped memory
 * (IN->region), overlaps the block before it (both are dropped), or the
 * caller flagged it (MT_LEAK_FLAG_DAMAGED); a block holding pool blocks
 * whole is dropped as their storage (MT_LEAK_FLAG_POOL); the first NBLOCKS
 * - OUT->damaged - OUT->pool_storage blocks are then the good ones,
 * sorted, and the rest are unspecified. Every range read is clipped to the mappings IN->region
 * names, so the work is bounded by them whatever the entries hold.
 * Classes as valgrind's memcheck gives them: a word marks the block holding
 * the address it holds, REACHABLE by a start pointer from a root or a
 * reachable block, POSSIBLE otherwise (an interior pointer, or any pointer
 * from a possibly lost block; LeakSanitizer counts both reachable). As
 * memcheck's default heuristics (--leak-check-heuristics=all), an interior
 * pointer from a root or a reachable block counts as a start pointer where
 * the block's words show the C++ idiom that makes it: new[]'s element
 * count before the array (newarray: a first word N > 0 that divides the
 * rest of the block; length64: the first word is the rest's length), the
 * characters of a reference-counted std::string (stdstring: 3 words in,
 * the block 3 words + capacity + 1 long, length <= capacity), a second
 * base of an object (multipleinheritance: the first word and the one
 * pointed at are both vtable pointers, IN->vtable). False,
 * with *OUT zeroed, only when the work arrays could not be mapped (about 9
 * bytes per block): then nothing is classified. Takes no lock and
 * calls nothing but IN->read, mmap and munmap; safe to run while every
 * other thread of the process is stopped anywhere, inside malloc included. */
bool mt_leak_scan(const mt_leak_input *in, mt_leak_totals *out);

/* Sorts BLOCKS[0..N) by ptr, as mt_leak_scan does first (for a caller
 * that needs them in that order before the scan: leak_roots.h's heap). */
void mt_leak_sort(mt_leak_block *blocks, size_t n);

/* The index of the block holding ADDR among BLOCKS[0..N) sorted by ptr, or
 * -1: for a caller that wants to say who holds what (memtrace refs). */
ptrdiff_t mt_leak_find(const mt_leak_block *blocks, size_t n, uintptr_t addr);

#endif
