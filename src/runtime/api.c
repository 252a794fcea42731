/* The exported API beyond print_trace (include/memtrace.h): counters,
 * recording on and off, the version. No locks, no heap. A copy of memtrace
 * that stands aside (mt_owner) passes each call to the copy in charge. */
#include "base/common.h"
#include "base/reentry.h"
#include "base/output.h"
#include "base/upcalls.h"
#include "capture/capture.h"
#include "capture/real.h"
#include "runtime/recording.h"
#include "runtime/startup.h"
#include "store/freed_history.h"
#include "store/live_table.h"
#include "store/stack_store.h"
#include "tags/tags.h"

#define MEMTRACE_DEFINING /* the tag functions' definitions: not weak */
#include "../../include/memtrace.h"

#include <stddef.h>
#include <string.h>

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
    out->metadata_bytes = mt_live_mapped_bytes() + mt_stack_mapped_bytes() +
                          freed_cap * sizeof(mt_freed_record);
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
