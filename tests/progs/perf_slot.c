/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The free path against the live table's layout (tests/e2e/perf_slot.sh):
 * frees that must find their record wherever growth (onto huge-page
 * mappings carved one after another) or a neighbour's deletion (the
 * backward shift) moved it, and frees that must not find one. After each
 * phase the program prints memtrace's live count and bytes beside its own
 * (which the script compares) as "PHASE live N/N bytes M/M".
 *
 *   perf_slot many N     N blocks of 1 to 64 bytes (the table grows many
 *                        times), every other one freed in reverse order,
 *                        the rest freed by another thread
 *   perf_slot shift N    N blocks freed in a scattered order (each free
 *                        shifts the records after it back), 1000 kept
 *   perf_slot resize N   realloc up and down, posix_memalign, aligned_alloc,
 *                        calloc, memalign: all freed but 3 blocks
 *   perf_slot foreign    free of an address inside a mapping of the
 *                        program's own that no allocator gave out
 *   perf_slot underflow  a write over the byte before a block, then its
 *                        free (reported; glibc then aborts) */
#include <malloc.h>
#include <memtrace.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The blocks this program holds, counted by itself, and memtrace's count
 * of the others (stdio's buffer, the phase's arrays) when counting began. */
static unsigned long own_blocks, own_bytes, base_blocks, base_bytes;

static void count_from_here(void)
{
    struct memtrace_stats st;
    memtrace_get_stats(&st);
    base_blocks = st.live_blocks;
    base_bytes = st.live_bytes;
}

static void show(const char *phase)
{
    struct memtrace_stats st;
    memtrace_get_stats(&st);
    printf("%s live %lu/%lu bytes %lu/%lu\n", phase, st.live_blocks - base_blocks, own_blocks,
           st.live_bytes - base_bytes, own_bytes);
    fflush(stdout);
}

static void *take(size_t size)
{
    void *p = malloc(size); /* SITE:slot_take */
    if (!p)
        abort();
    memset(p, 1, size);
    own_blocks++;
    own_bytes += size;
    return p;
}

static void give(void *p, size_t size)
{
    free(p); /* SITE:slot_give */
    own_blocks--;
    own_bytes -= size;
}

/* Three blocks of 77 bytes lost at one site: the leak check's answer. */
static void *volatile dropped;
static void leak_some(void)
{
    for (int i = 0; i < 3; i++)
        dropped = malloc(77); /* SITE:slot_leak */
    dropped = NULL;
}

/* Resident bytes of this process's writable mappings advised for huge
 * pages (smaps' VmFlags "hg"): the program's own heap is not. */
static unsigned long huge_advised_rss(void)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    unsigned long rss = 0, sum = 0;
    int writable = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3)
            writable = perms[1] == 'w';
        else if (sscanf(line, "Rss: %lu kB", &rss) == 1)
            continue;
        else if (!strncmp(line, "VmFlags:", 8) && writable && strstr(line, " hg"))
            sum += rss * 1024;
    }
    if (f)
        fclose(f);
    return sum;
}

struct half {
    void **blocks;
    size_t *sizes;
    size_t n;
};

static void *free_odd(void *arg)
{
    struct half *h = arg;
    for (size_t i = 1; i < h->n; i += 2)
        give(h->blocks[i], h->sizes[i]);
    return NULL;
}

static void *nothing(void *arg)
{
    return arg;
}

static void many(size_t n)
{
    /* A first thread's own allocations (glibc keeps them for the next)
     * before counting. */
    pthread_t t;
    pthread_create(&t, NULL, nothing, NULL);
    pthread_join(t, NULL);
    void **blocks = calloc(n, sizeof *blocks);
    size_t *sizes = calloc(n, sizeof *sizes);
    count_from_here();
    for (size_t i = 0; i < n; i++) {
        sizes[i] = 1 + i % 64;
        blocks[i] = take(sizes[i]);
    }
    show("many-allocated");
    printf("many huge-advised table of 22 MiB or more: %s\n",
           huge_advised_rss() >= (22ul << 20) ? "yes" : "no");
    for (size_t i = n & ~(size_t)1; i-- > 0;)
        if (i % 2 == 0)
            give(blocks[i], sizes[i]);
    show("many-even-freed");
    struct half h = { blocks, sizes, n };
    pthread_create(&t, NULL, free_odd, &h);
    pthread_join(t, NULL);
    show("many-odd-freed-by-thread");
    free(blocks);
    free(sizes);
    leak_some();
}

static void shift(size_t n)
{
    void **blocks = calloc(n, sizeof *blocks);
    count_from_here();
    for (size_t i = 0; i < n; i++)
        blocks[i] = take(48);
    show("shift-allocated");
    /* A step prime to n visits every index once, far apart in address and
     * in table slot; every deletion shifts the run after it. */
    size_t step = 7919, at = 0, kept = 0;
    for (size_t k = 0; k < n; k++, at = (at + step) % n) {
        if (k % (n / 1000) == 0 && kept < 1000) {
            kept++;
            continue;
        }
        give(blocks[at], 48);
    }
    show("shift-freed");
    for (size_t i = 0; i < n; i++)
        blocks[i] = NULL;
    free(blocks);
    leak_some();
}

static void resize(size_t n)
{
    count_from_here();
    for (size_t i = 0; i < n; i++) {
        char *p = malloc(16);
        char *q = realloc(p, 16 + i % 4000); /* up */
        char *r = realloc(q, 8);              /* down */
        free(r);
        void *a = NULL;
        if (posix_memalign(&a, 64 << (i % 4), 100) != 0)
            abort();
        void *b = aligned_alloc(256, 512);
        void *c = calloc(3, 40);
        void *d = memalign(128, 24);
        free(a);
        free(b);
        free(c);
        free(d);
    }
    void *keep1 = realloc(NULL, 100); /* SITE:slot_keep_realloc */
    void *keep2 = aligned_alloc(4096, 4096); /* SITE:slot_keep_aligned */
    void *keep3 = calloc(10, 10); /* SITE:slot_keep_calloc */
    own_blocks += 3;
    own_bytes += 100 + 4096 + 100;
    show("resize-kept");
    (void)keep1, (void)keep2, (void)keep3;
}

static void foreign(void)
{
    count_from_here();
    for (size_t i = 0; i < 1000; i++)
        take(32);
    show("foreign-before");
    /* The word before the address reads as a plausible size, and the
     * block's would-be end lies in the mapping: glibc would take it for a
     * chunk; memtrace must report it and find no record. */
    uint64_t *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    m[1] = 0x31; /* the size word glibc writes for a 40-byte block */
    void *volatile f = &m[2]; /* not a heap object, as the compiler sees */
    free(f); /* SITE:slot_foreign */
    show("foreign-after");
    leak_some();
}

static void underflow(void)
{
    count_from_here();
    for (size_t i = 0; i < 1000; i++)
        take(32);
    char *p = malloc(40); /* SITE:slot_underflow_alloc */
    own_blocks++;
    own_bytes += 40;
    show("underflow-before");
    p[-1] = 'x';
    free(p); /* SITE:slot_underflow_free */
    show("underflow-after");
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    printf("perf_slot %s\n", mode); /* stdio's buffer, before counting */
    size_t n = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;
    if (!strcmp(mode, "many"))
        many(n);
    else if (!strcmp(mode, "shift"))
        shift(n);
    else if (!strcmp(mode, "resize"))
        resize(n);
    else if (!strcmp(mode, "foreign"))
        foreign();
    else if (!strcmp(mode, "underflow"))
        underflow();
    else
        return 2;
    return 0;
}
