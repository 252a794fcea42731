/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The leak scan through its interfaces only, on a made-up target: the
 * blocks and roots live at addresses of a fake address space (as a core
 * file's would) that the reader maps onto a local buffer, with a hole it
 * refuses. Lists, cycles, interior pointers, registers, root blocks,
 * unreadable memory; and 1,000,000 blocks, timed. */
#include "scan/leak_roots.h"
#include "scan/leak_scan.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BASE ((uintptr_t)0x100000000ull) /* the target's first address */
#define SPACE (1u << 20)
static uint64_t space[SPACE / 8];
static uintptr_t hole_lo, hole_hi; /* the reader refuses these */

static const void *reader(void *ctx, uintptr_t addr, size_t len)
{
    (void)ctx;
    if (addr < BASE || addr + len > BASE + SPACE || (addr < hole_hi && addr + len > hole_lo))
        return NULL;
    return (const char *)space + (addr - BASE);
}

static void put(uintptr_t at, uintptr_t value)
{
    space[(at - BASE) / 8] = value;
}

/* Blocks of 64 bytes at BASE + 4096 * (i + 1); the root region is the
 * first 4096 bytes. */
#define BLOCK(i) (BASE + 4096 * ((uintptr_t)(i) + 1))
static mt_leak_block blocks[64];
static mt_leak_root root = { BASE, BASE + 4096, MT_ROOT_GLOBALS, 0, false, false };

static void setup(size_t n)
{
    memset(space, 0, sizeof space);
    hole_lo = hole_hi = 0;
    for (size_t i = 0; i < n; i++)
        blocks[n - 1 - i] = (mt_leak_block){ BLOCK(i), 64, (uint32_t)i, 0, 0, 0, 0 }; /* unsorted */
}

static unsigned class_of(size_t n, size_t i)
{
    for (size_t k = 0; k < n; k++)
        if (blocks[k].ptr == BLOCK(i))
            return blocks[k].class;
    return 99;
}

static mt_leak_totals scan(size_t n, const uintptr_t *words, size_t nwords)
{
    mt_leak_input in = { blocks, n, &root, 1, words, nwords, reader, NULL, NULL, NULL };
    mt_leak_totals t;
    cr_assert(mt_leak_scan(&in, &t));
    return t;
}

Test(leak_scan, classes)
{
    setup(10);
    put(BASE + 8, BLOCK(0));           /* 0 from a root */
    put(BLOCK(0) + 16, BLOCK(1) + 40); /* 1 through 0, by an interior pointer: possibly */
    put(BASE + 24, BLOCK(2) + 63);     /* 2 by its last byte: possibly */
    put(BASE + 32, BLOCK(3) + 64);     /* one past 3's end: not 3 */
    put(BLOCK(3), BLOCK(4));           /* 3 lost, 4 and 5 behind it */
    put(BLOCK(4), BLOCK(5));
    put(BLOCK(6), BLOCK(7)); /* a cycle: 6 <-> 7 */
    put(BLOCK(7) + 8, BLOCK(6) + 8);
    put(BLOCK(9) + 56, BLOCK(8)); /* 9 lost, holding 8 */
    mt_leak_totals t = scan(10, NULL, 0);
    cr_expect_eq(class_of(10, 0), MT_LEAK_REACHABLE);
    cr_expect_eq(class_of(10, 1), MT_LEAK_POSSIBLE);
    cr_expect_eq(class_of(10, 2), MT_LEAK_POSSIBLE);
    cr_expect_eq(class_of(10, 3), MT_LEAK_DEFINITE);
    cr_expect_eq(class_of(10, 4), MT_LEAK_INDIRECT);
    cr_expect_eq(class_of(10, 5), MT_LEAK_INDIRECT);
    cr_expect_eq(class_of(10, 6) + class_of(10, 7), MT_LEAK_DEFINITE + MT_LEAK_INDIRECT);
    cr_expect_eq(class_of(10, 8), MT_LEAK_INDIRECT);
    cr_expect_eq(class_of(10, 9), MT_LEAK_DEFINITE);
    cr_expect_eq(t.blocks[MT_LEAK_DEFINITE], 3);
    cr_expect_eq(t.bytes[MT_LEAK_INDIRECT], 4 * 64);
    cr_expect_eq(t.blocks[MT_LEAK_REACHABLE], 1);
    cr_expect_eq(t.blocks[MT_LEAK_POSSIBLE], 2);
    cr_expect_eq(t.unreadable_root_bytes, 0);
    /* What each definitely lost block holds (valgrind's "indirect"). */
    for (size_t i = 0; i < 10; i++) {
        uint64_t want = blocks[i].ptr == BLOCK(3)             ? 128
                        : blocks[i].ptr == BLOCK(9)           ? 64
                        : blocks[i].class == MT_LEAK_DEFINITE ? 64 /* the cycle's */
                                                              : 0;
        cr_expect_eq(blocks[i].held_bytes, want, "block at +%#lx",
                     (unsigned long)(blocks[i].ptr - BASE));
        cr_expect_eq(blocks[i].held_blocks, want / 64);
    }
    for (size_t i = 1; i < 10; i++)
        cr_expect_lt(blocks[i - 1].ptr, blocks[i].ptr, "sorted by address");
}

/* A lost chain met leader by leader from its tail: the head stays the one
 * definitely lost block, and holds all the others (each earlier leader
 * hands over what it held). */
Test(leak_scan, chain_met_from_its_tail)
{
    setup(5);
    for (int i = 4; i > 0; i--)
        put(BLOCK(i), BLOCK(i - 1));
    scan(5, NULL, 0);
    cr_expect_eq(class_of(5, 4), MT_LEAK_DEFINITE);
    for (int i = 0; i < 4; i++)
        cr_expect_eq(class_of(5, i), MT_LEAK_INDIRECT);
    for (size_t k = 0; k < 5; k++) {
        cr_expect_eq(blocks[k].held_blocks, blocks[k].ptr == BLOCK(4) ? 4u : 0u);
        cr_expect_eq(blocks[k].held_bytes, blocks[k].ptr == BLOCK(4) ? 256u : 0u);
    }
}

/* memcheck's rule: a start pointer from a possibly lost block leaves its
 * target possibly lost; a start pointer from a root, met after an interior
 * one, makes it reachable, and what it holds too. */
Test(leak_scan, possibly_lost_propagates_and_is_raised)
{
    setup(4);
    put(BASE + 8, BLOCK(0) + 8);  /* 0: interior only */
    put(BLOCK(0), BLOCK(1));      /* 1: start, but from a possibly lost block */
    put(BASE + 16, BLOCK(2) + 8); /* 2: interior first... */
    put(BASE + 24, BLOCK(2));     /* ...then its start */
    put(BLOCK(2), BLOCK(3));      /* 3 through 2 */
    mt_leak_totals t = scan(4, NULL, 0);
    cr_expect_eq(class_of(4, 0), MT_LEAK_POSSIBLE);
    cr_expect_eq(class_of(4, 1), MT_LEAK_POSSIBLE);
    cr_expect_eq(class_of(4, 2), MT_LEAK_REACHABLE);
    cr_expect_eq(class_of(4, 3), MT_LEAK_REACHABLE);
    cr_expect_eq(t.bytes[MT_LEAK_POSSIBLE], 128);
}

/* The allocator's data (starts_only): an interior pointer there is a
 * chunk header, and holds nothing; a start pointer holds. */
Test(leak_scan, starts_only_roots)
{
    setup(2);
    root.starts_only = true;
    put(BASE + 8, BLOCK(0) + 48);
    put(BASE + 16, BLOCK(1));
    scan(2, NULL, 0);
    root.starts_only = false;
    cr_expect_eq(class_of(2, 0), MT_LEAK_DEFINITE);
    cr_expect_eq(class_of(2, 1), MT_LEAK_REACHABLE);
}

/* The allocator's heap of an attached process (outside_blocks): a root
 * region over the blocks, whose words in a block count only when the
 * block is reached. A pointer in a gap (a block allocated before the
 * attach) holds; one in a lost block does not. */
Test(leak_scan, outside_blocks_roots)
{
    setup(5);
    mt_leak_root saved = root;
    root = (mt_leak_root){ BASE, BLOCK(5), MT_ROOT_OTHER, 0, false, true };
    put(BLOCK(0) + 1024, BLOCK(1)); /* a gap: 1 held */
    put(BLOCK(1) + 8, BLOCK(2));    /* 2 through 1 */
    put(BLOCK(3), BLOCK(4));        /* 3 lost, holding 4 */
    put(BASE + 64, BLOCK(0) + 8);   /* below every block: 0 possibly */
    mt_leak_totals t = scan(5, NULL, 0);
    root = saved;
    cr_expect_eq(class_of(5, 0), MT_LEAK_POSSIBLE);
    cr_expect_eq(class_of(5, 1), MT_LEAK_REACHABLE);
    cr_expect_eq(class_of(5, 2), MT_LEAK_REACHABLE);
    cr_expect_eq(class_of(5, 3), MT_LEAK_DEFINITE);
    cr_expect_eq(class_of(5, 4), MT_LEAK_INDIRECT);
    cr_expect_eq(t.unreadable_root_bytes, 0);
}

static mt_leak_root added[4];
static size_t nadded;

static void add_root(void *ctx, const mt_leak_root *r)
{
    (void)ctx;
    if (nadded < 4)
        added[nadded] = *r;
    nadded++;
}

/* leak_roots.h's heap rule: a mapping is the allocator's heap when a
 * known block starts in it; it is then one region, outside the blocks,
 * by start pointers only. */
Test(leak_scan, heap_roots_where_blocks_lie)
{
    setup(3);
    mt_leak_sort(blocks, 3);
    cr_expect_eq(blocks[0].ptr, BLOCK(0));
    mt_leak_roots_sink s = { add_root, NULL, reader, NULL };
    nadded = 0;
    mt_leak_roots_heap(&s, BASE, BLOCK(0), blocks, 3);         /* ends where 0 starts */
    mt_leak_roots_heap(&s, BLOCK(3), BLOCK(9), blocks, 3);     /* above them all */
    mt_leak_roots_heap(&s, BLOCK(0) + 8, BLOCK(1), blocks, 3); /* inside 0, no start */
    cr_expect_eq(nadded, 0);
    mt_leak_roots_heap(&s, BLOCK(1) - 16, BLOCK(1) + 64, blocks, 3);
    mt_leak_roots_heap(&s, BASE, BLOCK(9), blocks, 3);
    cr_assert_eq(nadded, 2);
    cr_expect_eq(added[0].lo, BLOCK(1) - 16);
    cr_expect_eq(added[0].hi, BLOCK(1) + 64);
    cr_expect(added[0].outside_blocks && added[0].starts_only);
    cr_expect_eq(added[1].lo, BASE);
    cr_expect_eq(added[1].hi, BLOCK(9));
}

Test(leak_scan, registers_root_blocks_and_unreadable_memory)
{
    setup(4);
    uintptr_t regs[] = { 0, BLOCK(0) + 5, 12345 };
    blocks[0].flags = MT_LEAK_FLAG_ROOT; /* BLOCK(3): setup stores them reversed */
    put(BLOCK(3), BLOCK(2));
    put(BASE + 4000, BLOCK(1));
    hole_lo = BASE + 3072, hole_hi = BASE + 4096; /* the root's last kilobyte */
    mt_leak_totals t = scan(4, regs, 3);
    cr_expect_eq(class_of(4, 0), MT_LEAK_POSSIBLE, "a register's interior pointer");
    cr_expect_eq(class_of(4, 3), MT_LEAK_REACHABLE);
    cr_expect_eq(class_of(4, 2), MT_LEAK_REACHABLE);
    cr_expect_eq(class_of(4, 1), MT_LEAK_DEFINITE, "only an unreadable root held it");
    cr_expect_eq(t.unreadable_root_bytes, 4096, "the chunk holding the hole");
}

Test(leak_scan, find)
{
    setup(3);
    scan(3, NULL, 0);
    cr_expect_eq(mt_leak_find(blocks, 3, BLOCK(1) + 63), 1);
    cr_expect_eq(mt_leak_find(blocks, 3, BLOCK(1) + 64), -1);
    cr_expect_eq(mt_leak_find(blocks, 3, BASE), -1);
}

/* The fake space as mappings: [BASE, BASE + SPACE) readable, but for the
 * hole, which is mapped and unreadable; nothing else. */
static int region(void *ctx, uintptr_t addr, uintptr_t *end)
{
    (void)ctx;
    if (addr < BASE) {
        *end = BASE;
        return MT_MEM_NONE;
    }
    if (addr >= BASE + SPACE) {
        *end = 0;
        return MT_MEM_NONE;
    }
    if (addr >= hole_lo && addr < hole_hi) {
        *end = hole_hi;
        return MT_MEM_UNREADABLE;
    }
    *end = addr < hole_lo ? hole_lo : BASE + SPACE;
    return MT_MEM_READABLE;
}

/* Entries a wild write damaged: a size past the mappings (2^62, and one
 * ending at the top of the address space), an address in no mapping, one
 * the caller flagged, one whose size covers the next two blocks: each
 * dropped (the covering one with the first block it covers), counted, the
 * lowest named; the rest classified as if they were not there, and a root
 * range reaching far past the mappings read only where they are. */
Test(leak_scan, damaged_entries)
{
    setup(10);
    /* setup stores block i at index 9 - i */
    blocks[9 - 1].size = (uint64_t)1 << 62;
    blocks[9 - 2].size = UINTPTR_MAX - BLOCK(2) - 7;
    blocks[9 - 3].ptr = BASE + 2 * SPACE;
    blocks[9 - 4].flags = MT_LEAK_FLAG_DAMAGED;
    blocks[9 - 6].size = 2 * 4096 + 8; /* over 7 and into 8 */
    put(BASE + 8, BLOCK(0));
    put(BASE + 16, BLOCK(8));
    put(BLOCK(0), BLOCK(5));
    hole_lo = BASE + SPACE / 2, hole_hi = BASE + SPACE / 2 + 4096;
    mt_leak_root far = { BASE, (uintptr_t)1 << 62, MT_ROOT_OTHER, 0, false, false };
    mt_leak_input in = { blocks, 10, &far, 1, NULL, 0, reader, NULL, region, NULL };
    mt_leak_totals t;
    cr_assert(mt_leak_scan(&in, &t));
    cr_expect_eq(t.damaged, 6);
    cr_expect_eq(t.first_damaged, BLOCK(1));
    size_t kept = 10 - t.damaged;
    uintptr_t want[] = { BLOCK(0), BLOCK(5), BLOCK(8), BLOCK(9) };
    cr_assert_eq(kept, 4);
    for (size_t i = 0; i < kept; i++)
        cr_expect_eq(blocks[i].ptr, want[i], "kept block %zu", i);
    cr_expect_eq(blocks[0].class, MT_LEAK_REACHABLE);
    cr_expect_eq(blocks[1].class, MT_LEAK_REACHABLE);
    cr_expect_eq(blocks[2].class, MT_LEAK_REACHABLE);
    cr_expect_eq(blocks[3].class, MT_LEAK_DEFINITE);
    cr_expect_eq(t.unreadable_root_bytes, ((uintptr_t)1 << 62) - BASE - SPACE + 4096);
}

/* 1,000,000 blocks of 16 bytes in a separate target of 16 MB: a list from
 * a root through half of them in a shuffled order, the other half lost in
 * pairs. Prints the time for the record (doc/leaks.adoc). */
static uint64_t *big;
#define BIG_N 1000000u
#define BIG_BASE ((uintptr_t)0x200000000ull)

static const void *big_reader(void *ctx, uintptr_t addr, size_t len)
{
    (void)ctx;
    if (addr >= BIG_BASE && addr + len <= BIG_BASE + (uintptr_t)BIG_N * 16)
        return (const char *)big + (addr - BIG_BASE);
    if (addr >= BASE && addr + len <= BASE + SPACE)
        return (const char *)space + (addr - BASE);
    return NULL;
}

Test(leak_scan, a_million_blocks, .timeout = 60)
{
    big = calloc(BIG_N, 16);
    mt_leak_block *b = calloc(BIG_N, sizeof *b);
    uint32_t *order = malloc(BIG_N / 2 * sizeof *order);
    cr_assert(big && b && order);
    srand(1);
    for (uint32_t i = 0; i < BIG_N / 2; i++)
        order[i] = 2 * i;
    for (uint32_t i = BIG_N / 2 - 1; i > 0; i--) {
        uint32_t j = (uint32_t)rand() % (i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    memset(space, 0, sizeof space);
    space[0] = BIG_BASE + (uintptr_t)order[0] * 16;
    for (uint32_t i = 0; i + 1 < BIG_N / 2; i++)
        big[order[i] * 2] = BIG_BASE + (uintptr_t)order[i + 1] * 16 + 8;
    for (uint32_t i = 1; i < BIG_N; i += 4) /* odd blocks: lost pairs */
        big[i * 2] = BIG_BASE + (uintptr_t)(i + 2) * 16;
    for (uint32_t i = 0; i < BIG_N; i++) /* shuffled-ish input order */
        b[i] = (mt_leak_block){
            BIG_BASE + (uintptr_t)((uint64_t)i * 7919 % BIG_N) * 16, 16, 0, 0, 0, 0, 0
        };
    mt_leak_root r = { BASE, BASE + 4096, MT_ROOT_GLOBALS, 0, false, false };
    mt_leak_input in = { b, BIG_N, &r, 1, NULL, 0, big_reader, NULL, NULL, NULL };
    mt_leak_totals t;
    cr_assert(mt_leak_scan(&in, &t));
    /* The root points at the chain's head; its links are interior
     * pointers: the rest is possibly lost, as valgrind says. */
    cr_expect_eq(t.blocks[MT_LEAK_REACHABLE], 1);
    cr_expect_eq(t.blocks[MT_LEAK_POSSIBLE], BIG_N / 2 - 1);
    cr_expect_eq(t.blocks[MT_LEAK_DEFINITE], BIG_N / 4);
    cr_expect_eq(t.blocks[MT_LEAK_INDIRECT], BIG_N / 4);
    fprintf(stderr, "leak_scan: %u blocks scanned in %.3f s\n", BIG_N, t.seconds);
    free(big);
    free(b);
    free(order);
}
