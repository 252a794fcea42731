/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The leak check at exit where the program works against it
 * (tests/e2e/leak_robust.sh). One mode per run, argv[1]:
 *
 *  smash-huge | smash-ptr | smash-stack | smash-overlap
 *      A wild write into memtrace's live table (found through the
 *      memtrace_state descriptor): the entry of a block the program keeps
 *      in a global gets a size of 2^62, an address in no mapping, a stack
 *      id the store never gave out, or (overlap) a size reaching into the
 *      next block. A block lost on purpose (SITE:lost) must still be
 *      reported, and the run must end with its status.
 *  stop-WAIT (sleep, pause, read, join)
 *      main waits in WAIT while a worker calls exit(7): main must not run
 *      on (return from main with 0) because the check interrupted it.
 *  core
 *      A list of 4000 blocks held by a global and 1000 lost ones, then
 *      checkpoint(), where the script takes a core with gdb; "@@ slots ADDR"
 *      names where the live table's entries are.
 *  main-exit
 *      main keeps a block in a global and leaves with pthread_exit while a
 *      worker runs on, then exits: the check must find the global root (no
 *      block lost) and symbolize.
 * "@@ NAME ADDR" lines on stdout give the script the addresses. */
#define _GNU_SOURCE
#include "../../src/runtime/descriptor.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *kept[2];
static volatile int sink;
static int pipe_fds[2];

/* The mask of a slot's address bits (descriptor.h's live_slot_ptr_bits). */
static uint64_t ptr_mask(const struct memtrace_state *st)
{
    return ((uint64_t)1 << st->live_slot_ptr_bits) - 1;
}

/* The live table slot of block P, or NULL. */
static char *entry_of(void *p)
{
    const struct memtrace_state *st = dlsym(RTLD_DEFAULT, "memtrace_state");
    if (!st || memcmp(st->magic, MT_STATE_MAGIC, 8) != 0)
        return NULL;
    uint64_t h = ((uint64_t)(uintptr_t)p >> st->live_hash_shift) * st->live_hash_multiplier;
    /* The shard by region (descriptor.h's live_region_shift). */
    unsigned g = (unsigned)st->live_group_bits;
    uint64_t n = (((uintptr_t)p >> st->live_region_shift) << g | (g ? h >> (64 - g) : 0)) &
                 (st->live_shard_count - 1);
    const char *shard = (const char *)(uintptr_t)st->live_shards + n * st->live_shard_size;
    char *slots = *(char *const *)(shard + st->live_slots_offset);
    if (!slots)
        return NULL;
    /* Capacities are counts (descriptor.h's live_cap_offset). */
    uint64_t cap = *(const uint64_t *)(slots + st->live_cap_offset);
    char *entries = slots + st->live_entries_offset;
    uint64_t i = (uint64_t)(((unsigned __int128)(h << g) * cap) >> 64);
    for (uint64_t probed = 0; probed < cap; probed++, i = i + 1 == cap ? 0 : i + 1) {
        char *e = entries + i * st->live_slot_size;
        uint64_t ptr;
        memcpy(&ptr, e, 8);
        if ((ptr & ptr_mask(st)) == (uintptr_t)p)
            return e;
        if (!ptr)
            return NULL;
    }
    return NULL;
}

static int smash(const char *how)
{
    const struct memtrace_state *st = dlsym(RTLD_DEFAULT, "memtrace_state");
    kept[0] = malloc(100); /* SITE:kept */
    kept[1] = malloc(100);
    void *lost = malloc(24); /* SITE:lost */
    sink = lost != NULL;
    lost = NULL;
    char *e = st ? entry_of(kept[0]) : NULL;
    if (!e) {
        fprintf(stderr, "leak_robust: no live table entry for %p\n", kept[0]);
        return 2;
    }
    printf("@@ kept %p\n", kept[0]);
    /* A slot (descriptor.h): word 0 the address and the size's high
     * bits, word 16 the stack id in its low 32 bits and the size's low
     * bits at the top. */
    uint64_t w0, w2, pb = st->live_slot_ptr_bits, low = st->live_slot_size_low;
    memcpy(&w0, e, 8);
    memcpy(&w2, e + 16, 8);
    if (strcmp(how, "smash-huge") == 0) {
        w0 |= ~ptr_mask(st); /* the most a slot holds: 8 MiB, past the heap */
        w2 |= ~(uint64_t)0 << (64 - low);
        memcpy(e, &w0, 8);
        memcpy(e + 16, &w2, 8);
    } else if (strcmp(how, "smash-ptr") == 0) {
        uint64_t ptr = 0x7ff0deadbee0; /* in no mapping */
        w0 = (w0 & ~ptr_mask(st)) | ptr;
        memcpy(e, &w0, 8);
        printf("@@ bad %#lx\n", (unsigned long)ptr);
    } else if (strcmp(how, "smash-stack") == 0) {
        uint32_t stack = 0xfffffff0u;
        memcpy(e + 16, &stack, 4);
    } else {
        uint64_t lo = (uintptr_t)kept[0] < (uintptr_t)kept[1] ? 0 : 1;
        char *low_e = lo == 0 ? e : entry_of(kept[1]);
        uint64_t size = (uint64_t)((char *)kept[1 - lo] - (char *)kept[lo]) + 16;
        memcpy(&w0, low_e, 8);
        memcpy(&w2, low_e + 16, 8);
        w0 = (w0 & ptr_mask(st)) | (size >> low) << pb;
        w2 = (w2 & (~(uint64_t)0 >> low)) | size << (64 - low);
        memcpy(low_e, &w0, 8);
        memcpy(low_e + 16, &w2, 8);
        printf("@@ low %p\n", kept[lo]);
    }
    fflush(stdout);
    return 0;
}

static void *exit_soon(void *arg)
{
    (void)arg;
    usleep(200000);
    exit(7);
}

static void *run_on(void *arg)
{
    (void)arg;
    usleep(300000);
    void (*trace)(const void *) = (void (*)(const void *))dlsym(RTLD_DEFAULT,
                                                                "memtrace_print_trace");
    if (trace)
        trace(kept[0]);
    exit(0);
}

__attribute__((noinline)) void checkpoint(void)
{
    __asm__ volatile("" ::: "memory");
}

static int for_core(void)
{
    void **list = NULL;
    for (int i = 0; i < 4000; i++) {
        void **b = malloc(16 + 8 * (i % 7));
        b[0] = list;
        list = b;
    }
    kept[0] = list;
    for (int i = 0; i < 1000; i++)
        sink += malloc(24) != NULL;
    const struct memtrace_state *st = dlsym(RTLD_DEFAULT, "memtrace_state");
    char *e = st ? entry_of(list) : NULL; /* none without memtrace */
    if (e)
        printf("@@ slots %p\n", (void *)e);
    fflush(stdout);
    checkpoint();
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strncmp(mode, "smash-", 6) == 0)
        return smash(mode);
    if (strncmp(mode, "stop-", 5) == 0) {
        pthread_t t;
        char c;
        if (pipe(pipe_fds) != 0 || pthread_create(&t, NULL, exit_soon, NULL) != 0)
            return 2;
        if (strcmp(mode, "stop-sleep") == 0)
            sleep(5);
        else if (strcmp(mode, "stop-pause") == 0)
            pause();
        else if (strcmp(mode, "stop-read") == 0)
            sink = (int)read(pipe_fds[0], &c, 1);
        else
            pthread_join(t, NULL);
        printf("main ran on\n");
        return 0;
    }
    if (strcmp(mode, "core") == 0)
        return for_core();
    if (strcmp(mode, "main-exit") == 0) {
        pthread_t t;
        kept[0] = malloc(48); /* SITE:global */
        if (pthread_create(&t, NULL, run_on, NULL) != 0)
            return 2;
        pthread_exit(NULL);
    }
    fprintf(stderr, "usage: leak_robust MODE\n");
    return 2;
}
