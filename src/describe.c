/* print_trace: what memtrace knows about one address, written to stderr.
 * Runs in whatever thread a debugger picked, possibly while other threads
 * are stopped inside malloc or inside memtrace: it allocates only from the
 * internal heap (mt_enter) and waits for no lock without a bound. */
#include "common.h"
#include "live_table.h"
#include "report.h"
#include "stack_store.h"
#include "symbolize.h"
#include "tracer.h"

#include "../include/memtrace.h"

static void describe(const void *ptr, mt_out *out)
{
    uintptr_t addr = (uintptr_t)ptr;
    mt_live_entry e;
    bool unlocked = false;
    if (addr == 0) {
        mt_out_printf(out, "memtrace: 0x0: a null pointer, not a heap block\n");
        return;
    }
    if (mt_live_find(addr, &e, &unlocked)) {
        mt_out_printf(out, "memtrace: %#lx: start of a %lu-byte block", (unsigned long)addr,
                      (unsigned long)e.size);
    } else if (mt_live_find_containing(addr, &e, &unlocked)) {
        mt_out_printf(out, "memtrace: %#lx: %lu bytes inside a %lu-byte block at %#lx",
                      (unsigned long)addr, (unsigned long)(addr - e.ptr),
                      (unsigned long)e.size, (unsigned long)e.ptr);
    } else {
        mt_out_printf(out, "memtrace: %#lx: not a live heap block known to memtrace%s\n",
                      (unsigned long)addr,
                      unlocked ? " (a table shard was read without its lock: a "
                                 "stopped thread was changing it)" : "");
        return;
    }
    mt_out_printf(out, " allocated by thread %u (allocation #%lu)\n", e.thread,
                  (unsigned long)e.seq);
    if (unlocked)
        mt_out_printf(out, "  (read without the table lock: a stopped thread was "
                           "changing it; the record may be stale)\n");

    const uintptr_t *frames;
    unsigned depth = mt_stack_get(e.stack, &frames);
    if (depth == 0) {
        mt_out_printf(out, "  (no stack was recorded for this block)\n");
        return;
    }
    if (!mt_sym_self_lock()) {
        mt_out_printf(out, "  (another thread holds the symbolizer; raw frames follow)\n");
        for (unsigned i = 0; i < depth; i++)
            mt_out_printf(out, "  #%u 0x%lx\n", i, (unsigned long)frames[i]);
        return;
    }
    mt_dwfl *dwfl = mt_sym_self();
    if (dwfl) {
        mt_sym_print_stack(dwfl, true, frames, depth, out);
    } else {
        mt_out_printf(out, "  (libdwfl could not read this process's modules)\n");
        for (unsigned i = 0; i < depth; i++)
            mt_out_printf(out, "  #%u 0x%lx\n", i, (unsigned long)frames[i]);
    }
    mt_sym_self_unlock();
}

MT_EXPORT void memtrace_print_trace(const void *ptr)
{
    int was = mt_enter();
    mt_out out;
    mt_out_init(&out, 2);
    describe(ptr, &out);
    mt_out_flush(&out);
    mt_leave(was);
}

MT_EXPORT void print_trace(const void *ptr)
{
    memtrace_print_trace(ptr);
}
