/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The reader of the tables out of process (tools/tables.c) against the
 * library's own stores in this process: the descriptor published by
 * src/runtime/descriptor.c, read back through /proc/self/mem as
 * memtrace-symbolize reads a stopped process, must give the records the
 * library holds; a damaged descriptor is refused with its one reason. */
#include "base/hot.h"
#include "../../tools/heap_check.h"
#include "../../tools/table_answers.h"
#include "../../tools/tables.h"

#include "base/config.h"
#include "capture/capture.h"
#include "capture/guard.h"
#include "capture/quarantine.h"
#include "report/heap_error.h"
#include "capture/entry_points.h"
#include "runtime/descriptor.h"
#include "capture/quarantine.h"
#include "runtime/recording.h"
#include "store/freed_history.h"
#include "store/live_bytes.h"
#include "store/live_table.h"
#include "store/stack_store.h"
#include "store/threads.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <sanitizer/asan_interface.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

extern struct memtrace_state memtrace_state; /* descriptor.c's, exported */
MT_TLS mt_hot_thread mt_hot; /* mt_busy (base/hot.h), defined by base/pausable.c in the library */

/* What descriptor.c publishes from the tracer, the capture and recording. */
static mt_atomic(uint64_t) seq = 43;
static mt_atomic(unsigned long) fallbacks = 5;

const mt_atomic(uint64_t) * mt_seq_counter(void)
{
    return &seq;
}

const mt_atomic(unsigned long) * mt_unwind_fallback_counter(void)
{
    return &fallbacks;
}

/* The heap errors' words: the quarantine's list (none), the error count
 * (capture/quarantine.c, report/heap_error.c) and the guard pages' pool
 * (capture/guard.c: none). */
static uint64_t heap_errors = 2;
static mt_quarantine_ring *no_rings;

const uint64_t *mt_heap_errors_counter(void)
{
    return &heap_errors;
}

mt_quarantine_ring *const *mt_quarantine_rings(void)
{
    return &no_rings;
}

/* The error records (report/heap_error.c): none written. */
static mt_error_record no_records[MT_ERROR_RECORDS];
static uint64_t records_written;

const void *mt_error_records(void)
{
    return no_records;
}

const uint64_t *mt_error_records_count(void)
{
    return &records_written;
}

uintptr_t mt_guard_lo, mt_guard_len;

/* mt_tables_read_fn over this process's memory, as over a stopped one's:
 * an unmapped address reads as unreadable, not as a crash. What it
 * returns lasts until the next call, as tables.h says and top's reader
 * does, and no longer: each call fills the other of two buffers and
 * poisons the one it returned last, so a reader that holds bytes across
 * another read meets 0xa5 bytes (an implausible count, a wrong counter)
 * in every test below; under AddressSanitizer (unit-san) any touch of
 * them is reported, whatever the bytes. */
static const void *read_self(void *ctx, uintptr_t addr, size_t len)
{
    static char buf[2][MT_TABLES_READ_MAX];
    static unsigned turn;
    static size_t last; /* the bytes returned last, in buf[turn] */
    int fd = *(int *)ctx;
    memset(buf[turn], 0xa5, last);
    ASAN_POISON_MEMORY_REGION(buf[turn], last);
    turn ^= 1;
    last = len <= sizeof buf[turn] ? len : 0;
    ASAN_UNPOISON_MEMORY_REGION(buf[turn], sizeof buf[turn]);
    return last && pread(fd, buf[turn], len, (off_t)addr) == (ssize_t)len ? buf[turn] : NULL;
}

static int mem_fd = -1;
static mt_tables tables;

static void setup(void)
{
    static bool done;
    if (!done) {
        mt_freed_init(4);
        done = true;
    }
    mt_descriptor_publish();
    mem_fd = open("/proc/self/mem", O_RDONLY);
    cr_assert(mem_fd >= 0);
}

static void teardown(void)
{
    mt_tables_close(&tables);
    close(mem_fd);
}

static void insert(uintptr_t ptr, uint64_t size, uint64_t s, mt_stack_id stack, uint32_t thread)
{
    mt_live_entry e = { .ptr = ptr,
                        .size = size,
                        .seq = s,
                        .stack = stack,
                        .thread = mt_entry_thread_word(thread, MT_KIND_NEW) };
    cr_assert(mt_live_insert(&e));
}

TestSuite(tables, .init = setup, .fini = teardown);

Test(tables, live_records_stacks_and_counters)
{
    static const uintptr_t frames[] = { 0x401234, 0x405678, 0x409abc };
    mt_stack_id id = mt_stack_intern(frames, 3);
    insert(0x10000, 100, 7, id, 3);
    insert(0x20000, 50, 8, 0, 1);
    cr_assert(mt_tables_open(&tables, (uintptr_t)&memtrace_state, read_self, &mem_fd), "%s",
              mt_tables_error(&tables));

    mt_tables_entry e, below, above;
    bool locked, inside;
    cr_assert_eq(mt_tables_find_exact(&tables, 0x10000, &e, &locked), 1);
    cr_assert(e.ptr == 0x10000 && e.size == 100 && e.seq == 7 && e.stack == id);
    cr_assert_eq(e.thread, 3, "the kind bits are taken off");
    cr_assert_not(locked);
    cr_assert_eq(mt_tables_find_exact(&tables, 0x10001, &e, &locked), 0);

    cr_assert(mt_tables_around(&tables, 0x10000 + 99, &below, &above, &inside, &locked));
    cr_assert(inside && below.ptr == 0x10000 && above.ptr == 0x20000);
    cr_assert(mt_tables_around(&tables, 0x10000 + 100, &below, &above, &inside, &locked));
    cr_assert_not(inside, "one past the end is outside");

    const uintptr_t *f;
    unsigned depth;
    cr_assert(mt_tables_stack(&tables, id, &f, &depth));
    cr_assert_eq(depth, 3);
    cr_assert_arr_eq(f, frames, sizeof frames);
    cr_assert(mt_tables_stack(&tables, 0, &f, &depth) && depth == 0);
    cr_assert_not(mt_tables_stack_impossible(&tables, id));
    cr_assert(mt_tables_stack_impossible(&tables, 0xffffff00u), "past the last chunk");

    uint64_t stacks, threads, allocations;
    cr_assert(mt_tables_counts(&tables, &stacks, &threads, &allocations));
    cr_assert_eq(stacks, mt_stack_count());
    cr_assert_eq(allocations, 42);
}

Test(tables, freed_history_newest_first_and_only_what_the_ring_holds)
{
    for (uint64_t i = 1; i <= 6; i++) {
        mt_freed_record r = { .ptr = 0x1000 * i,
                              .size = 16,
                              .alloc_seq = i,
                              .free_seq = 10 + i,
                              .alloc_thread = 1,
                              .free_thread = 2 };
        mt_freed_push(&r);
    }
    cr_assert(mt_tables_open(&tables, (uintptr_t)&memtrace_state, read_self, &mem_fd));
    const mt_tables_ring_slot *ring;
    size_t n;
    cr_assert(mt_tables_ring(&tables, &ring, &n));
    cr_assert_eq(n, 4, "the capacity: the 2 oldest fell out");
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(ring[i].ptr, 0x1000 * (6 - i));
    mt_tables_freed r;
    cr_assert(mt_tables_freed_record(&tables, &ring[0], &r));
    cr_assert(r.alloc_seq == 6 && r.free_seq == 16 && r.alloc_thread == 1 && r.free_thread == 2);

    /* As `memtrace top` reads it from a process that runs: the same 4. */
    mt_tables_live l = { 0 };
    mt_tables_live_freed *f;
    cr_assert_eq(mt_tables_live_ring(&tables, &l, &f, &n), 1);
    cr_assert_eq(n, 4);
    uint64_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        cr_assert(f[i].alloc_seq >= 3 && f[i].free_seq == 10 + f[i].alloc_seq &&
                  f[i].alloc_thread == 1 && f[i].size == 16);
        seen |= (uint64_t)1 << f[i].alloc_seq;
    }
    cr_assert_eq(seen, 0x78, "allocations 3 to 6");
    mt_tables_live_free(&l);
}

/* Gives the calling thread the batch NEXT to END - 1, as malloc.c's refill
 * does after it registered. */
static void *take_batch(void *arg)
{
    const uint64_t *b = arg;
    mt_thread_number();
    mt_atomic_store_relaxed(&mt_thread_slot->seq_next, b[0]);
    mt_atomic_store_relaxed(&mt_thread_slot->seq_end, b[1]);
    return NULL;
}

/* Allocation numbers taken in batches: the count of allocations leaves out
 * the numbers the threads hold unused and those given up. */
Test(tables, allocations_counted_without_unused_batches)
{
    mt_atomic_store_relaxed(&seq, 1 + 3 * MT_SEQ_BATCH);            /* three batches handed out */
    mt_atomic_store_relaxed(&mt_seq.discarded, MT_SEQ_BATCH - 7);   /* the first: 7 used */
    uint64_t mine[2] = { MT_SEQ_BATCH + 11, 2 * MT_SEQ_BATCH + 1 }; /* 10 used */
    take_batch(mine);
    uint64_t other[2] = { 2 * MT_SEQ_BATCH + 6, 3 * MT_SEQ_BATCH + 1 }; /* 5 used */
    pthread_t t;
    pthread_create(&t, NULL, take_batch, other);
    pthread_join(t, NULL);
    mt_descriptor_publish();
    cr_assert(mt_tables_open(&tables, (uintptr_t)&memtrace_state, read_self, &mem_fd));
    uint64_t stacks, threads, allocations;
    cr_assert(mt_tables_counts(&tables, &stacks, &threads, &allocations));
    cr_assert_eq(threads, 2);
    cr_assert_eq(allocations, 22);
}

/* The marks `memtrace top` counts an interval's allocations between: a
 * thread inside its batch is at its next number; one outside it (here
 * mid-refill: the new next written, the old end not yet) and entry 0 are
 * at the shared counter. The counter is read whole although the reader's
 * buffer is reused by the next read (it once held the thread count). */
Test(tables, allocation_marks_at_each_thread_and_the_counter)
{
    mt_atomic_store_relaxed(&seq, 1 + 3 * MT_SEQ_BATCH);
    uint64_t mine[2] = { MT_SEQ_BATCH + 11, 2 * MT_SEQ_BATCH + 1 };
    take_batch(mine);
    uint64_t refilling[2] = { 3 * MT_SEQ_BATCH + 2, 2 * MT_SEQ_BATCH + 1 };
    pthread_t t;
    pthread_create(&t, NULL, take_batch, refilling);
    pthread_join(t, NULL);
    mt_descriptor_publish();
    cr_assert(mt_tables_open(&tables, (uintptr_t)&memtrace_state, read_self, &mem_fd));
    mt_tables_live l = { 0 };
    uint64_t *next;
    size_t n;
    cr_assert_eq(mt_tables_live_seq_next(&tables, &l, &next, &n), 1);
    cr_assert_eq(n, 3);
    cr_assert_eq(next[0], 1 + 3 * MT_SEQ_BATCH);
    cr_assert_eq(next[1], MT_SEQ_BATCH + 11);
    cr_assert_eq(next[2], 1 + 3 * MT_SEQ_BATCH);
    mt_tables_live_free(&l);
}

/* An answer's text: OUT writes into a temporary file, F. */
static FILE *out_open(mt_out *out)
{
    FILE *f = tmpfile();
    cr_assert(f);
    mt_out_init(out, fileno(f));
    return f;
}

/* What OUT wrote into F (out_open's), at most SIZE - 1 bytes of it into
 * TEXT, NUL-terminated; F closed. Returns how many bytes were written (an
 * answer's text ends in a NUL and the end marker, after the text). */
static ssize_t out_text(FILE *f, mt_out *out, char *text, size_t size)
{
    mt_out_flush(out);
    ssize_t n = pread(fileno(f), text, size - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    fclose(f);
    return n;
}

/* Request LINE answered by memtrace-symbolize's table answers
 * (tools/table_answers.c) with SYM through read_self, its text up to the
 * end marker into TEXT; returns out_text's count. */
static ssize_t answer_with(mt_sym_state *sym, const char *line, char *text, size_t size)
{
    mt_out out;
    FILE *f = out_open(&out);
    cr_assert(mt_table_request(&tables, sym, line, &out, read_self, &mem_fd));
    return out_text(f, &out, text, size);
}

static void answer(const char *line, char *text, size_t size)
{
    answer_with(NULL, line, text, size);
}

static void open_answers(void)
{
    char line[64], text[256];
    snprintf(line, sizeof line, "tables %lx\n", (unsigned long)(uintptr_t)&memtrace_state);
    answer(line, text, sizeof text);
    cr_assert(tables.open, "%s", text);
}

/* gdb's snapshot request: the mark is the shared counter and the epoch
 * the epoch word's value, each read whole before the other is read. */
Test(tables, snapshot_mark_and_epoch)
{
    mt_atomic_store_relaxed(&seq, 0x1234);
    mt_atomic_store_relaxed(&mt_seq.epoch, 7);
    mt_descriptor_publish();
    open_answers();
    char text[256];
    answer("snapshot 6a\n", text, sizeof text);
    unsigned long slot, mark, name_at, name_size, epoch_at;
    unsigned epoch;
    cr_assert_eq(sscanf(text, "%lx %lx %lx %lx %lx %x", &slot, &mark, &name_at, &name_size,
                        &epoch_at, &epoch),
                 6, "%s", text);
    cr_assert_eq(mark, 0x1234, "%s", text);
    cr_assert_eq(epoch, 7, "%s", text);
    cr_assert_eq(epoch_at, (unsigned long)(uintptr_t)&mt_seq.epoch);
}

/* stats, sampled: the exact totals the threads flushed, live and peak,
 * each read whole before the other is read. */
Test(tables, sampled_exact_live_and_peak)
{
    mt_cfg.sample = 65536;
    *(int64_t *)mt_live_total_word() = 4096;
    *(int64_t *)mt_live_peak_word() = 8192;
    mt_descriptor_publish();
    open_answers();
    static char text[4096];
    answer("stats\n", text, sizeof text);
    cr_assert(strstr(text, "memtrace: sampled, but exact, every block counted: 4096 bytes live, "
                           "peak 8192 bytes"),
              "%s", text);
}

uintptr_t fixture_outer(void);

/* Every answer of memtrace-symbolize's, over live records with a stack,
 * a named thread, freed records and a snapshot, each through read_self:
 * a value held across a read is 0xa5 bytes here and a report under
 * unit-san. */
Test(tables, every_answer_reads_each_value_before_the_next_read)
{
    uint32_t me = mt_thread_number();
    snprintf(mt_thread_slot->name, sizeof mt_thread_slot->name, "worker");
    uintptr_t frames[2] = { fixture_outer(), fixture_outer() };
    mt_stack_id id = mt_stack_intern(frames, 2);
    insert(0x10000, 100, 7, id, me);
    insert(0x10100, 60, 8, id, me);
    mt_freed_record r = { .ptr = 0x10200,
                          .size = 16,
                          .alloc_seq = 3,
                          .free_seq = 9,
                          .alloc_stack = id,
                          .free_stack = id,
                          .alloc_thread = me,
                          .free_thread = me };
    mt_freed_push(&r);
    mt_descriptor_publish();
    open_answers();
    /* The snapshot "a" at allocation 8, as gdb writes it. */
    char *slot = (char *)(uintptr_t)tables.d.snapshots;
    uint64_t mark = 8;
    memcpy(slot, &mark, 8);
    memcpy(slot + tables.d.snapshot_name, "a", 2);
    char pprof[128], path[64];
    snprintf(path, sizeof path, "/tmp/mt-tables-%d.pb.gz", (int)getpid());
    int k = snprintf(pprof, sizeof pprof, "pprof ");
    for (const char *c = path; *c; c++)
        k += snprintf(pprof + k, sizeof pprof - (size_t)k, "%02x", (unsigned char)*c);
    snprintf(pprof + k, sizeof pprof - (size_t)k, "\n");
    cr_assert(mt_sym_self_lock());
    mt_sym_state *sym = mt_sym_self();
    const char *const requests[] = {
        "stats\n",
        "top 5\n",
        "describe 10010 ffffffff\n",
        "describe 10208 ffffffff\n",
        "live-block 10104\n",
        "recording\n",
        "tags text 1\n",
        "snapshot 61\n",
        "growth 61 5 1\n",
        pprof,
    };
    enum { N = sizeof requests / sizeof *requests };
    static char text[N][8192];
    for (size_t i = 0; i < N; i++) {
        ssize_t n = answer_with(sym, requests[i], text[i], sizeof text[i]);
        cr_assert(strlen(text[i]) + 4 <= (size_t)n &&
                      memcmp(text[i] + strlen(text[i]), "\0@@\n", 4) == 0,
                  "%s answered as an error: %s", requests[i], text[i]);
    }
    mt_sym_self_unlock();
    unlink(path);
    char who[64];
    snprintf(who, sizeof who, "thread %u \"worker\"", me);
    static const char *const want[N] = {
        "memtrace: 2 live blocks, 160 live bytes, 1 call sites with live blocks\n",
        "memtrace: site 1: 160 bytes in 2 blocks allocated at:\n"
        "  #0 fixture_inlined at tests/unit/sym_fixture.c:",
        ": 16 bytes inside a 100-byte block at 0x10000 allocated by thread ",
        "freed block 1: 8 bytes inside a 16-byte block at 0x10200 (allocation #3, freed after "
        "allocation #9)\n",
        "10100 3c\n",
        "",
        "memtrace: no tag scopes: none was entered and MEMTRACE_TAGS is unset\n",
        " 2b 8 28 ",
        "memtrace: growth since snapshot \"a\" (allocation #8 on): 60 bytes in 1 live block at 1 "
        "call site; top 1\n",
        ": 160 live bytes in 2 blocks at 1 call sites\n",
    };
    for (size_t i = 0; i < N; i++)
        cr_assert(strstr(text[i], want[i]), "%s: no \"%s\" in: %s", requests[i], want[i], text[i]);
    cr_assert(strstr(text[2], who) && strstr(text[3], who), "%s%s", text[2], text[3]);
    cr_assert(strstr(text[0], "memtrace: 1 freed-history records (capacity 4)\n"), "%s", text[0]);

    /* `memtrace check` and `memtrace last-error` (heap_check.c): the
     * record of an overflow of the first block, reported at a free. */
    no_records[0] = (mt_error_record){ .number = 1,
                                       .kind = MT_HEAP_OVERFLOW,
                                       .ptr = 0x10000,
                                       .size = 100,
                                       .offset = 100,
                                       .bytes = 4,
                                       .alloc_seq = 7,
                                       .alloc_stack = id,
                                       .alloc_thread = me,
                                       .thread = me,
                                       .where = "free" };
    records_written = 1;
    open_answers();
    cr_assert(mt_sym_self_lock());
    const char *want_check = "memtrace: check: 1 damaged block (1 reported before); 2 live "
                             "blocks and 0 quarantined blocks checked\n",
               *want_last = "memtrace: last-error: error 1 of the process:\n";
    for (int i = 0; i < 2; i++) {
        mt_out out;
        FILE *f = out_open(&out);
        (i ? mt_last_error_request : mt_heap_check_request)(&tables, mt_sym_self(), &out);
        out_text(f, &out, text[0], sizeof text[0]);
        cr_assert(strstr(text[0], i ? want_last : want_check), "%s", text[0]);
        cr_assert(strstr(text[0], who), "%s", text[0]);
    }
    mt_sym_self_unlock();
}

static void *push_2000(void *arg)
{
    (void)arg;
    mt_freed_record r = { .ptr = 0x2000, .size = 16 };
    mt_freed_push(&r);
    return NULL;
}

/* A ring large enough that threads take its push numbers in blocks: the
 * other thread's free has the greater number, yet the reader lists the
 * frees newest first. */
Test(tables, freed_history_in_blocks_newest_first_across_threads)
{
    mt_freed_init(4096);
    mt_descriptor_publish();
    mt_freed_record r = { .ptr = 0x1000, .size = 16 };
    mt_freed_push(&r);
    pthread_t t;
    pthread_create(&t, NULL, push_2000, NULL);
    pthread_join(t, NULL);
    r.ptr = 0x3000;
    mt_freed_push(&r);
    cr_assert(mt_tables_open(&tables, (uintptr_t)&memtrace_state, read_self, &mem_fd));
    const mt_tables_ring_slot *ring;
    size_t n;
    cr_assert(mt_tables_ring(&tables, &ring, &n));
    cr_assert_eq(n, 3);
    cr_assert(ring[0].ptr == 0x3000 && ring[1].ptr == 0x2000 && ring[2].ptr == 0x1000,
              "%#lx %#lx %#lx", (unsigned long)ring[0].ptr, (unsigned long)ring[1].ptr,
              (unsigned long)ring[2].ptr);
}

/* Opens a copy of the descriptor with one word damaged by DAMAGE; returns
 * the reason. */
static const char *open_damaged(void (*damage)(struct memtrace_state *s))
{
    static struct memtrace_state copy;
    copy = memtrace_state;
    damage(&copy);
    cr_assert_not(mt_tables_open(&tables, (uintptr_t)&copy, read_self, &mem_fd));
    return mt_tables_error(&tables);
}

static void shard_bits(struct memtrace_state *s)
{
    s->live_shard_bits = 60;
}
static void entry_ptr(struct memtrace_state *s)
{
    s->entry_ptr = 1000;
}
static void depth_mask(struct memtrace_state *s)
{
    s->stack_depth_mask = 0xffffffffffull;
}
static void not_started(struct memtrace_state *s)
{
    memset(s->magic, 0, 8);
}
static void magic(struct memtrace_state *s)
{
    s->magic[0] = 'X';
}
static void size(struct memtrace_state *s)
{
    s->size = 8;
}
static void ring(struct memtrace_state *s)
{
    s->freed_ring = 16;
}
/* A library of version 1: 32-byte entries where version 2 packs slots. */
static void old_layout(struct memtrace_state *s)
{
    s->version = 1;
}
static void slot_size(struct memtrace_state *s)
{
    s->live_slot_size = 32;
}

Test(tables, a_damaged_descriptor_is_refused_with_its_reason)
{
    cr_assert_str_eq(open_damaged(shard_bits),
                     "memtrace_state looks corrupted (live_shard_bits 60, more than 12)");
    cr_assert_str_eq(open_damaged(entry_ptr), "memtrace_state looks corrupted (entry_ptr 1000, "
                                              "not an 8-byte field inside entry_size 32)");
    cr_assert_str_eq(open_damaged(depth_mask), "memtrace_state looks corrupted (stack_depth_mask "
                                               "0xffffffffff, not a mask of 1 to 16 bits)");
    cr_assert_str_eq(open_damaged(not_started),
                     "memtrace has not started in this process yet (no allocation so far)");
    cr_assert_str_eq(open_damaged(magic),
                     "memtrace_state looks corrupted (magic \"XEMTRACE\", not \"MEMTRACE\")");
    cr_assert_str_eq(open_damaged(size), "memtrace_state looks corrupted (size 8, less than 368)");
    cr_assert_str_eq(open_damaged(old_layout),
                     "memtrace_state has version 1; this helper reads version 2");
    cr_assert_str_eq(open_damaged(slot_size),
                     "memtrace_state looks corrupted (live_slot_size 32, not 24)");

    /* A ring at an unmapped address opens (the layout is plausible) and
     * fails when read, with no crash. */
    mt_freed_record r = { .ptr = 0x5000, .size = 8 };
    mt_freed_push(&r);
    static struct memtrace_state copy;
    copy = memtrace_state;
    ring(&copy);
    cr_assert(mt_tables_open(&tables, (uintptr_t)&copy, read_self, &mem_fd));
    const mt_tables_ring_slot *slots;
    size_t n;
    cr_assert_not(mt_tables_ring(&tables, &slots, &n));
    cr_assert_str_eq(mt_tables_error(&tables),
                     "memtrace_state looks corrupted (freed history at 0x10 unreadable)");
}

/* Records that do not fit a 24-byte slot (a block of 8 MiB or more, an
 * address of 2^47 or more) are the shard's side records: the library and
 * the reader out of process (stopped: shard_entries and find_exact;
 * running: live_shard) give them as they give the others, and a record
 * of the same address replaces one on either side. */
Test(tables, records_that_do_not_pack_are_side_records)
{
    const uintptr_t high = ((uintptr_t)1 << 47) + 0x50;
    const uint64_t big = (uint64_t)9 << 20;
    insert(0x30000, big, 9, 0, 2);      /* side: the size */
    insert(0x40000, 100, 10, 0, 2);     /* a slot */
    insert(high, 10, 11, 0, 2);         /* side: the address */
    insert(0x40000, big + 1, 12, 0, 2); /* the slot's address again, now side */
    insert(0x30000, 7, 13, 0, 2);       /* the side record's again, now a slot */
    cr_assert_eq(mt_live_count(), 3);
    cr_assert_eq(mt_live_block_bytes(), 7 + big + 1 + 10);
    mt_live_entry le;
    bool unlocked = false;
    cr_assert(mt_live_find(0x40000, &le, &unlocked) && le.size == big + 1 && le.seq == 12);
    cr_assert(mt_live_find(high, &le, &unlocked) && le.size == 10 && le.ptr == high);

    cr_assert(mt_tables_open(&tables, (uintptr_t)&memtrace_state, read_self, &mem_fd), "%s",
              mt_tables_error(&tables));
    mt_tables_entry e;
    bool locked;
    cr_assert_eq(mt_tables_find_exact(&tables, 0x40000, &e, &locked), 1);
    cr_assert(e.size == big + 1 && e.seq == 12 && e.thread == 2 && e.kind == MT_KIND_NEW);
    cr_assert_eq(mt_tables_find_exact(&tables, high, &e, &locked), 1);
    cr_assert(e.ptr == high && e.size == 10 && e.seq == 11);
    cr_assert_eq(mt_tables_find_exact(&tables, 0x30000, &e, &locked), 1);
    cr_assert(e.size == 7 && e.seq == 13 && e.thread == 2 && e.kind == MT_KIND_NEW);

    uint64_t stopped = 0, running = 0, bytes = 0;
    mt_tables_live l = { 0 };
    for (size_t n = 0; n < mt_tables_shard_count(&tables); n++) {
        const mt_tables_entry *en;
        size_t k;
        cr_assert(mt_tables_shard_entries(&tables, n, &en, &k));
        stopped += k;
        for (size_t i = 0; i < k; i++)
            bytes += en[i].size;
        cr_assert_eq(mt_tables_live_shard(&tables, n, 3, &l), 1);
        running += l.n;
    }
    mt_tables_live_free(&l);
    cr_assert_eq(stopped, 3);
    cr_assert_eq(running, 3);
    cr_assert_eq(bytes, 7 + big + 1 + 10);

    mt_live_entry out;
    cr_assert(mt_live_remove(0x40000, &out) && out.size == big + 1);
    cr_assert(mt_live_remove(high, &out) && out.size == 10);
    cr_assert(mt_live_remove(0x30000, &out) && out.size == 7);
    cr_assert_eq(mt_live_count(), 0);
    cr_assert_eq(mt_live_block_bytes(), 0);
}
