/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Recording on demand (tests/e2e/launcher.sh). Blocks allocated before
 * recording is turned off, while it is off and after it is on again; the
 * switch is memtrace_set_recording (argument "api") or the signal
 * MEMTRACE_TOGGLE_SIGNAL names, raised by the program itself ("signal"),
 * or nothing ("none").
 * Prints "@@ NAME VALUE" on stdout (addresses, what the API returned, and
 * whether the block allocated while off reuses the address of one freed
 * while recording), then asks print_trace about each block, then frees
 * them all: the free of a block allocated while off must pass silently,
 * even at an address the freed history holds. With "segv" it allocates a
 * block and then writes through a null pointer: a real SIGSEGV, which must
 * kill it whatever signal settings memtrace was given. */
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int (*set_recording)(int);
static int (*recording)(void);
static void (*trace)(const void *);
static const char *(*version)(void);

static void toggle(const char *how, int on)
{
    if (strcmp(how, "none") == 0)
        return;
    if (strcmp(how, "signal") == 0) {
        raise(SIGUSR2);
        printf("@@ now %d\n", recording());
    } else {
        printf("@@ was %d\n", set_recording(on));
        printf("@@ now %d\n", recording());
    }
}

/* gdb stops here (tests/e2e/launcher.sh) while recording is off. */
void while_off(void);
void while_off(void)
{
    __asm__ volatile("");
}

/* gdb stops here (tests/e2e/launcher.sh): every block is allocated. */
void all_allocated(void);
void all_allocated(void)
{
    __asm__ volatile("");
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "api";
    if (strcmp(how, "segv") == 0) {
        free(malloc(16));
        int *volatile null = NULL;
        *null = 1;
        return 0;
    }
    set_recording = (int (*)(int))dlsym(RTLD_DEFAULT, "memtrace_set_recording");
    recording = (int (*)(void))dlsym(RTLD_DEFAULT, "memtrace_recording");
    trace = (void (*)(const void *))dlsym(RTLD_DEFAULT, "print_trace");
    version = (const char *(*)(void))dlsym(RTLD_DEFAULT, "memtrace_version");
    if (!set_recording || !recording || !trace || !version) {
        fprintf(stderr, "recording: not under memtrace\n");
        return 2;
    }
    printf("@@ version %s\n", version());
    printf("@@ start %d\n", recording());
    char *before = malloc(11); /* SITE:before */
    char *reused = malloc(24); /* SITE:reused */
    char *gone = malloc(555); /* SITE:gone */
    uintptr_t gone_at = (uintptr_t)gone;
    free(reused);
    toggle(how, 0);
    free(gone); /* recorded, freed while off: its record must go */
    char *during = malloc(24); /* SITE:during */
    char *during2 = malloc(33); /* SITE:during2 */
    while_off();
    toggle(how, 1);
    char *after = malloc(44); /* SITE:after */
    printf("@@ before %p\n@@ during %p\n@@ during2 %p\n@@ after %p\n@@ gone %p\n@@ same %d\n",
           (void *)before, (void *)during, (void *)during2, (void *)after, (void *)gone_at,
           during == reused);
    fflush(stdout);
    all_allocated();
    trace(before);
    trace(during);
    trace(during2);
    trace(after);
    trace((void *)gone_at);
    free(during); /* allocated while off, at an address freed while on */
    free(during2);
    free(before);
    free(after);
    fprintf(stderr, "@@ done\n");
    return 0;
}
