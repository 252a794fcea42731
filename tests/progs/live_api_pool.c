/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A program with its own pool allocator that tells the tool about its
 * blocks, built twice: against memtrace.h (memtrace_malloclike & co.) and,
 * with -DVALGRIND_TWIN, against valgrind's client requests
 * (VALGRIND_MALLOCLIKE_BLOCK, FREELIKE_BLOCK, DO_LEAK_CHECK), so that the
 * leak verdicts can be compared (tests/e2e/live_api.sh). The pool's
 * storage is one malloc'd block held by a global; its blocks are carved
 * from it, the first at its very start.
 *
 * Modes (argv[1]):
 *   pool     the pool's verdicts: two checks now, then the one at exit;
 *   trace    print_trace of a pool block (memtrace only);
 *   ignore   memtrace_ignore_object and root regions (memtrace only);
 *   bad      bad input: a wild freelike, ignore of a non-block,
 *            overlapping roots, an unknown unregister, free() of a pool
 *            block (memtrace only);
 *   running  prints memtrace_running() and calls every function of the
 *            API (the program runs without memtrace too). */
#include <stddef.h>

#ifdef VALGRIND_TWIN
#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>
#define POOL_MALLOCLIKE(p, n) VALGRIND_MALLOCLIKE_BLOCK((p), (n), 0, 0)
#define POOL_FREELIKE(p) VALGRIND_FREELIKE_BLOCK((p), 0)
static size_t leak_check_now(void)
{
    unsigned long leaked = 0, dubious = 0, reachable = 0, suppressed = 0;
    VALGRIND_DO_LEAK_CHECK;
    VALGRIND_COUNT_LEAKS(leaked, dubious, reachable, suppressed);
    (void)dubious, (void)reachable, (void)suppressed;
    return leaked; /* definitely + indirectly lost */
}
#else
#include "memtrace.h"
#define POOL_MALLOCLIKE(p, n) memtrace_malloclike((p), (n))
#define POOL_FREELIKE(p) memtrace_freelike(p)
#define leak_check_now() memtrace_leak_check()
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define POOL_BYTES 4096

static char *pool;        /* the pool's storage: one malloc'd block */
static size_t pool_used;
static char *pool2;       /* another, whose blocks start after a header */
static size_t pool2_used;
static void *kept;        /* a pool block held from here */

struct node {
    struct node *next;
    char pad[24];
};

static __attribute__((noinline)) void *pool_alloc(size_t n)
{
    void *p = pool + pool_used;
    pool_used += (n + 15) & ~(size_t)15;
    POOL_MALLOCLIKE(p, n); /* SITE:pool_alloc */
    return p;
}

static __attribute__((noinline)) void *pool2_alloc(size_t n)
{
    void *p = pool2 + 16 + pool2_used;
    pool2_used += (n + 15) & ~(size_t)15;
    POOL_MALLOCLIKE(p, n);
    return p;
}

static __attribute__((noinline)) void pool_free(void *p)
{
    POOL_FREELIKE(p); /* SITE:pool_free */
}

/* Frames of their own, dead by the time of the checks: no stale pointer
 * of theirs stays in main's frame. */
static __attribute__((noinline)) void make_pool_blocks(void)
{
    pool = malloc(POOL_BYTES);
    memset(pool, 0, POOL_BYTES);
    kept = pool_alloc(48);        /* reachable: at the storage's start, and held */
    void *lost = pool_alloc(64);  /* definitely lost: 64 */
    (void)lost;
    struct node *head = pool_alloc(96); /* definitely lost: 96, holding... */
    head->next = pool_alloc(32);        /* ...indirectly lost: 32 */
    void *gone = pool_alloc(80);  /* freed: no verdict */
    pool_free(gone);
    memset(&head, 0, sizeof head);
    pool2 = malloc(1024);
    memset(pool2, 0, 1024);
    struct node *head2 = pool2_alloc(48); /* definitely lost: 48, holding... */
    head2->next = pool2_alloc(24);        /* ...indirectly lost: 24 */
    memset(&head2, 0, sizeof head2);
}

static __attribute__((noinline)) void lose_one_more(void)
{
    void *p = pool_alloc(40); /* definitely lost: 40 */
    memset(&p, 0, sizeof p);
}

static int mode_pool(void)
{
    make_pool_blocks();
    printf("check 1: %zu bytes lost\n", (size_t)leak_check_now());
    lose_one_more();
    printf("check 2: %zu bytes lost\n", (size_t)leak_check_now());
    fflush(stdout);
    return 0;
}

#ifndef VALGRIND_TWIN
static int mode_trace(void)
{
    pool = malloc(POOL_BYTES);
    kept = pool_alloc(48);
    void *second = pool_alloc(24);
    printf("@@ kept %p\n@@ second %p\n", kept, second);
    fflush(stdout);
    print_trace(second);
    return 0;
}

static __attribute__((noinline)) struct node *make_lost_pair(void)
{
    struct node *a = malloc(sizeof *a); /* 32 bytes, holding b */
    a->next = malloc(sizeof *a->next);  /* 32 bytes */
    a->next->next = NULL;
    return a;
}

/* Where gdb asks the same questions from outside (live_api.sh), after
 * each check: the stack below main's frame scrubbed first, so that no dead
 * frame's pointer, which a check from outside would see and the check
 * inside has overwritten, decides a verdict. */
static __attribute__((noinline)) void scrub(void)
{
    volatile char junk[8192];
    memset((char *)junk, 0, sizeof junk);
}

static __attribute__((noinline)) void asked(int n)
{
    __asm__ volatile("" ::"r"(n) : "memory"); /* a call gdb can break on */
}

#define ASKED(n) (scrub(), asked(n))

static int mode_ignore(void)
{
    /* An object the program ignores, and what only it reaches. */
    uintptr_t hidden = (uintptr_t)make_lost_pair() ^ 0xffff; /* no pointer left */
    printf("check lost: %zu\n", (size_t)leak_check_now());
    ASKED(1);
    memtrace_ignore_object((void *)((hidden ^ 0xffff) + 8)); /* an interior pointer */
    printf("check ignored: %zu\n", (size_t)leak_check_now());
    ASKED(2);
    /* A region memtrace does not scan (an anonymous mapping), holding a
     * pair: lost until it is a root region, lost again after. */
    void **map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    map[10] = make_lost_pair();
    printf("check unscanned: %zu\n", (size_t)leak_check_now());
    ASKED(3);
    memtrace_register_root_region(map, 4096);
    printf("check rooted: %zu\n", (size_t)leak_check_now());
    ASKED(4);
    memtrace_unregister_root_region(map, 4096);
    printf("check unrooted: %zu\n", (size_t)leak_check_now());
    ASKED(5);
    fflush(stdout);
    return 0;
}

static int mode_bad(void)
{
    int local = 0;
    pool = malloc(POOL_BYTES);
    kept = pool_alloc(48);
    fprintf(stderr, "@@ wild %p\n", (void *)&local);
    pool_free(&local);                            /* SITE:wild_free */
    memtrace_ignore_object(&local);               /* a stack address: no block */
    static char region[256];
    memtrace_register_root_region(region, 128);
    memtrace_register_root_region(region + 64, 128); /* overlaps */
    memtrace_unregister_root_region(region, 64);     /* never registered */
    void *volatile second = pool_alloc(24);
    free(second);      /* SITE:free_pool_block a pool block to free: reported, never freed */
    print_trace((const void *)(uintptr_t)second); /* still a block of the pool */
    free(kept); /* the storage's own free: the pool block at its start stays */
    fprintf(stderr, "@@ lost %zu\n", (size_t)memtrace_leak_check());
    return 0;
}

static int mode_running(void)
{
    printf("running %d\n", memtrace_running());
    /* Every call, present or not: nothing may break without memtrace. */
    struct memtrace_stats s;
    memtrace_get_stats(&s);
    printf("stats live_blocks>=0 %d\n", s.live_blocks + 1 > 0);
    memtrace_set_recording(1);
    printf("recording %d\n", memtrace_recording());
    printf("version %s\n", memtrace_version() ? "some" : "none");
    printf("check %d\n", memtrace_check());
    int pushed = memtrace_tag_push("scope");
    printf("tag %d %d\n", pushed, memtrace_tag_pop());
    pool = malloc(POOL_BYTES);
    void *p = pool_alloc(16);
    memtrace_ignore_object(p);
    memtrace_register_root_region(pool, 64);
    memtrace_unregister_root_region(pool, 64);
    pool_free(p);
    printf("leak_check %zu\n", (size_t)memtrace_leak_check());
    fflush(stdout);
    free(pool);
    return 0;
}
#endif

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "pool";
    if (strcmp(mode, "pool") == 0)
        return mode_pool();
#ifndef VALGRIND_TWIN
    if (strcmp(mode, "trace") == 0)
        return mode_trace();
    if (strcmp(mode, "ignore") == 0)
        return mode_ignore();
    if (strcmp(mode, "bad") == 0)
        return mode_bad();
    if (strcmp(mode, "running") == 0)
        return mode_running();
#endif
    return 2;
}
