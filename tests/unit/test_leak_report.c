/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The leak report (src/leak/leak_report.c) through its interface, with made-up
 * stacks and a made-up suppression matcher: groups by (stack, class),
 * largest first, the summary over every group listed or not, the count
 * of the groups left out by max_groups, what each suppression took, the
 * notes. The e2e suite (tests/e2e/leaks.sh) checks the real thing at exit
 * and in gdb. */
#include "leak/leak_report.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char text[16384];
static uintptr_t frame_buf[1];

/* Stack id N has one frame, address 0x1000 * N. */
static unsigned stack_of(void *ctx, uint32_t id, const uintptr_t **frames)
{
    (void)ctx;
    frame_buf[0] = 0x1000u * id;
    *frames = frame_buf;
    return 1;
}

static void put_stack(void *ctx, mt_out *out, const uintptr_t *frames, unsigned depth)
{
    (void)ctx;
    mt_out_printf(out, "  frame %lx depth %u\n", (unsigned long)frames[0], depth);
}

/* Suppression 0 takes stack 3's frame. */
static size_t match(void *ctx, const uintptr_t *frames, unsigned depth, const mt_suppression *sup,
                    size_t nsup)
{
    (void)ctx, (void)sup, (void)depth;
    return frames[0] == 0x3000 ? 0 : nsup;
}

static const char *report(mt_leak_report_input *in, uint64_t *lost)
{
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    mt_out out;
    mt_out_init(&out, fileno(f));
    *lost = mt_leak_report(&out, in);
    mt_out_flush(&out);
    size_t n = (size_t)pread(fileno(f), text, sizeof text - 1, 0);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* Stack 1: 2 definitely lost (10 + 20, the 20 holding the 5 of stack 1
 * and the 80 of stack 5), 1 indirectly (5); stack 2: 100 definitely;
 * stack 3: 7 definitely; stack 4: 1000 still reachable; stack 5: 80
 * indirectly; stack 6: 3 possibly lost. Stack 1 is listed first: 115 with
 * what it holds. */
static mt_leak_block blocks[] = {
    { 0x10, 10, 1, MT_LEAK_DEFINITE, 0, 0, 0 },  { 0x20, 20, 1, MT_LEAK_DEFINITE, 0, 2, 85 },
    { 0x30, 5, 1, MT_LEAK_INDIRECT, 0, 0, 0 },   { 0x40, 100, 2, MT_LEAK_DEFINITE, 0, 0, 0 },
    { 0x50, 7, 3, MT_LEAK_DEFINITE, 0, 0, 0 },   { 0x60, 1000, 4, MT_LEAK_REACHABLE, 0, 0, 0 },
    { 0x460, 80, 5, MT_LEAK_INDIRECT, 0, 0, 0 }, { 0x4c0, 3, 6, MT_LEAK_POSSIBLE, 0, 0, 0 },
};

static mt_leak_report_input input(void)
{
    static mt_leak_totals t = { .bytes = { 1000, 137, 85, 3 }, .blocks = { 1, 4, 2, 1 } };
    mt_leak_sort_by_stack(blocks, sizeof blocks / sizeof *blocks);
    return (mt_leak_report_input){ .pid = 42,
                                   .blocks = blocks,
                                   .nblocks = sizeof blocks / sizeof *blocks,
                                   .totals = &t,
                                   .nroots = 3,
                                   .max_groups = SIZE_MAX,
                                   .stack = stack_of,
                                   .match = match,
                                   .put_stack = put_stack };
}

Test(leak_report, groups_largest_first_then_the_summary)
{
    mt_leak_report_input in = input();
    uint64_t lost;
    const char *s = report(&in, &lost);
    cr_assert_eq(lost, 222);
    cr_assert_str_eq(
        s, "memtrace: leak check, pid 42: 8 live blocks, 3 root regions, scanned in 0.000 s\n"
           "memtrace: 115 (30 direct, 85 indirect) bytes in 2 blocks are definitely lost (with 2 "
           "indirectly lost blocks), allocated at:\n"
           "  frame 1000 depth 1\n"
           "memtrace: 100 (100 direct, 0 indirect) bytes in 1 blocks are definitely lost (with 0 "
           "indirectly lost blocks), allocated at:\n"
           "  frame 2000 depth 1\n"
           "memtrace: 7 (7 direct, 0 indirect) bytes in 1 blocks are definitely lost (with 0 "
           "indirectly lost blocks), allocated at:\n"
           "  frame 3000 depth 1\n"
           "memtrace: 80 bytes in 1 blocks are indirectly lost, allocated at:\n"
           "  frame 5000 depth 1\n"
           "memtrace: 5 bytes in 1 blocks are indirectly lost, allocated at:\n"
           "  frame 1000 depth 1\n"
           "memtrace: 3 bytes in 1 blocks are possibly lost, allocated at:\n"
           "  frame 6000 depth 1\n"
           "memtrace: leaks: 137 bytes definitely lost in 4 blocks, 85 bytes indirectly lost in 2 "
           "blocks, 3 bytes possibly lost in 1 blocks, 1000 bytes still reachable in 1 blocks\n");
}

Test(leak_report, max_groups_lists_fewer_and_counts_all)
{
    mt_leak_report_input in = input();
    in.max_groups = 1;
    uint64_t lost;
    const char *s = report(&in, &lost);
    cr_assert_eq(lost, 222);
    cr_assert_not_null(strstr(s, "memtrace: 115 (30 direct, 85 indirect) bytes in 2 blocks"));
    cr_assert_null(strstr(s, "memtrace: 100 "));
    cr_assert_not_null(strstr(s, "memtrace: leaks: 5 more lost groups not listed\n"));
    cr_assert_not_null(strstr(s, "memtrace: leaks: 137 bytes definitely lost in 4 blocks, 85 "));
}

Test(leak_report, suppressions_take_their_groups_and_say_so)
{
    mt_leak_report_input in = input();
    mt_suppression sup[2] = { { "stack3", 0, 0 }, { "never", 0, 0 } };
    in.sup = sup;
    in.nsup = 2;
    mt_leak_note note = { 77, "its stack was not scanned" };
    in.notes = &note;
    in.nnotes = 1;
    uint64_t lost;
    const char *s = report(&in, &lost);
    cr_assert_eq(lost, 215);
    cr_assert_eq(sup[0].bytes, 7);
    cr_assert_eq(sup[0].blocks, 1);
    cr_assert_eq(sup[1].blocks, 0);
    cr_assert_null(strstr(s, "frame 3000"));
    cr_assert_not_null(strstr(s, "memtrace: leaks: thread 77 did not stop for the scan: its "
                                 "stack was not scanned;"));
    cr_assert_not_null(strstr(s, "memtrace: leaks: suppressed by leak:stack3: 7 bytes in 1 "
                                 "blocks\n"));
    cr_assert_null(strstr(s, "leak:never"));
    cr_assert_not_null(strstr(s, "memtrace: leaks: 130 bytes definitely lost in 3 blocks, 85 "));
}
