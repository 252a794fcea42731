/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* print_trace: what memtrace knows about one address, written to stderr.
 * Runs in whatever thread a debugger picked, possibly while other threads
 * are stopped inside malloc or inside memtrace: it allocates only from the
 * internal heap (mt_enter) and waits for no lock without a bound. The
 * answer's text is format.c's, shared with the gdb command. Also the check
 * mode's exit report (describe.h), whose stacks are written the same way. */
#include "report/describe.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/config.h"
#include "base/os.h"
#include "base/output.h"
#include "base/reentry.h"
#include "capture/capture.h"
#include "capture/state.h"
#include "report/format.h"
#include "store/freed_history.h"
#include "store/live_table.h"
#include "store/recording_words.h"
#include "store/stack_bounds.h"
#include "store/stack_store.h"
#include "store/threads.h"
#include "symbolize/symbolize.h"

#define MEMTRACE_DEFINING /* the definitions: no weak declarations, no macros */
#include "../../include/memtrace.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

void mt_describe_stack(void *ctx, mt_out *out, const uintptr_t *frames, unsigned depth)
{
    (void)ctx;
    if (!mt_sym_self_lock()) {
        mt_out_printf(out, "  (another thread holds the symbolizer; raw frames follow)\n");
        mt_fmt_raw_stack(out, frames, depth);
        return;
    }
    mt_sym_state *dwfl = mt_sym_self();
    if (dwfl) {
        mt_fmt_stack(out, dwfl, true, frames, depth);
    } else {
        mt_out_printf(out, "  (libdwfl could not read this process's modules)\n");
        mt_fmt_raw_stack(out, frames, depth);
    }
    mt_sym_self_unlock();
}

void mt_describe_recording(mt_out *out)
{
    const mt_recording_words *w = &mt_recording_state;
    mt_fmt_recording_state r = {
        .on = mt_atomic_load_acquire(&w->on) != 0,
        .ever_off = mt_atomic_load_relaxed(&w->ever_off) != 0,
        .seq = mt_atomic_load_relaxed(&w->seq),
        .sec = mt_atomic_load_relaxed(&w->sec),
        .attached = (mt_atomic_load_relaxed(&w->ever_off) & MT_REC_ATTACHED) != 0,
        .detached = (mt_atomic_load_relaxed(&w->ever_off) & MT_REC_DETACHED) != 0,
    };
    mt_fmt_recording(out, &r);
}

mt_fmt_thread mt_describe_thread(uint32_t number)
{
    return (mt_fmt_thread){ number, mt_threads_name(number) };
}

mt_fmt_stack_ref mt_describe_stack_ref(mt_stack_id id)
{
    mt_fmt_stack_ref s = { 0 };
    s.depth = mt_stack_get(id, &s.frames);
    return s;
}

static mt_fmt_freed freed_of(const mt_freed_record *r)
{
    return (mt_fmt_freed){
        .ptr = r->ptr,
        .size = r->size,
        .alloc_seq = r->alloc_seq,
        .free_seq = r->free_seq,
        .alloc_thread = mt_describe_thread(r->alloc_thread),
        .free_thread = mt_describe_thread(r->free_thread),
        .alloc_stack = mt_describe_stack_ref(r->alloc_stack),
        .free_stack = mt_describe_stack_ref(r->free_stack),
    };
}

static mt_fmt_live live_of(const mt_live_entry *e)
{
    return (mt_fmt_live){
        .ptr = e->ptr,
        .size = e->size,
        .seq = e->seq,
        .thread = mt_describe_thread(mt_entry_thread(e)),
        .stack = mt_describe_stack_ref(e->stack),
    };
}

/* The freed records near the address wait here while the covering ones,
 * which the answer shows first, stream out in the same scan. */
struct freed_found {
    mt_answer *a;
    mt_freed_record near[MT_NEAR_FREED_MAX];
    unsigned nnear;
};

static void put_freed(const mt_freed_record *r, bool near, void *arg)
{
    struct freed_found *f = arg;
    if (!near) {
        mt_fmt_freed fr = freed_of(r);
        mt_answer_freed(f->a, &fr);
    } else if (f->nnear < MT_NEAR_FREED_MAX) {
        f->near[f->nnear++] = *r;
    }
}

/* Whether ADDR is in the calling thread's static TLS block, [tp + tcb -
 * static size, tp + tcb) in glibc's layout (leak_self.c's source_of says
 * more). The sizes are glibc's, asked once (dlsym takes the loader's lock:
 * a report, not the hot path). */
static bool in_own_tls(uintptr_t addr)
{
    static size_t tcb, static_size;
    if (!tcb) {
        void (*get)(size_t *, size_t *) =
            (void (*)(size_t *, size_t *))dlsym(RTLD_DEFAULT, "_dl_get_tls_static_info");
        const unsigned *sizeof_pthread = dlsym(RTLD_DEFAULT, "_thread_db_sizeof_pthread");
        size_t size = 0, align;
        if (get)
            get(&size, &align);
        static_size = size;
        tcb = sizeof_pthread ? *sizeof_pthread : 2304; /* glibc 2.3x's on x86-64 */
    }
    uintptr_t tp = (uintptr_t)__builtin_thread_pointer();
    return static_size > tcb && addr >= tp + tcb - static_size && addr < tp + tcb;
}

/* What ADDR, in no heap block, is (mt_fmt_where_line): the calling
 * thread's TLS or stack (its bounds, stack_bounds.h) or the main thread's
 * stack ("[stack]"), a symbol's bytes, or the mapping. Other threads'
 * stacks and TLS are anonymous mappings here: gdb's `memtrace EXPR`, which
 * sees every thread stopped, names them, and the stack frame. */
static void describe_where(uintptr_t addr, mt_out *out)
{
    char buf[4096 + 256], path[256] = "";
    int fd = mt_os_maps_open_self();
    mt_os_maps maps;
    mt_os_maps_fd(&maps, fd, buf, sizeof buf);
    mt_os_mapping m;
    mt_fmt_where w = { .kind = MT_WHERE_NONE };
    while (fd >= 0 && mt_os_maps_next(&maps, &m)) {
        if (addr < m.start || addr >= m.end)
            continue;
        snprintf(path, sizeof path, "%.*s", (int)m.path_len, m.path);
        w = (mt_fmt_where){ .kind = MT_WHERE_MAPPING,
                            .lo = m.start,
                            .hi = m.end,
                            .path = path,
                            .file = m.inode != 0,
                            .offset = m.offset + (addr - m.start) };
        break;
    }
    if (fd >= 0)
        close(fd);
    if (w.kind == MT_WHERE_MAPPING && in_own_tls(addr)) {
        w = (mt_fmt_where){ .kind = MT_WHERE_TLS,
                            .number = mt_thread_number(),
                            .tid = (uint32_t)syscall(SYS_gettid) };
    } else if (w.kind == MT_WHERE_MAPPING && mt_stack_known > 0 && addr >= mt_stack_low &&
               addr < mt_stack_base) {
        w = (mt_fmt_where){ .kind = MT_WHERE_STACK,
                            .number = mt_thread_number(),
                            .tid = (uint32_t)syscall(SYS_gettid),
                            .frame = -1 };
    } else if (w.kind == MT_WHERE_MAPPING && strcmp(path, "[stack]") == 0) {
        w = (mt_fmt_where){ .kind = MT_WHERE_STACK,
                            .number = 1,
                            .tid = (uint32_t)getpid(),
                            .frame = -1 };
    } else if (w.kind == MT_WHERE_MAPPING && mt_sym_self_lock()) {
        mt_sym_state *st = mt_sym_self();
        mt_sym_data d;
        if (st && mt_sym_data_at(mt_sym_dwfl(st), addr, &d)) {
            mt_fmt_where s = { .kind = MT_WHERE_SYMBOL,
                               .offset = d.offset,
                               .symbol = d.name,
                               .module = d.module,
                               .section = d.section,
                               .function = d.function };
            mt_fmt_where_line(out, &s); /* D's strings are the symbolizer's */
            mt_sym_self_unlock();
            return;
        }
        mt_sym_self_unlock();
    }
    mt_fmt_where_line(out, &w);
}

static void describe(const void *ptr, mt_out *out)
{
    uintptr_t addr = (uintptr_t)ptr;
    mt_answer a;
    if (!mt_answer_begin(&a, out, addr, mt_describe_stack, NULL))
        return;
    a.history = mt_cfg.history;
    a.sampled = mt_cfg.sample;
    mt_live_entry e;
    mt_live_around around = { 0 };
    bool unlocked = false;
    bool exact = mt_live_find(addr, &e, &unlocked);
    bool inside = !exact && mt_live_find_around(addr, &around, &unlocked);
    if (exact || inside) {
        mt_fmt_live live = live_of(exact ? &e : &around.below);
        mt_answer_lookup(&a, &live, unlocked);
    } else {
        mt_answer_lookup(&a, NULL, unlocked);
    }
    struct freed_found f = { .a = &a };
    mt_freed_find_around(addr, MT_NEAR_BYTES, MT_NEAR_FREED_MAX, put_freed, &f);
    if (!exact && !inside) {
        mt_fmt_live below, above;
        if (around.below.ptr)
            below = live_of(&around.below);
        if (around.above.ptr)
            above = live_of(&around.above);
        mt_answer_near(&a, around.below.ptr ? &below : NULL, around.above.ptr ? &above : NULL);
    }
    for (unsigned i = 0; i < f.nnear; i++) {
        mt_fmt_freed fr = freed_of(&f.near[i]);
        mt_answer_near_freed(&a, &fr);
    }
    if (!mt_answer_end(&a) && !a.sampled)
        describe_where(addr, out);
}

/* With cancellation disabled throughout: write is a cancellation point, and
 * a thread cancelled while the symbolizer's lock is held would leave every
 * later print_trace with raw frames after a bounded wait. */
static void print_trace_on_stack(void *ptr)
{
    mt_out out;
    mt_out_init(&out, 2);
    describe(ptr, &out);
    mt_describe_recording(&out);
    mt_out_flush(&out);
}

/* On memtrace's own stack (mt_own_stack): the caller may be a main thread
 * whose stack has no room left to grow (ulimit -v), and libdw's line
 * tables take tens of KiB of it. */
MT_EXPORT void memtrace_print_trace(const void *ptr)
{
    void (*owner)(const void *) = mt_owner("memtrace_print_trace");
    if (owner) {
        owner(ptr);
        return;
    }
    int cancel;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    int was = mt_enter();
    if (mt_stack_known == 0) /* this thread's stack, for describe_where */
        mt_stack_find((uintptr_t)__builtin_frame_address(0));
    mt_os_on_stack(&mt_own_stack, print_trace_on_stack, (void *)ptr);
    mt_leave(was);
    pthread_setcancelstate(cancel, NULL);
}

MT_EXPORT void print_trace(const void *ptr)
{
    memtrace_print_trace(ptr);
}

void mt_describe_check_report(void)
{
    int fd = mt_err_fd();
    if (fd < 0)
        return;
    int was = mt_enter();
    mt_check_counts c;
    mt_check_get(&c);
    mt_out out;
    mt_out_init(&out, fd);
    mt_out_printf(&out, "memtrace: unwind check: %lu captures, %lu mismatches, %lu fallbacks\n",
                  c.captures, c.mismatches, c.fallbacks);
    mt_check_mismatch m;
    for (unsigned i = 0; mt_check_mismatch_get(i, &m); i++) {
        mt_out_printf(&out, "memtrace: unwind check: mismatch %u: cfi, %u frames:\n", i + 1,
                      m.cfi_depth);
        mt_describe_stack(NULL, &out, m.cfi, m.cfi_depth);
        mt_out_printf(&out, "memtrace: unwind check: mismatch %u: libunwind, %u frames:\n", i + 1,
                      m.libunwind_depth);
        mt_describe_stack(NULL, &out, m.libunwind, m.libunwind_depth);
    }
    mt_out_flush(&out);
    mt_leave(was);
}
