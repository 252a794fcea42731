/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The exported API beyond print_trace (include/memtrace.h): counters,
 * recording on and off, the version, tag scopes, and what the program
 * tells memtrace (its pool's blocks, leak checks, ignored blocks, root
 * regions). No heap. A copy of memtrace
 * that stands aside (mt_owner) passes each call to the copy in charge. */
#include "base/common.h"
#include "base/reentry.h"
#include "base/output.h"
#include "base/upcalls.h"
#include "capture/capture.h"
#include "capture/state.h"
#include "capture/entry_points.h"
#include "capture/sample.h"
#include "leak/leak_check.h"
#include "leak/leak_client.h"
#include "runtime/recording.h"
#include "runtime/startup.h"
#include "store/freed_history.h"
#include "store/live_table.h"
#include "store/stack_store.h"
#include "tags/tags.h"

#define MEMTRACE_DEFINING /* the definitions: no weak declarations, no macros */
#include "../../include/memtrace.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

static void get_stats(struct memtrace_stats *out)
{
    void (*owner)(struct memtrace_stats *) = mt_owner("memtrace_get_stats");
    if (owner) {
        owner(out);
        return;
    }
    size_t freed_cap = 0;
    uint64_t pushed = 0;
    mt_freed_ring(&freed_cap, &pushed);
    memset(out, 0, sizeof *out); /* the padding too: it may be copied out */
    out->live_blocks = mt_live_count();
    out->live_bytes = mt_live_block_bytes();
    out->stacks = mt_stack_count();
    out->metadata_bytes =
        mt_live_mapped_bytes() + mt_stack_mapped_bytes() + freed_cap * sizeof(mt_freed_record);
    out->recording = mt_recording_now();
    out->unwind_fallbacks = mt_unwind_fallbacks();
}

/* The struct as memtrace_get_stats was first published (memtrace 0.1.0,
 * before unwind_fallbacks): the bytes an old caller's struct has, and all
 * that function ever writes. Never changes. */
struct stats_v1 {
    unsigned long live_blocks, live_bytes, stacks, metadata_bytes;
    int recording;
};
_Static_assert(offsetof(struct memtrace_stats, recording) == offsetof(struct stats_v1, recording),
               "fields are only added at the end");

MT_EXPORT size_t memtrace_get_stats_sized(struct memtrace_stats *out, size_t size)
{
    struct memtrace_stats s;
    get_stats(&s);
    size_t n = size < sizeof s ? size : sizeof s;
    memcpy(out, &s, n);
    if (size > n) /* a newer header's fields this library does not know */
        memset((char *)out + n, 0, size - n);
    return n;
}

/* Not the header's macro of the same name: the exported function that
 * programs built against the first header call, directly or by dlsym. */
MT_EXPORT void(memtrace_get_stats)(struct memtrace_stats *out)
{
    memtrace_get_stats_sized(out, sizeof(struct stats_v1));
}

MT_EXPORT int memtrace_set_recording(int on)
{
    int (*owner)(int) = mt_owner("memtrace_set_recording");
    if (owner)
        return owner(on);
    if (mt_atomic_load_acquire(&mt_phase) == MT_UNINIT && !mt_busy)
        mt_start();
    return mt_set_recording(on != 0);
}

MT_EXPORT int memtrace_recording(void)
{
    int (*owner)(void) = mt_owner("memtrace_recording");
    if (owner)
        return owner();
    return mt_recording_now();
}

MT_EXPORT const char *memtrace_version(void)
{
    return MEMTRACE_VERSION;
}

/* Tag scopes (tags/tags.h): the header's macros of the same names call
 * these when they are defined (weak references), so the parentheses. A
 * refused call says why in one line and changes nothing. The calls a
 * program makes in its loops, a push of a scope the thread's cache knows
 * and a pop, neither allocate nor say anything: they run inline, without
 * mt_enter; everything else (a copy standing aside, a miss, a refusal)
 * is the slow functions', which decide again from the start. */
static MT_COLD int push_slow(const char *name)
{
    int (*owner)(const char *) = mt_owner("memtrace_tag_push");
    if (owner)
        return owner(name);
    int was = mt_enter();
    const char *why = mt_tag_push(name);
    mt_shadow_tags(); /* the first push puts tags in use */
    if (why)
        mt_warn("%s", why);
    mt_leave(was);
    return why ? -1 : 0;
}

MT_EXPORT int(memtrace_tag_push)(const char *name)
{
    /* mt_aside: mt_owner's test, without its call. */
    if (MT_LIKELY(!mt_aside) && MT_LIKELY(mt_tag_push_known(name)))
        return 0;
    return push_slow(name);
}

static MT_COLD int pop_slow(void)
{
    int (*owner)(void) = mt_owner("memtrace_tag_pop");
    if (owner)
        return owner();
    const char *why = mt_tag_pop();
    if (why) {
        int was = mt_enter();
        mt_warn("%s", why);
        mt_leave(was);
    }
    return why ? -1 : 0;
}

MT_EXPORT int(memtrace_tag_pop)(void)
{
    if (MT_LIKELY(!mt_aside) && MT_LIKELY(mt_tag_pop() == NULL))
        return 0;
    return pop_slow();
}

/* ---- what the program tells memtrace (memtrace.h: malloclike & co.) */

MT_EXPORT int(memtrace_running)(void)
{
    return 1;
}

MT_EXPORT void(memtrace_malloclike)(const void *p, size_t size)
{
    void (*owner)(const void *, size_t) = mt_owner("memtrace_malloclike");
    if (owner) {
        owner(p, size);
        return;
    }
    mt_pool_record(p, size);
}

MT_EXPORT void(memtrace_freelike)(const void *p)
{
    void (*owner)(const void *) = mt_owner("memtrace_freelike");
    if (owner) {
        owner(p);
        return;
    }
    mt_pool_release(p);
}

MT_EXPORT size_t(memtrace_leak_check)(void)
{
    /* First, while the caller's callee-saved registers are intact. */
    ucontext_t uc;
    if (getcontext(&uc) != 0)
        memset(&uc, 0, sizeof uc);
    size_t (*owner)(void) = mt_owner("memtrace_leak_check");
    if (owner)
        return owner();
    if (mt_atomic_load_acquire(&mt_phase) == MT_UNINIT && !mt_busy)
        mt_start();
    return (size_t)mt_leak_check_now(&uc, (uintptr_t)__builtin_frame_address(0));
}

/* One "memtrace:" line for a refused or doubtful call. */
static MT_COLD void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    int was = mt_enter();
    mt_warn("%s", line);
    mt_leave(was);
}

MT_EXPORT void(memtrace_ignore_object)(const void *p)
{
    void (*owner)(const void *) = mt_owner("memtrace_ignore_object");
    if (owner) {
        owner(p);
        return;
    }
    int was = mt_enter();
    const char *why = mt_leak_ignore((uintptr_t)p);
    mt_leave(was);
    if (why)
        say("memtrace_ignore_object: %p %s", p, why);
}

MT_EXPORT void(memtrace_register_root_region)(const void *p, size_t size)
{
    void (*owner)(const void *, size_t) = mt_owner("memtrace_register_root_region");
    if (owner) {
        owner(p, size);
        return;
    }
    uintptr_t overlap[2];
    const char *why = mt_leak_root_add((uintptr_t)p, size, overlap);
    if (why)
        say("memtrace_register_root_region: [%p, +%zu) %s", p, size, why);
    else if (overlap[1])
        say("memtrace_register_root_region: [%#lx, %#lx) overlaps the region [%#lx, %#lx) "
            "registered before; both are scanned",
            (unsigned long)(uintptr_t)p, (unsigned long)((uintptr_t)p + size),
            (unsigned long)overlap[0], (unsigned long)overlap[1]);
}

MT_EXPORT void(memtrace_unregister_root_region)(const void *p, size_t size)
{
    void (*owner)(const void *, size_t) = mt_owner("memtrace_unregister_root_region");
    if (owner) {
        owner(p, size);
        return;
    }
    const char *why = mt_leak_root_remove((uintptr_t)p, size);
    if (why)
        say("memtrace_unregister_root_region: [%#lx, %#lx) %s", (unsigned long)(uintptr_t)p,
            (unsigned long)((uintptr_t)p + size), why);
}
