/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memtrace_get_stats' ABI (tests/e2e/reliability.sh): a program built
 * against an older or a newer include/memtrace.h must never get bytes
 * written past its struct. Each struct below is followed by a canary.
 *   - the first header's struct (memtrace 0.1.0: four unsigned longs and
 *     an int, 40 bytes), filled by the exported memtrace_get_stats, found
 *     by dlsym as such a program finds it (or is linked to it);
 *   - the same struct through memtrace_get_stats_sized(out, 40);
 *   - a newer header's struct (this one's and two more fields), through
 *     memtrace_get_stats_sized: the fields this library does not know are
 *     zeros, and it says how many bytes it filled;
 *   - this header's struct through the memtrace_get_stats macro: every
 *     field, unwind_fallbacks included.
 * Prints one line per case; exits 0 when every canary survived and the
 * counts are plausible (at least one live block, recording on), 1 if not,
 * 2 when not run under memtrace. */
#include "../../include/memtrace.h"
/* The macro's call is resolved at run time, in the preloaded library, as
 * if the program were linked with it. */
#pragma weak memtrace_get_stats_sized

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CANARY 0x5a5a5a5a5a5a5a5aull

struct stats_0_1 { /* include/memtrace.h as memtrace 0.1.0 first published it */
    unsigned long live_blocks;
    unsigned long live_bytes;
    unsigned long stacks;
    unsigned long metadata_bytes;
    int recording;
};

struct stats_future { /* a later header: two fields more */
    struct memtrace_stats now;
    unsigned long later1, later2;
};

static int bad;

static void expect(const char *what, int ok)
{
    printf("%s: %s\n", what, ok ? "ok" : "WRONG");
    bad |= !ok;
}

int main(void)
{
    void (*get_v1)(struct stats_0_1 *) =
        (void (*)(struct stats_0_1 *))dlsym(RTLD_DEFAULT, "memtrace_get_stats");
    size_t (*get_sized)(void *, size_t) =
        (size_t (*)(void *, size_t))dlsym(RTLD_DEFAULT, "memtrace_get_stats_sized");
    if (!get_v1) {
        fprintf(stderr, "stats_abi: not under memtrace\n");
        return 2;
    }
    void *keep = malloc(100);

    struct {
        struct stats_0_1 s;
        uint64_t canary;
    } old;
    memset(&old, 0, sizeof old);
    old.canary = CANARY;
    get_v1(&old.s);
    expect("the first header's struct (40 bytes), memtrace_get_stats: canary", old.canary == CANARY);
    expect("the first header's struct, memtrace_get_stats: counts",
           old.s.live_blocks >= 1 && old.s.live_bytes >= 100 && old.s.recording == 1);
    expect("memtrace_get_stats_sized is exported", get_sized != NULL);
    if (!get_sized)
        return 1;

    memset(&old, 0, sizeof old);
    old.canary = CANARY;
    size_t n = get_sized(&old.s, sizeof old.s);
    expect("the first header's struct, memtrace_get_stats_sized(40): canary", old.canary == CANARY);
    expect("memtrace_get_stats_sized(40) returns 40", n == sizeof old.s);

    struct {
        struct stats_future s;
        uint64_t canary;
    } later;
    memset(&later, 0xff, sizeof later);
    later.canary = CANARY;
    n = get_sized(&later.s, sizeof later.s);
    expect("a newer header's struct (64 bytes), memtrace_get_stats_sized: canary",
           later.canary == CANARY);
    expect("memtrace_get_stats_sized(64) returns this library's 48",
           n == sizeof(struct memtrace_stats) && n == 48);
    expect("a newer header's fields this library does not know are 0",
           later.s.later1 == 0 && later.s.later2 == 0);
    expect("a newer header's struct: counts",
           later.s.now.live_blocks >= 1 && later.s.now.recording == 1 &&
               later.s.now.unwind_fallbacks != (unsigned long)-1);

    struct {
        struct memtrace_stats s;
        uint64_t canary;
    } cur;
    memset(&cur, 0xff, sizeof cur);
    cur.canary = CANARY;
    memtrace_get_stats(&cur.s); /* the macro: memtrace_get_stats_sized(&cur.s, 48) */
    expect("this header's struct, the memtrace_get_stats macro: canary", cur.canary == CANARY);
    expect("this header's struct: every field filled (unwind_fallbacks too)",
           cur.s.live_blocks >= 1 && cur.s.recording == 1 &&
               cur.s.unwind_fallbacks != (unsigned long)-1);
    free(keep);
    return bad;
}
