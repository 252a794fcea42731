/* print_trace: what memtrace knows about one address, written to stderr.
 * Runs in whatever thread a debugger picked, possibly while other threads
 * are stopped inside malloc or inside memtrace: it allocates only from the
 * internal heap (mt_enter) and waits for no lock without a bound. */
#include "common.h"
#include "freed_history.h"
#include "live_table.h"
#include "report.h"
#include "stack_store.h"
#include "symbolize.h"
#include "threads.h"
#include "tracer.h"

#include "../include/memtrace.h"

#include <pthread.h>

static void put_thread(mt_out *out, uint32_t number)
{
    const char *name = mt_threads_name(number);
    if (name)
        mt_out_printf(out, "thread %u \"%s\"", number, name);
    else
        mt_out_printf(out, "thread %u", number);
}

static void put_raw_frames(mt_out *out, const uintptr_t *frames, unsigned depth)
{
    for (unsigned i = 0; i < depth; i++)
        mt_out_printf(out, "  #%u 0x%lx\n", i, (unsigned long)frames[i]);
}

/* The frames of stack ID, one "  #N" line each (see symbolize.h). */
static void put_stack(mt_out *out, mt_stack_id id)
{
    const uintptr_t *frames;
    unsigned depth = mt_stack_get(id, &frames);
    if (depth == 0) {
        mt_out_printf(out, "  (no stack was recorded for this block)\n");
        return;
    }
    if (!mt_sym_self_lock()) {
        mt_out_printf(out, "  (another thread holds the symbolizer; raw frames follow)\n");
        put_raw_frames(out, frames, depth);
        return;
    }
    mt_dwfl *dwfl = mt_sym_self();
    if (dwfl) {
        mt_sym_print_stack(dwfl, true, frames, depth, out);
    } else {
        mt_out_printf(out, "  (libdwfl could not read this process's modules)\n");
        put_raw_frames(out, frames, depth);
    }
    mt_sym_self_unlock();
}

/* "start of a N-byte block" or "K bytes inside a N-byte block at START". */
static void put_position(mt_out *out, uintptr_t addr, uintptr_t start, uint64_t size)
{
    if (addr == start)
        mt_out_printf(out, "start of a %lu-byte block", (unsigned long)size);
    else
        mt_out_printf(out, "%lu bytes inside a %lu-byte block at %#lx",
                      (unsigned long)(addr - start), (unsigned long)size,
                      (unsigned long)start);
}

struct freed_ctx {
    mt_out *out;
    uintptr_t addr;
    bool live;       /* the address is in a live block (printed above) */
    bool unlocked;   /* the live table was read without a lock */
    unsigned n;      /* records printed */
};

/* One freed-history record, newest first; the first one prints the heading. */
static void put_freed(const mt_freed_record *r, void *arg)
{
    struct freed_ctx *c = arg;
    mt_out *out = c->out;
    if (c->n++ == 0) {
        if (c->live)
            mt_out_printf(out, "  live again: freed blocks that covered this address "
                               "before, newest first:\n");
        else
            mt_out_printf(out, "memtrace: %#lx: not a live heap block; freed blocks "
                               "that covered it, newest first:\n", (unsigned long)c->addr);
        if (!c->live && c->unlocked)
            mt_out_printf(out, "  (a table shard was read without its lock: a stopped "
                               "thread was changing it)\n");
    }
    mt_out_printf(out, "  freed block %u: ", c->n);
    put_position(out, c->addr, r->ptr, r->size);
    mt_out_printf(out, " (allocation #%lu, freed after allocation #%lu)\n",
                  (unsigned long)r->alloc_seq, (unsigned long)r->free_seq);
    mt_out_printf(out, "  freed by ");
    put_thread(out, r->free_thread);
    mt_out_printf(out, " at:\n");
    put_stack(out, r->free_stack);
    mt_out_printf(out, "  allocated by ");
    put_thread(out, r->alloc_thread);
    mt_out_printf(out, " at:\n");
    put_stack(out, r->alloc_stack);
}

/* The report format is an interface: gdb/memtrace.py prints the same lines
 * from a core file; change both together. */
static void describe(const void *ptr, mt_out *out)
{
    uintptr_t addr = (uintptr_t)ptr;
    mt_live_entry e;
    bool unlocked = false;
    if (addr == 0) {
        mt_out_printf(out, "memtrace: 0x0: a null pointer, not a heap block\n");
        return;
    }
    struct freed_ctx freed = { .out = out, .addr = addr };
    if (mt_live_find(addr, &e, &unlocked) ||
        mt_live_find_containing(addr, &e, &unlocked)) {
        mt_out_printf(out, "memtrace: %#lx: ", (unsigned long)addr);
        put_position(out, addr, e.ptr, e.size);
        mt_out_printf(out, " allocated by ");
        put_thread(out, e.thread);
        mt_out_printf(out, " (allocation #%lu)\n", (unsigned long)e.seq);
        if (unlocked)
            mt_out_printf(out, "  (read without the table lock: a stopped thread was "
                               "changing it; the record may be stale)\n");
        put_stack(out, e.stack);
        freed.live = true;
        mt_freed_find(addr, put_freed, &freed);
        return;
    }
    freed.unlocked = unlocked;
    if (mt_freed_find(addr, put_freed, &freed) == 0)
        mt_out_printf(out, "memtrace: %#lx: not a live heap block known to memtrace%s\n",
                      (unsigned long)addr,
                      unlocked ? " (a table shard was read without its lock: a "
                                 "stopped thread was changing it)" : "");
}

/* With cancellation disabled throughout: write is a cancellation point, and
 * a thread cancelled while the symbolizer's lock is held would leave every
 * later print_trace with raw frames after a bounded wait. */
MT_EXPORT void memtrace_print_trace(const void *ptr)
{
    int cancel;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    int was = mt_enter();
    mt_out out;
    mt_out_init(&out, 2);
    describe(ptr, &out);
    mt_out_flush(&out);
    mt_leave(was);
    pthread_setcancelstate(cancel, NULL);
}

MT_EXPORT void print_trace(const void *ptr)
{
    memtrace_print_trace(ptr);
}
