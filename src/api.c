/* The exported API beyond print_trace (include/memtrace.h): counters,
 * recording on and off, the version. No locks, no heap. A copy of memtrace
 * that stands aside (mt_owner) passes each call to the copy in charge. */
#include "capture.h"
#include "common.h"
#include "freed_history.h"
#include "live_table.h"
#include "stack_store.h"
#include "real.h"
#include "recording.h"
#include "reentry.h"
#include "startup.h"

#include "../include/memtrace.h"

MT_EXPORT void memtrace_get_stats(struct memtrace_stats *out)
{
    void (*owner)(struct memtrace_stats *) = mt_owner("memtrace_get_stats");
    if (owner) {
        owner(out);
        return;
    }
    size_t freed_cap = 0;
    uint64_t pushed = 0;
    mt_freed_ring(&freed_cap, &pushed);
    out->live_blocks = mt_live_count();
    out->live_bytes = mt_live_block_bytes();
    out->stacks = mt_stack_count();
    out->metadata_bytes = mt_live_mapped_bytes() + mt_stack_mapped_bytes() +
                          freed_cap * sizeof(mt_freed_record);
    out->recording = mt_recording_now();
    out->unwind_fallbacks = mt_unwind_fallbacks();
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
