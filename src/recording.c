/* Recording on demand (recording.h). Off is the phase PAUSED: the hot path
 * already sends every allocation of a phase other than READY to the real
 * allocator untraced and still removes the records of freed blocks, so
 * turning recording off adds no test to it. What is left to this file is
 * the bad-free detector's trust: blocks handed out while off are unknown,
 * so turning recording on moves mt_untraced_seq (real.h) past every freed
 * record pushed before, and a later free of such a block at an address
 * freed before is not taken for a double free. */
#include "recording.h"

#include "atomic.h"
#include "common.h"
#include "config.h"
#include "format.h"
#include "output.h"
#include "real.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

mt_recording_words mt_recording_state;

static uint64_t wall_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec;
}

/* Stamps a change to ON at the next allocation number. */
static void stamp(bool on)
{
    mt_recording_words *r = &mt_recording_state;
    mt_atomic_store_relaxed(&r->seq, mt_atomic_load_relaxed(&mt_next_seq));
    mt_atomic_store_relaxed(&r->sec, wall_seconds());
    if (!on)
        mt_atomic_store_relaxed(&r->ever_off, 1);
    mt_atomic_store_release(&r->on, on ? 1 : 0);
}

void mt_recording_init(bool on)
{
    stamp(on);
}

/* Every block the real allocator handed out so far may have been unknown:
 * no freed record pushed until now is trusted by the bad-free detector
 * (bad_free.c's freed_again). Raised before the phase becomes READY, so a
 * thread that sees READY sees the mark; a block handed out untraced by a
 * thread that saw PAUSED and returned after the change moves it again
 * (tracer.c's untraced_outside). */
static void distrust_history(void)
{
    uint64_t now = mt_atomic_load_relaxed(&mt_next_seq) - 1;
    uint64_t seen = mt_atomic_load_relaxed(&mt_untraced_seq);
    while (seen < now && !mt_atomic_cas_acq_rel(&mt_untraced_seq, &seen, now)) {
    }
}

int mt_set_recording(bool on)
{
    int from = on ? MT_PAUSED : MT_READY, to = on ? MT_READY : MT_PAUSED;
    int cur = mt_atomic_load_acquire(&mt_phase);
    if (cur == to)
        return on ? 1 : 0;
    if (cur != from)
        return -1;
    if (on)
        distrust_history();
    if (!mt_atomic_cas_acq_rel(&mt_phase, &cur, to))
        return cur == to ? (on ? 1 : 0) : -1; /* another thread, or a failed mapping */
    stamp(on);
    return on ? 0 : 1;
}

int mt_recording_now(void)
{
    return mt_atomic_load_acquire(&mt_phase) == MT_READY;
}

void mt_recording_say(mt_out *out)
{
    const mt_recording_words *w = &mt_recording_state;
    mt_fmt_recording_state r = {
        .on = mt_atomic_load_acquire(&w->on) != 0,
        .ever_off = mt_atomic_load_relaxed(&w->ever_off) != 0,
        .seq = mt_atomic_load_relaxed(&w->seq),
        .sec = mt_atomic_load_relaxed(&w->sec),
    };
    mt_fmt_recording(out, &r);
}

/* ------------------------------------------------------------ the signal */

static void toggle(int sig)
{
    (void)sig;
    int saved = errno;
    int ph = mt_atomic_load_acquire(&mt_phase);
    if (ph == MT_READY || ph == MT_PAUSED)
        mt_set_recording(ph == MT_PAUSED);
    errno = saved;
}

/* Signal number of NAME: "USR2", "SIGUSR2", "usr2", "RTMIN+3" or a number;
 * 0 if it is none. */
static int signal_number(const char *name)
{
    if (strncasecmp(name, "SIG", 3) == 0)
        name += 3;
    char *end;
    errno = 0;
    long n = strtol(name, &end, 10);
    if (end != name && *end == '\0')
        return errno == 0 && n > 0 && n < NSIG ? (int)n : 0;
    if (strncasecmp(name, "RTMIN+", 6) == 0 || strncasecmp(name, "RTMAX-", 6) == 0) {
        long k = strtol(name + 6, &end, 10);
        if (end == name + 6 || *end != '\0' || k < 0)
            return 0;
        long s = name[5] == '+' ? SIGRTMIN + k : SIGRTMAX - k;
        return s >= SIGRTMIN && s <= SIGRTMAX ? (int)s : 0;
    }
    if (strcasecmp(name, "RTMIN") == 0)
        return SIGRTMIN;
    if (strcasecmp(name, "RTMAX") == 0)
        return SIGRTMAX;
    for (int s = 1; s < SIGRTMIN; s++) {
        const char *abbrev = sigabbrev_np(s);
        if (abbrev && strcasecmp(name, abbrev) == 0)
            return s;
    }
    return 0;
}

void mt_recording_install_signal(void)
{
    const char *s = getenv("MEMTRACE_TOGGLE_SIGNAL");
    if (!s || !*s)
        return;
    int sig = signal_number(s);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = toggle;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sig == 0 || sig == SIGKILL || sig == SIGSTOP || sigaction(sig, &sa, NULL) != 0)
        mt_warn("MEMTRACE_TOGGLE_SIGNAL=\"%s\" is not a signal that can be caught; "
                "no signal turns recording on and off", s);
}
