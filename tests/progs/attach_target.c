/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A program started without memtrace for `memtrace attach` to attach to
 * (tests/e2e/attach.sh): THREADS threads allocate, check and free blocks
 * at full speed (malloc, calloc, realloc, posix_memalign, free) while the
 * main thread waits in nanosleep for the files DIR/go and DIR/stop.
 *
 *   attach_target THREADS DIR
 *
 * Prints "@@ holder ADDR" and "@@ before ADDR" (blocks allocated at
 * start), then, once DIR/go exists, "@@ after ADDR" (a block allocated
 * then), "@@ gone ADDR" (one freed once DIR/late exists), "@@ held ADDR"
 * and "@@ after-done": the held block, 48 bytes, has its only pointer in
 * the holder, 64 bytes (attach-holder, attach-held); a 72-byte block to which no pointer
 * is left (attach-lost: its address is kept XORed), freed at the end
 * unless ATTACH_TARGET_KEEP is set.
 * Once DIR/late exists, frees the gone block and prints "@@ late ADDR"
 * (another); once DIR/stop exists, stops the threads, frees everything and prints one
 * line per thread and a last line, the same on every run, and exits with
 * status 7. A block found changed (a lost or doubled free, a realloc that
 * lost its contents) makes it print what and exit with status 1. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SLOTS 64

static atomic_int stop;
static const char *dir;

typedef struct {
    int id;
    unsigned char *block[SLOTS];
    size_t size[SLOTS];
    int bad;
} worker;

static void fill(worker *w, int i)
{
    memset(w->block[i], (unsigned char)(i + w->id * SLOTS), w->size[i]);
}

static int intact(worker *w, int i)
{
    unsigned char c = (unsigned char)(i + w->id * SLOTS);
    for (size_t k = 0; k < w->size[i]; k++)
        if (w->block[i][k] != c)
            return 0;
    return 1;
}

static void *work(void *arg)
{
    worker *w = arg;
    uint32_t x = 2463534242u + (uint32_t)w->id;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        int i = (int)(x % SLOTS);
        size_t n = 1 + (x >> 8) % 512;
        if (w->block[i] && !intact(w, i)) {
            printf("thread %d: block %d changed\n", w->id, i);
            w->bad = 1;
            return NULL;
        }
        switch ((x >> 20) % 5) {
        case 0:
            free(w->block[i]);
            w->block[i] = malloc(n);
            break;
        case 1:
            free(w->block[i]);
            w->block[i] = calloc(1, n);
            break;
        case 2: { /* realloc keeps the old contents: checked after */
            unsigned char *q = realloc(w->block[i], n);
            if (q && w->block[i]) {
                size_t keep = n < w->size[i] ? n : w->size[i];
                unsigned char c = (unsigned char)(i + w->id * SLOTS);
                for (size_t k = 0; k < keep; k++)
                    if (q[k] != c) {
                        printf("thread %d: realloc lost block %d\n", w->id, i);
                        w->bad = 1;
                        return NULL;
                    }
            }
            w->block[i] = q;
            break;
        }
        case 3: {
            void *p = NULL;
            free(w->block[i]);
            w->block[i] = posix_memalign(&p, 64, n) == 0 ? p : NULL;
            break;
        }
        default:
            free(w->block[i]);
            w->block[i] = NULL;
            continue;
        }
        w->size[i] = w->block[i] ? n : 0;
        if (w->block[i])
            fill(w, i);
    }
    for (int i = 0; i < SLOTS; i++) {
        if (w->block[i] && !intact(w, i)) {
            printf("thread %d: block %d changed\n", w->id, i);
            w->bad = 1;
        }
        free(w->block[i]);
    }
    return NULL;
}

/* Waits in nanosleep (where gdb finds a thread holding no lock) for FILE. */
static void wait_for(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct timespec ts = { 0, 5 * 1000 * 1000 };
    while (access(path, F_OK) != 0)
        nanosleep(&ts, NULL);
}

static void *keep_before, *keep_after, *keep_late, *keep_gone;
static void **holder;
#define HIDE ((uintptr_t)0x5a5a5a5a5a5a5a5aull)
static uintptr_t lost_hidden; /* the lost block's address XOR HIDE: no pointer */

/* Not inlined: the lost block's address leaves no register of main's. */
static __attribute__((noinline)) void lose_one(void)
{
    lost_hidden = (uintptr_t)malloc(72) ^ HIDE; /* SITE:attach-lost */
}

/* Zeroes the stack below main's frame: the allocations' frames left the
 * lost block's address there, where wait_for's buffer (live, scanned as
 * a root) would keep it. */
static __attribute__((noinline)) void scrub_stack(void)
{
    volatile char buf[32 << 10];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = 0;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    int n = atoi(argv[1]);
    dir = argv[2];
    keep_before = malloc(100); /* SITE:attach-before */
    holder = malloc(64); /* SITE:attach-holder */
    printf("@@ holder %p\n@@ before %p\n", (void *)holder, keep_before);
    fflush(stdout);
    worker *ws = calloc((size_t)n, sizeof *ws);
    pthread_t *ts = calloc((size_t)n, sizeof *ts);
    for (int i = 0; i < n; i++) {
        ws[i].id = i;
        pthread_create(&ts[i], NULL, work, &ws[i]);
    }
    wait_for("go");
    keep_after = malloc(200); /* SITE:attach-after */
    keep_gone = malloc(40); /* SITE:attach-gone */
    holder[0] = malloc(48); /* SITE:attach-held */
    lose_one();
    scrub_stack();
    printf("@@ after %p\n@@ gone %p\n@@ held %p\n@@ after-done\n", keep_after, keep_gone,
           holder[0]);
    fflush(stdout);
    wait_for("late");
    free(keep_gone);
    /* Detached: a realloc that fails leaves the block, and its record, as
     * they were (keep_after is asked about after this). */
    volatile size_t too_big = (size_t)-1 / 2;
    if (realloc(keep_after, too_big) != NULL)
        printf("a realloc of %zu bytes succeeded\n", too_big);
    keep_late = malloc(300); /* SITE:attach-late */
    printf("@@ late %p\n", keep_late);
    fflush(stdout);
    wait_for("stop");
    atomic_store(&stop, 1);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(ts[i], NULL);
        printf("thread %d: %s\n", i, ws[i].bad ? "FAILED" : "all blocks intact");
        bad |= ws[i].bad;
    }
    free(keep_before);
    if (!getenv("ATTACH_TARGET_KEEP")) { /* set: left for the leak check at exit */
        free(holder[0]);
        free(holder);
        free((void *)(lost_hidden ^ HIDE));
    }
    free(keep_late);
    keep_after = realloc(keep_after, 300);
    free(keep_after);
    free(ws);
    free(ts);
    printf("attach_target: %d threads done\n", n);
    return bad ? 1 : 7;
}
