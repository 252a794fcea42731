/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* perf_sampled MODE: the exact answers sample mode keeps however it tells
 * its unsampled blocks apart (tests/e2e/perf_sampled.sh), run under the
 * profiler with MEMTRACE_SAMPLE.
 *
 * Each phase ends at a checkpoint: "@@ cp NAME EXPECT" on stdout, EXPECT
 * the change of the exact live total since the previous checkpoint (the
 * requested sizes this program allocated less those it freed, by its own
 * arithmetic), then memtrace_report(), whose header gives the exact total
 * (MEMTRACE_OUTPUT). A tag scope's exact live bytes, read in-process from
 * the state descriptor's node array, are printed as "@@ tag NAME GOT
 * EXPECT". "@@ sampled K N": K of the N blocks of the first phase were
 * recorded (sampled). "@@ recorded PHASE K": K blocks recorded during PHASE
 * (none should be when no block is sampled: a block the shadow's mark
 * cannot describe carries a trailer in its slack instead).
 *
 *   main      plain, calloc, realloc (growing, shrinking, same size, to 0),
 *             aligned, blocks allocated while recording was off, foreign
 *             blocks (the next allocator's own), threads freeing each
 *             other's blocks, then tag scopes (tags come into use there)
 *   damaged   a block whose chunk header is rewritten to the next size
 *             class before its free: the free must count nothing (last:
 *             glibc is left with a chunk of the wrong size, and the
 *             program exits at once)
 *   slack     blocks written past their size into the allocator's slack
 *             (within glibc's usable size): their frees count exactly */
#define _GNU_SOURCE
#include "../../src/runtime/descriptor.h"
#include <memtrace.h>

#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long long since; /* the expected change since the last checkpoint */

/* The next allocator's own functions, looked up before the first
 * checkpoint (dlsym may allocate). */
static void *(*next_malloc)(size_t); /* glibc's */
static void *(*next_calloc)(size_t, size_t);
static size_t (*next_usable)(void *);

static void cp(const char *name)
{
    printf("@@ cp %s %lld\n", name, since);
    fflush(stdout);
    since = 0;
    memtrace_report();
}

static void *m(size_t n)
{
    void *p = malloc(n);
    if (!p)
        abort();
    memset(p, 0xab, n);
    since += (long long)n;
    return p;
}

static void f(void *p, size_t n)
{
    free(p);
    since -= (long long)n;
}

static unsigned long recorded(void)
{
    struct memtrace_stats st;
    memset(&st, 0, sizeof st);
    memtrace_get_stats(&st);
    return st.live_blocks;
}

/* The exact live bytes of the tag node named NAME (all threads' nodes of
 * that name summed), from the state descriptor. */
static long long tag_live(const char *name)
{
    const struct memtrace_state *s = dlsym(RTLD_DEFAULT, "memtrace_state");
    if (!s || memcmp(s->magic, MT_STATE_MAGIC, 8) != 0 || !s->tag_nodes)
        return -1;
    const char *nodes = *(const char *const *)(uintptr_t)s->tag_nodes;
    uint32_t count = *(const uint32_t *)(uintptr_t)s->tag_count;
    if (!nodes)
        return -1;
    long long live = 0;
    for (uint32_t id = 1; id < count; id++) {
        const char *n = nodes + (size_t)id * s->tag_node_size;
        if (strcmp(n + s->tag_name, name) != 0)
            continue;
        live += (long long)(*(const uint64_t *)(n + s->tag_alloc_bytes) -
                            *(const uint64_t *)(n + s->tag_free_bytes) -
                            *(const uint64_t *)(n + s->tag_remote_free_bytes));
    }
    return live;
}

static void tag(const char *name, long long expect)
{
    printf("@@ tag %s %lld %lld\n", name, tag_live(name), expect);
    fflush(stdout);
}

#define N 600
static void *blk[N];
static size_t sz[N];

static size_t size_of(int i)
{
    return 1 + (size_t)(i * 37) % 700; /* every slack glibc gives, many times */
}

/* ---- threads */
#define TN 300
static void *tb[2][TN];
static size_t ts[2][TN];
static long long thread_sum[2];

static void *alloc_thread(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int i = 0; i < TN; i++) {
        ts[t][i] = 8 + (size_t)(i * 13 + t) % 500;
        tb[t][i] = malloc(ts[t][i]);
        thread_sum[t] += (long long)ts[t][i];
    }
    return NULL;
}

static void *free_thread(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int i = 0; i < TN; i++)
        free(tb[t][i]);
    return NULL;
}

static void *scoped_thread_idle(void *arg)
{
    return arg;
}

static void *scoped_thread(void *arg)
{
    (void)arg;
    memtrace_tag_push("worker");
    for (int i = 0; i < 50; i++)
        free(malloc(100 + (size_t)i)); /* nets 0 */
    void *keep = malloc(777);
    memtrace_tag_pop();
    return keep; /* main frees it: a remote free in "worker" */
}

static void run_main(void)
{
    /* plain and calloc: every size 1 .. 700 in turn */
    unsigned long before = recorded();
    for (int i = 0; i < N; i++) {
        sz[i] = size_of(i);
        if (i % 3 == 0) {
            blk[i] = calloc(1, sz[i]);
            since += (long long)sz[i];
        } else {
            blk[i] = m(sz[i]);
        }
    }
    printf("@@ sampled %lu %d\n", recorded() - before, N);
    cp("plain");
    for (int i = 0; i < N; i += 2)
        f(blk[i], sz[i]);
    cp("plain-freed");

    /* realloc: growing, shrinking, the same size, by one byte, to 0 */
    before = recorded();
    for (int i = 1; i < N; i += 2) {
        size_t to = i % 4 == 1 ? sz[i] * 3 + 5 : sz[i] / 2 + 1;
        blk[i] = realloc(blk[i], to);
        since += (long long)to - (long long)sz[i];
        sz[i] = to;
    }
    cp("realloc-moved");
    for (int i = 1; i < N; i += 2) {
        size_t to = sz[i] - (i % 8 == 1 ? 1 : 0); /* in place */
        blk[i] = realloc(blk[i], to);
        since += (long long)to - (long long)sz[i];
        sz[i] = to;
    }
    cp("realloc-in-place");
    for (int i = 1; i < N; i += 8) {
        void *r = realloc(blk[i], 0); /* glibc: frees, NULL */
        if (r)
            free(r);
        since -= (long long)sz[i];
        blk[i] = NULL;
        sz[i] = 0;
    }
    printf("@@ recorded realloc %lu\n", recorded() - before);
    cp("realloc-zero");

    /* aligned */
    before = recorded();
    void *al[60];
    size_t as[60];
    for (int i = 0; i < 60; i++) {
        size_t align = (size_t)16 << (i % 8);
        as[i] = 1 + (size_t)(i * 53) % 900;
        if (i % 3 == 0) {
            if (posix_memalign(&al[i], align, as[i]))
                abort();
        } else if (i % 3 == 1) {
            al[i] = aligned_alloc(align, (as[i] + align - 1) / align * align);
            as[i] = (as[i] + align - 1) / align * align;
        } else {
            al[i] = memalign(align, as[i]);
        }
        if (!al[i] || ((uintptr_t)al[i] & (align - 1)))
            abort();
        since += (long long)as[i];
    }
    printf("@@ recorded aligned %lu\n", recorded() - before);
    cp("aligned");
    for (int i = 0; i < 60; i += 2)
        f(al[i], as[i]);
    cp("aligned-freed");

    /* blocks from before recording started: never counted, their frees
     * count nothing; a block counted then freed while off still leaves */
    memtrace_set_recording(0);
    void *off[40];
    for (int i = 0; i < 40; i++)
        off[i] = malloc(24 + (size_t)i * 8);
    f(blk[3], sz[3]);
    blk[3] = NULL;
    memtrace_set_recording(1);
    cp("recording-off");
    for (int i = 0; i < 40; i++)
        free(off[i]);
    cp("off-blocks-freed");

    /* foreign: the next allocator's own blocks, freed through memtrace */
    for (int i = 0; i < 40; i++) {
        void *p = i % 2 ? next_malloc(16 + (size_t)i * 8) : next_calloc(1, 40 + (size_t)i);
        free(p);
    }
    cp("foreign");

    /* threads: each allocates; main frees one's blocks, a thread the other's */
    pthread_t a, b;
    pthread_create(&a, NULL, alloc_thread, (void *)0);
    pthread_create(&b, NULL, alloc_thread, (void *)1);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    since += thread_sum[0] + thread_sum[1];
    cp("threads-allocated");
    free_thread((void *)0);
    pthread_create(&a, NULL, free_thread, (void *)1);
    pthread_join(a, NULL);
    since -= thread_sum[0] + thread_sum[1];
    cp("threads-freed");

    /* tag scopes: tags come into use here. The blocks above count in no
     * scope, freed inside one or not; the scope's own blocks count in it
     * wherever they are freed or resized. */
    memtrace_tag_push("scope");
    void *in[50];
    size_t is[50];
    long long scope = 0;
    for (int i = 0; i < 50; i++) {
        is[i] = 10 + (size_t)i * 11;
        in[i] = m(is[i]);
        scope += (long long)is[i];
    }
    for (int i = 5; i < N; i += 2) /* older blocks freed inside: not the scope's */
        if (blk[i]) {
            f(blk[i], sz[i]);
            blk[i] = NULL;
        }
    for (int i = 0; i < 10; i++) { /* resized inside */
        size_t to = is[i] * 2;
        in[i] = realloc(in[i], to);
        since += (long long)to - (long long)is[i];
        scope += (long long)to - (long long)is[i];
        is[i] = to;
    }
    tag("scope", scope);
    memtrace_tag_pop();
    for (int i = 10; i < 30; i++) { /* freed outside */
        f(in[i], is[i]);
        scope -= (long long)is[i];
    }
    for (int i = 30; i < 35; i++) { /* resized outside: the new block is the root's */
        in[i] = realloc(in[i], is[i] + 100);
        since += 100;
        scope -= (long long)is[i];
        is[i] += 100;
    }
    tag("scope", scope);
    pthread_create(&a, NULL, scoped_thread, NULL);
    void *keep;
    pthread_join(a, &keep);
    tag("worker", 777);
    free(keep);
    tag("worker", 0);
    cp("tags");
}

/* P's chunk header rewritten to the next size class up (its size word's
 * bit 4 flipped), then P freed. */
static void run_damaged(void)
{
    printf("@@ sampled 0 0\n");
    void *keep = m(40); /* a neighbour, never freed */
    void *p = m(40);    /* glibc: a 48-byte chunk */
    void *after = m(40);
    cp("damaged-before");
    size_t *h = (size_t *)p - 1;
    *h += 16; /* 48 -> 64, flags kept */
    free(p);  /* no count: the block is no longer what memtrace marked */
    cp("damaged-freed");
    (void)keep;
    (void)after;
    _exit(0); /* glibc holds a chunk of the wrong size: nothing more */
}

/* Blocks written past their size, within glibc's usable size: the slack
 * is the program's to spoil, and counts stay exact. */
static void run_slack(void)
{
    printf("@@ sampled 0 0\n");
    void *p[64];
    size_t n[64];
    for (int i = 0; i < 64; i++) {
        n[i] = 17 + (size_t)i * 5;
        p[i] = m(n[i]);
    }
    cp("slack-allocated");
    for (int i = 0; i < 64; i++) {
        /* glibc's usable size, asked of the next allocator directly */
        size_t u = next_usable(p[i]);
        memset((char *)p[i] + n[i], 0xff, u - n[i]);
        f(p[i], n[i]);
    }
    cp("slack-freed");
}

int main(int argc, char **argv)
{
    printf("@@ start\n"); /* stdout's buffer made before the first checkpoint */
    fflush(stdout);
    /* glibc's own (RTLD_NEXT from here would find memtrace's first) */
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    if (!libc)
        return 2;
    next_malloc = (void *(*)(size_t))dlsym(libc, "malloc");
    next_calloc = (void *(*)(size_t, size_t))dlsym(libc, "calloc");
    next_usable = (size_t(*)(void *))dlsym(libc, "malloc_usable_size");
    if (!next_malloc || !next_calloc || !next_usable)
        return 2;
    /* Two threads at once, so that later ones find their stacks (and the
     * TLS glibc allocates with them) cached: their creation allocates
     * nothing between checkpoints. */
    pthread_t a, b;
    pthread_create(&a, NULL, scoped_thread_idle, NULL);
    pthread_create(&b, NULL, scoped_thread_idle, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    cp("start");
    if (argc > 1 && strcmp(argv[1], "damaged") == 0)
        run_damaged();
    else if (argc > 1 && strcmp(argv[1], "slack") == 0)
        run_slack();
    else
        run_main();
    return 0;
}
