/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one reader of memtrace's tables out of process: the live table, the
 * stack store, the freed history, the thread registry and the counters of
 * a stopped process or a core file, found through its memtrace_state
 * descriptor (src/runtime/descriptor.h) and read through a memory source
 * passed in. memtrace-symbolize answers every table question of the gdb
 * command with it (tools/memtrace-symbolize.c) and the leak scan reads its
 * blocks through it (tools/target_leaks.c).
 *
 * A damaged core is the normal case (doc/design.adoc, trap 15): the layout
 * is checked when the tables are opened, and every read that fails or
 * finds an implausible value records one "memtrace_state looks corrupted
 * (...)" reason (mt_tables_error) instead of reading further. What is read
 * is kept until mt_tables_open is called again (the target ran). */
#ifndef MT_TOOLS_TABLES_H
#define MT_TOOLS_TABLES_H

#include "runtime/descriptor.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* LEN bytes at ADDR in the target, or NULL if they are not all readable;
 * valid until the next call. LEN is at most MT_TABLES_READ_MAX. */
typedef const void *mt_tables_read_fn(void *ctx, uintptr_t addr, size_t len);
#define MT_TABLES_READ_MAX ((size_t)64 << 10)

/* A live record; THREAD is the thread number (the allocation kind bits
 * taken off, into KIND). */
typedef struct {
    uint64_t ptr, size, seq;
    uint32_t stack, thread;
    uint32_t tag;  /* the block's tag scope node id (tags/tags.h), 0: none */
    uint32_t kind; /* how it was allocated: the library's MT_KIND_* */
} mt_tables_entry;

/* A freed-history record. */
typedef struct {
    uint64_t ptr, size, alloc_seq, free_seq;
    uint32_t alloc_stack, free_stack, alloc_thread, free_thread;
} mt_tables_freed;

/* A trusted slot of the freed history: its stamp and block. */
typedef struct {
    uint64_t stamp, ptr, size;
    uint64_t when; /* the free's clock stamp: newest first is by it */
} mt_tables_ring_slot;

typedef struct mt_tables_shard mt_tables_shard;
typedef struct mt_tables_stack_slot mt_tables_stack_slot;

typedef struct {
    mt_tables_read_fn *read;
    void *ctx;
    uintptr_t addr;          /* of memtrace_state */
    struct memtrace_state d; /* its words; those past its size are 0 */
    bool open;               /* d was read and checked */
    char why[256];           /* the first reason a read failed */
    bool failed;
    uint32_t thread_mask;
    mt_tables_shard *shards; /* NULL until read */
    mt_tables_entry *sorted; /* every live record by address; NULL until read */
    size_t nsorted;
    mt_tables_ring_slot *ring; /* trusted freed-history slots, newest first
                                  (by when, then stamp) */
    size_t nring;
    bool ring_read;
    mt_tables_stack_slot *stacks; /* a cache of stacks read, by id */
    size_t nstacks, stacks_cap;
    char **names; /* thread names read, by number; "" for none */
    size_t names_cap;
} mt_tables;

/* Forgets what was read and reads memtrace_state at ADDR through READ.
 * False, with mt_tables_error set to its "memtrace: ..." reason (not
 * started yet, another version, implausible words), when it cannot be
 * used; T is then closed. */
bool mt_tables_open(mt_tables *t, uintptr_t addr, mt_tables_read_fn *read, void *ctx);
void mt_tables_close(mt_tables *t);

/* The reason of the first failure since mt_tables_clear_error, as the
 * gdb command says it: one line without "memtrace: " or newline. */
const char *mt_tables_error(const mt_tables *t);
void mt_tables_clear_error(mt_tables *t);

/* The number of shards (after mt_tables_open). */
size_t mt_tables_shard_count(const mt_tables *t);

/* Shard N's slots: *BASE (the first entry) and *COUNT (the capacity), 0
 * when the shard has no slots mapping yet; *LOCKED if a stopped thread
 * held its lock. False on a failed read. */
bool mt_tables_shard_slots(mt_tables *t, size_t n, uintptr_t *base, uint64_t *count, bool *locked);

/* Shard N's records (ptr != 0) into *ENTRIES (kept by T) and *N. False on
 * a failed read. */
bool mt_tables_shard_entries(mt_tables *t, size_t n, const mt_tables_entry **entries,
                             size_t *count);

/* The record of the block starting at ADDR (hash probe, as the library
 * looks), into *E; *LOCKED if its shard's lock was held. -1 on a failed
 * read, 0 none, 1 found. */
int mt_tables_find_exact(mt_tables *t, uintptr_t addr, mt_tables_entry *e, bool *locked);

/* The records with the greatest start <= ADDR (*BELOW) and the least start
 * > ADDR (*ABOVE), ptr 0 for none; *INSIDE when BELOW holds ADDR
 * (mt_live_find_around's rule); *LOCKED if any shard's lock was held.
 * False on a failed read. */
bool mt_tables_around(mt_tables *t, uintptr_t addr, mt_tables_entry *below, mt_tables_entry *above,
                      bool *inside, bool *locked);

/* Every trusted freed-history slot, newest first. False on a failed read. */
bool mt_tables_ring(mt_tables *t, const mt_tables_ring_slot **slots, size_t *n);

/* The whole record of trusted slot S into *R. False on a failed read. */
bool mt_tables_freed_record(mt_tables *t, const mt_tables_ring_slot *s, mt_tables_freed *r);

/* The frames of stack ID (*DEPTH 0 where mt_stack_get finds none), kept
 * by T. False on a failed read of the store. */
bool mt_tables_stack(mt_tables *t, uint32_t id, const uintptr_t **frames, unsigned *depth);

/* True if stack ID is one the store cannot have handed out: its chunk is
 * past the last possible, or readable and without a record there. Memory
 * that cannot be read proves nothing (a core that left it out). */
bool mt_tables_stack_impossible(mt_tables *t, uint32_t id);

/* Thread NUMBER's name, NULL for none. False on a failed read. */
bool mt_tables_thread_name(mt_tables *t, uint32_t number, const char **name);

/* The counters: distinct stacks, the highest thread number, allocations
 * recorded. False on a failed read. */
bool mt_tables_counts(mt_tables *t, uint64_t *stacks, uint64_t *threads, uint64_t *allocations);

/* Captures the cfi unwinder handed to libunwind; *HAS false from a
 * library that does not count them. False on a failed read. */
bool mt_tables_unwind_fallbacks(mt_tables *t, uint64_t *v, bool *has);

/* The recording words (recording.h): on, ever_off, seq, sec; *HAS false
 * from a library that cannot turn recording off. False on a failed read. */
bool mt_tables_recording(mt_tables *t, uint64_t words[4], bool *has);

/* Between tables.c and tables_layout.c: reads memtrace_state at t->addr
 * into t->d and checks it; records the first failure's reason (a printf
 * format) and returns false; LEN bytes at ADDR, NULL if not all readable
 * (or past the end of the address space). */
bool mt_tables_read_layout(mt_tables *t);
bool mt_tables_fail(mt_tables *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const void *mt_tables_read_at(mt_tables *t, uint64_t addr, size_t len);
/* The 64-bit (32-bit) word at ADDR into *V; false if it cannot be read.
 * What mt_tables_read_at returns lasts only until the next read (the
 * reader over a live process has one buffer): a value that must outlast
 * another read is copied out first, with these. */
bool mt_tables_read_u64(mt_tables *t, uint64_t addr, uint64_t *v);
bool mt_tables_read_u32(mt_tables *t, uint64_t addr, uint32_t *v);

/* ------------------------------------------------------------ a process
 * that runs (tables_live.c, memtrace top): read without stopping it, so
 * that a writer may be half-way through any table. Only states the table
 * was in are handed out (tables_live.c says how they are told). */

/* A freed-history record as the live view needs it. */
typedef struct {
    uint64_t stamp, size, alloc_seq, free_seq;
    uint64_t when; /* the free's clock stamp (0: an older library) */
    uint32_t alloc_stack, alloc_thread;
} mt_tables_live_freed;

/* The caller's buffers, kept from one read to the next; zeroed to begin,
 * mt_tables_live_free to end. */
typedef struct {
    mt_tables_entry *e; /* the last shard's records */
    size_t n, cap;
    mt_tables_live_freed *f;
    size_t fcap;
    char *raw[2];
    size_t raw_cap[2];
    uint64_t *next;
    size_t ncap;
} mt_tables_live;

/* Shard N's records into L->e[0 .. L->n): 1 when read whole while no
 * writer was in it; 0 when it changed under each of TRIES reads (L->n 0:
 * the caller skips it, retries later); -1 when it cannot be read (T's
 * error set: the process exited, or damage). */
int mt_tables_live_shard(mt_tables *t, size_t n, unsigned tries, mt_tables_live *l);

/* Every freed-history record that can be trusted now into *OUT (in L),
 * *N of them, in no order. 1, or -1 on a failed read (T's error set). */
int mt_tables_live_ring(mt_tables *t, mt_tables_live *l, mt_tables_live_freed **out, size_t *n);

/* Each thread's next allocation number, by thread number, into
 * (*NEXT)[1 .. *N) (kept in L; [0]: the shared counter): every number a
 * thread hands out from now on is at least its entry. 1, or -1 (T's error
 * set). */
int mt_tables_live_seq_next(mt_tables *t, mt_tables_live *l, uint64_t **next, size_t *n);

void mt_tables_live_free(mt_tables_live *l);

/* A whole record of the target (a side record; RAW: entry_size bytes)
 * decoded. */
void mt_tables_decode_entry(const mt_tables *t, const char *raw, mt_tables_entry *e);
/* A slot of the target's live table (RAW: live_slot_size bytes, the
 * packing descriptor.h gives) decoded, and its address alone (0: empty). */
void mt_tables_decode_slot(const mt_tables *t, const char *raw, mt_tables_entry *e);
uint64_t mt_tables_slot_ptr(const mt_tables *t, const char *raw);

#endif
