/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memtrace top's batch output (tests/e2e/live_top_batch.sh): a fixed set
 * of blocks at known sites, then a wait until killed, allocating nothing
 * more (not even stdio's buffer). Prints "ready PID" once the set is
 * allocated.
 *
 *   live_top_fixed          the set: 100 x 48 bytes (make_small), 3 x 1000
 *                           bytes (make_medium), 1 x 4096 (make_large)
 *   live_top_fixed torn     then plants in its own live table what a
 *                           reader meets half-way through a backward shift:
 *                           a second copy of one of make_small's records,
 *                           after its probe run, the lock free, the count
 *                           as it was; the table shows 100 blocks there,
 *                           never 101
 *   live_top_fixed locked   then holds the lock of that record's shard for
 *                           ever, as a writer stopped inside it */
#include "../../src/runtime/descriptor.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *keep[104];

__attribute__((noinline)) static void *make_small(void)
{
    return malloc(48); /* SITE:small */
}

__attribute__((noinline)) static void *make_medium(void)
{
    return malloc(1000); /* SITE:medium */
}

__attribute__((noinline)) static void *make_large(void)
{
    return calloc(1, 4096); /* SITE:large */
}

/* The address in a slot (descriptor.h: the low live_slot_ptr_bits bits
 * of its first word; 0: empty). */
static uint64_t slot_ptr(const struct memtrace_state *d, const char *slot)
{
    uint64_t w0;
    memcpy(&w0, slot, 8);
    return w0 & (((uint64_t)1 << d->live_slot_ptr_bits) - 1);
}

/* The shard holding P's record: its header and slot, or 0. */
static int find_record(const struct memtrace_state *d, uintptr_t p, char **shard, char **slot,
                       char **entries, uint64_t *cap)
{
    for (uint64_t i = 0; i < d->live_shard_count; i++) {
        char *sh = (char *)(uintptr_t)d->live_shards + i * d->live_shard_size;
        char *slots;
        memcpy(&slots, sh + d->live_slots_offset, sizeof slots);
        if (!slots)
            continue;
        memcpy(cap, slots + d->live_cap_offset, 8);
        char *e = slots + d->live_entries_offset;
        for (uint64_t j = 0; j < *cap; j++) {
            if (slot_ptr(d, e + j * d->live_slot_size) == p) {
                *shard = sh, *slot = e + j * d->live_slot_size, *entries = e;
                return 1;
            }
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    int n = 0;
    for (int i = 0; i < 100; i++)
        keep[n++] = make_small();
    for (int i = 0; i < 3; i++)
        keep[n++] = make_medium();
    keep[n++] = make_large();
    const char *mode = argc > 1 ? argv[1] : "";
    /* Not through stdio: its buffer would be a block of libc's. */
    char line[32];
    int len = snprintf(line, sizeof line, "ready %d\n", (int)getpid());
    if (write(1, line, (size_t)len) != len)
        return 1;
    if (*mode) {
        const struct memtrace_state *d = dlsym(RTLD_DEFAULT, "memtrace_state");
        char *shard, *slot, *entries;
        uint64_t cap;
        if (!d || !find_record(d, (uintptr_t)keep[50], &shard, &slot, &entries, &cap)) {
            return 3; /* no record of the block found */
        }
        if (strcmp(mode, "torn") == 0) {
            /* After the end of the record's probe run: the first empty slot. */
            uint64_t j = (uint64_t)(slot - entries) / d->live_slot_size;
            for (;;) {
                j = j + 1 == cap ? 0 : j + 1;
                if (!slot_ptr(d, entries + j * d->live_slot_size))
                    break;
            }
            memcpy(entries + j * d->live_slot_size, slot, d->live_slot_size);
        } else {
            int token = 1;
            memcpy(shard + d->live_lock_offset, &token, sizeof token);
        }
    }
    for (;;)
        pause();
}
