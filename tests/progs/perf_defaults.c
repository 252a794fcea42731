/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Many stacks through one allocating function at one depth, as a
 * compiler's are (tests/e2e/perf_defaults.sh): SITES sites call mid, which
 * calls leaf, which allocates; each site is reached from two tops, so that
 * pairs of stacks share their innermost three frames and differ only
 * below them. Rounds of one block a stack, in an order that moves between
 * the stacks, all freed at one site. Prints the number of stacks memtrace
 * stored during the rounds (memtrace_get_stats, before and after). */
#include <memtrace.h>
#include <stdio.h>
#include <stdlib.h>

#define SITES 16
#define ROUNDS 2000

static void *blocks[2 * SITES];

__attribute__((noinline)) static void *leaf(size_t size)
{
    void *p = malloc(size);
    __asm__ volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) static void *mid(size_t size)
{
    void *p = leaf(size);
    __asm__ volatile("" ::: "memory");
    return p;
}

/* SITE(i); defines site<i> (the declaration after it takes the ';'). */
#define SITE(i)                                          \
    __attribute__((noinline)) static void *site##i(void) \
    {                                                    \
        void *p = mid(16 + i);                           \
        __asm__ volatile("" ::: "memory");               \
        return p;                                        \
    }                                                    \
    extern char site##i##_defined
SITE(0);
SITE(1);
SITE(2);
SITE(3);
SITE(4);
SITE(5);
SITE(6);
SITE(7);
SITE(8);
SITE(9);
SITE(10);
SITE(11);
SITE(12);
SITE(13);
SITE(14);
SITE(15);

static void *(*const sites[SITES])(void) = {
    site0, site1, site2,  site3,  site4,  site5,  site6,  site7,
    site8, site9, site10, site11, site12, site13, site14, site15,
};

__attribute__((noinline)) static void *top_a(int i)
{
    void *p = sites[i]();
    __asm__ volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) static void *top_b(int i)
{
    void *p = sites[i]();
    __asm__ volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) static void free_all(void)
{
    for (int k = 0; k < 2 * SITES; k++)
        free(blocks[k]);
}

int main(void)
{
    struct memtrace_stats before = { 0 }, after = { 0 };
    memtrace_get_stats(&before);
    for (int r = 0; r < ROUNDS; r++) {
        for (int k = 0; k < 2 * SITES; k++) {
            int i = (k * 7 + r) % SITES; /* the order moves each round */
            blocks[k] = (k / SITES + r) % 2 ? top_a(i) : top_b(i);
        }
        free_all();
    }
    memtrace_get_stats(&after);
    printf("stacks %lu\n", after.stacks - before.stacks);
    return 0;
}
