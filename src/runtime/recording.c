/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Recording on demand (recording.h). Off is the phase PAUSED: the hot path
 * already sends every allocation of a phase other than READY to the real
 * allocator untraced and still removes the records of freed blocks, so
 * turning recording off adds no test to it. What is left to this file is
 * the bad-free detector's trust: blocks handed out while off are unknown,
 * so turning recording on moves mt_untraced_seq (state.h) past every freed
 * record pushed before, and a later free of such a block at an address
 * freed before is not taken for a double free. */
#include "runtime/recording.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/config.h"
#include "base/output.h"
#include "capture/quarantine.h"
#include "capture/state.h"
#include "store/threads.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t wall_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec;
}

/* The allocation number from which recording last came on: every block
 * recorded since has one at least this great (distrust_history). */
static mt_atomic(uint64_t) on_since = 1;

/* Stamps a change to ON at the next allocation number: on, the first a
 * block recorded from now on can have; off, the one after the last
 * allocation made. The words are stored sequentially consistent, as is
 * every toggle's change of the phase (see stamp_settled). */
static void stamp(bool on)
{
    mt_recording_words *r = &mt_recording_state;
    mt_atomic_store_seq_cst(&r->seq, on ? mt_atomic_load_relaxed(&on_since) : mt_seq_last() + 1);
    mt_atomic_store_seq_cst(&r->sec, wall_seconds());
    if (!on)
        mt_atomic_store_seq_cst(&r->ever_off, mt_atomic_load_relaxed(&r->ever_off) | 1);
    mt_atomic_store_seq_cst(&r->on, on ? 1 : 0);
}

/* Stamps the change to PHASE (READY or PAUSED) that this caller made, and
 * again while the phase has changed since: two toggles racing (one turns
 * on, the other off) may stamp in the other order than they changed the
 * phase, and the words would then contradict the phase for good. With
 * every phase change and stamp in one total order (seq_cst), the caller
 * whose stamp lands last reads the last phase after it. */
static void stamp_settled(int phase)
{
    for (;;) {
        stamp(phase == MT_READY);
        int now = mt_atomic_load_seq_cst(&mt_phase);
        if (now == phase || (now != MT_READY && now != MT_PAUSED))
            return; /* RESUMING: its caller stamps; STOPPED: stays */
        phase = now;
    }
}

void mt_recording_init(bool on)
{
    stamp(on);
}

/* Every block the real allocator handed out so far may have been unknown:
 * no freed record pushed until now is trusted by the bad-free detector
 * (bad_free.c's freed_again). Raised in the phase RESUMING, which only
 * this caller leaves for READY: no READY (no freed record pushed) comes
 * between this and the phase this caller makes READY, so a thread that
 * sees READY sees the mark; a block handed out untraced by a thread that
 * saw PAUSED and returned after the change moves it again (malloc.c's
 * mt_untraced_outside). */
static void distrust_history(void)
{
    uint64_t now = mt_atomic_load_relaxed(&mt_next_seq) - 1;
    uint64_t seen = mt_atomic_load_relaxed(&mt_untraced_seq);
    while (seen < now && !mt_atomic_cas_acq_rel(&mt_untraced_seq, &seen, now)) {
    }
    /* The threads' batches hold numbers below NOW + 1: given up, so that
     * every block recorded from here on has a number above the mark, and
     * "recording since allocation #N" holds. */
    mt_atomic_store_relaxed(&on_since, now + 1);
    mt_seq_new_epoch();
}

static int turn_on(void)
{
    int cur = mt_atomic_load_seq_cst(&mt_phase);
    for (;;) {
        if (cur == MT_READY)
            return 1;
        if (cur == MT_RESUMING)
            return 0; /* another call is turning it on */
        if (cur != MT_PAUSED)
            return -1;
        if (mt_atomic_cas_seq_cst(&mt_phase, &cur, MT_RESUMING))
            break;
    }
    distrust_history();
    cur = MT_RESUMING;
    /* Fails when turned off (PAUSED) or stopped meanwhile: that stays. */
    if (mt_atomic_cas_seq_cst(&mt_phase, &cur, MT_READY))
        stamp_settled(MT_READY);
    return 0;
}

static int turn_off(void)
{
    int cur = mt_atomic_load_seq_cst(&mt_phase);
    for (;;) {
        if (cur == MT_PAUSED)
            return 0;
        if (cur != MT_READY && cur != MT_RESUMING)
            return -1;
        if (mt_atomic_cas_seq_cst(&mt_phase, &cur, MT_PAUSED))
            break;
    }
    stamp_settled(MT_PAUSED);
    mt_quarantine_release_soon();
    return cur == MT_READY ? 1 : 0;
}

int mt_set_recording(bool on)
{
    return on ? turn_on() : turn_off();
}

int mt_recording_now(void)
{
    return mt_atomic_load_acquire(&mt_phase) == MT_READY;
}

/* ------------------------------------------------------------ the signal */

static void toggle(int sig)
{
    (void)sig;
    int saved = errno;
    int ph = mt_atomic_load_acquire(&mt_phase);
    if (ph == MT_READY || ph == MT_PAUSED || ph == MT_RESUMING)
        mt_set_recording(ph == MT_PAUSED); /* RESUMING: on its way on, so off */
    errno = saved;
}

void mt_recording_install_signal(void)
{
    static const char none[] = "no signal turns recording on and off";
    int sig = mt_config_signal(MT_SET_TOGGLE_SIGNAL, none);
    if (!sig)
        return;
    /* A handler there already is the profiler's (MEMTRACE_SIGNAL, the same
     * signal) or a library's from its constructor: not taken from it. */
    struct sigaction sa;
    if (sigaction(sig, NULL, &sa) == 0 &&
        ((sa.sa_flags & SA_SIGINFO) || (sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN))) {
        mt_warn("MEMTRACE_TOGGLE_SIGNAL=\"%s\": that signal has a handler already (MEMTRACE_SIGNAL's "
                "or a library's); %s",
                mt_setting_env("MEMTRACE_TOGGLE_SIGNAL"), none);
        return;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = toggle;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, NULL) != 0)
        mt_warn("MEMTRACE_TOGGLE_SIGNAL=\"%s\" is not a signal that can be caught; %s",
                mt_setting_env("MEMTRACE_TOGGLE_SIGNAL"), none);
}
