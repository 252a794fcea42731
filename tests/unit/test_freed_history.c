/* Freed history: newest first, every record covering an address, bounded
 * capacity (the oldest records fall out). */
#include "../../src/freed_history.h"

#include <criterion/criterion.h>

static uint64_t seqs[16];
static size_t nseqs;

static void collect(const mt_freed_record *r, void *ctx)
{
    (void)ctx;
    if (nseqs < 16)
        seqs[nseqs++] = r->alloc_seq;
}

static void push(uintptr_t ptr, uint64_t size, uint64_t seq)
{
    mt_freed_record r = { .ptr = ptr, .size = size, .alloc_seq = seq };
    mt_freed_push(&r);
}

Test(freed_history, newest_first_and_interior)
{
    mt_freed_init(8);
    push(0x1000, 64, 1);
    push(0x2000, 16, 2);
    push(0x1000, 32, 3); /* the address reused, then freed again */
    nseqs = 0;
    cr_assert_eq(mt_freed_find(0x1000 + 20, collect, NULL), 2);
    cr_assert_eq(seqs[0], 3);
    cr_assert_eq(seqs[1], 1);
    nseqs = 0;
    cr_assert_eq(mt_freed_find(0x1000 + 40, collect, NULL), 1, "only the 64-byte block covers +40");
    cr_assert_eq(seqs[0], 1);
    cr_assert_eq(mt_freed_find(0x3000, collect, NULL), 0);
}

Test(freed_history, bounded_oldest_fall_out)
{
    mt_freed_init(4);
    for (uint64_t i = 1; i <= 10; i++)
        push(0x5000, 8, i);
    nseqs = 0;
    cr_assert_eq(mt_freed_find(0x5000, collect, NULL), 4);
    cr_assert_eq(seqs[0], 10);
    cr_assert_eq(seqs[3], 7);
}

Test(freed_history, disabled_finds_nothing)
{
    mt_freed_init(0);
    cr_assert_not(mt_freed_enabled());
    cr_assert_eq(mt_freed_find(0x5000, collect, NULL), 0);
}
