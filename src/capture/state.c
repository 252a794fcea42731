/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The state the hot path shares with start-up (state.h): the next
 * allocator, the phase, the pass-through and held depths, the untraced
 * accounting; and which copy of memtrace is in charge (mt_owner), kept
 * below the reports and the API functions that forward to the owner's.
 * Every entry point's file and the quarantine read it; this file calls
 * none of theirs. */
#include "capture/state.h"

#include "base/atomic.h"
#include "base/reentry.h"
#include "store/threads.h"

#include <dlfcn.h>

mt_real_allocator mt_real;
bool mt_real_glibc;
mt_atomic(int) mt_phase = MT_UNINIT;
MT_TLS int mt_fork_window;
MT_TLS unsigned mt_passthrough_allocs;
mt_atomic(void *) mt_ext[MT_EXT_COUNT];
mt_atomic(int) mt_ext_ready;
/* The allocation counter: the numbers handed out to the threads' batches
 * so far, plus one (next_seq). It has its cache line to itself: every
 * thread's batch refill adds to it, and a neighbour read on every call
 * (mt_cfg was one) would otherwise miss in the other threads' caches each
 * time. A one-member aligned struct owns its whole line wherever the linker
 * puts it; mt_next_seq names its member for the rest of memtrace. */
static struct {
    mt_atomic(uint64_t) next;
} __attribute__((aligned(MT_CACHELINE))) seq_line = { 1 };
extern mt_atomic(uint64_t) mt_next_seq __attribute__((alias("seq_line")));

mt_atomic(uint64_t) mt_untraced_seq;

/* Window and scope accounting (see mt_untraced_seq). Only the window
 * matters: no record precedes the phase READY, none is consulted after
 * it, and the calls a pass-through scope sends on untraced inside an entry
 * point are recorded or forgotten by that entry point. */
MT_COLD MT_NOINLINE void mt_note_untraced(void)
{
    if (mt_atomic_load_relaxed(&mt_phase) != MT_READY)
        return;
    uint64_t now = mt_atomic_load_relaxed(&mt_next_seq) - 1;
    uint64_t seen = mt_atomic_load_relaxed(&mt_untraced_seq);
    while (seen < now && !mt_atomic_cas_acq_rel(&mt_untraced_seq, &seen, now)) {
    }
    /* Numbers left in the threads' batches are below NOW: the blocks
     * recorded from here on must get greater ones to be trusted. */
    mt_seq_new_epoch();
}

bool mt_aside;

void *mt_owner(const char *name)
{
    if (!mt_aside)
        return NULL;
    int was = mt_enter();
    void *f = dlsym(RTLD_DEFAULT, name);
    mt_leave(was);
    return f;
}
