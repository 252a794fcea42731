/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Two toggles racing (tests/e2e/launcher.sh): this thread turns recording
 * on while another, as soon as it sees it on, turns it off. Whatever order
 * their stamps land in, the recording words a debugger reads
 * (memtrace_state's recording) must end up saying what the phase says.
 * Prints "@@ disagree N" (N rounds out of ROUNDS where they did not). */
#include "../../src/runtime/descriptor.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#define ROUNDS 20000

static int (*set_recording)(int);
static int (*recording)(void);
static atomic_int go, done;

static void *turn_off(void *arg)
{
    (void)arg;
    for (;;) {
        int g;
        while ((g = atomic_load(&go)) == 0) {
        }
        if (g < 0)
            return NULL;
        while (!recording()) {
        }
        set_recording(0);
        atomic_store(&go, 0);
        atomic_fetch_add(&done, 1);
    }
}

int main(void)
{
    set_recording = (int (*)(int))dlsym(RTLD_DEFAULT, "memtrace_set_recording");
    recording = (int (*)(void))dlsym(RTLD_DEFAULT, "memtrace_recording");
    struct memtrace_state *st = dlsym(RTLD_DEFAULT, "memtrace_state");
    if (!set_recording || !recording || !st) {
        fprintf(stderr, "recording_race: not under memtrace\n");
        return 2;
    }
    volatile uint64_t *on = (volatile uint64_t *)(uintptr_t)st->recording;
    pthread_t t;
    pthread_create(&t, NULL, turn_off, NULL);
    int bad = 0;
    for (int r = 0; r < ROUNDS; r++) {
        set_recording(0);
        int d = atomic_load(&done);
        atomic_store(&go, 1);
        set_recording(1);
        while (atomic_load(&done) == d) {
        }
        if ((uint64_t)recording() != *on)
            bad++;
    }
    atomic_store(&go, -1);
    pthread_join(t, NULL);
    printf("@@ disagree %d\n", bad);
    return 0;
}
