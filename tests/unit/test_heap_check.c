/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Heap errors' pure parts: the pattern check of redzones and quarantined
 * blocks (scan/pattern.h's mt_pattern_damage, its word, 16-byte and
 * memcmp paths, and mt_pattern_fill) and the report's text (format.c's mt_fmt_heap_error)
 * for every kind. The e2e suite (tests/e2e/heap_errors.sh) checks the
 * real thing against AddressSanitizer. */
#include "capture/quarantine.h"
#include "report/format.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ the pattern */

Test(heap_check, clean_ranges_of_every_length)
{
    unsigned char buf[300];
    memset(buf, 0xfa, sizeof buf);
    size_t first = 99, end = 99;
    for (size_t len = 0; len <= sizeof buf; len++)
        cr_assert(!mt_pattern_damage(buf, len, 0xfa, &first, &end), "len %zu", len);
    cr_assert_eq(first, 99, "untouched when clean");
}

Test(heap_check, damage_found_exactly)
{
    unsigned char buf[300];
    /* Every length on both sides of the paths' bounds (8, 16, 128 bytes),
     * damage of 1 to 3 bytes at every position. */
    for (size_t len = 1; len <= 140; len++)
        for (size_t at = 0; at < len; at++)
            for (size_t n = 1; n <= 3 && at + n <= len; n++) {
                memset(buf, 0xfd, sizeof buf);
                memset(buf + at, 0, n);
                size_t first, end;
                cr_assert(mt_pattern_damage(buf, len, 0xfd, &first, &end), "len %zu at %zu", len,
                          at);
                cr_assert_eq(first, at, "len %zu at %zu n %zu", len, at, n);
                cr_assert_eq(end, at + n, "len %zu at %zu n %zu", len, at, n);
            }
}

Test(heap_check, damage_spans_first_to_last)
{
    unsigned char buf[200];
    memset(buf, 0xfd, sizeof buf);
    buf[5] = 1;
    buf[150] = 2; /* between them, intact bytes: the span still covers them */
    size_t first, end;
    cr_assert(mt_pattern_damage(buf, sizeof buf, 0xfd, &first, &end));
    cr_assert_eq(first, 5);
    cr_assert_eq(end, 151);
    cr_assert(!mt_pattern_damage(buf + 6, 144, 0xfd, &first, &end), "only the damage");
}

Test(heap_check, fill_writes_exactly_its_range)
{
    unsigned char buf[200];
    for (size_t len = 0; len <= 140; len++) {
        memset(buf, 0, sizeof buf);
        mt_pattern_fill(buf + 8, len, 0xfd);
        size_t first, end;
        cr_assert(!mt_pattern_damage(buf + 8, len, 0xfd, &first, &end), "len %zu", len);
        for (size_t i = 0; i < sizeof buf; i++)
            if (i < 8 || i >= 8 + len)
                cr_assert_eq(buf[i], 0, "len %zu: byte %zu outside the range written", len, i);
    }
}

Test(heap_check, quarantine_fill_is_the_head_line)
{
    /* A 16-aligned block's head: to the end of its 64-byte line, never past
     * its size (the quarantine fills and checks only that line). */
    static const struct {
        uintptr_t ptr;
        uint64_t size, filled;
    } cases[] = {
        { 0x10000, 200, 64 }, { 0x10010, 200, 48 }, { 0x10020, 200, 32 }, { 0x10030, 200, 16 },
        { 0x10030, 16, 16 },  { 0x10030, 10, 10 },  { 0x10000, 64, 64 },  { 0x10000, 40, 40 },
        { 0x10008, 100, 56 }, { 0x10000, 0, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_assert_eq(mt_quarantine_fill(cases[i].ptr, cases[i].size), cases[i].filled,
                     "block at %#lx of %lu bytes", (unsigned long)cases[i].ptr,
                     (unsigned long)cases[i].size);
}

Test(heap_check, free_call_padding)
{
    mt_free_call c = MT_FREE_CALL(NULL, MT_FC_PAB | MT_FC_SIZE_B, 64, 100);
    mt_free_call_pad(&c, 16);
    cr_assert_eq(c.a, 64, "an alignment stays");
    cr_assert_eq(c.b, 116, "the size takes the redzone");
    mt_free_call d = MT_FREE_CALL(NULL, MT_FC_PA, 64, 0);
    mt_free_call_pad(&d, 16);
    cr_assert_eq(d.a, 64, "no size argument: nothing changes");
}

/* ------------------------------------------------------------ the report */

static char text[8192];

static void put_stack(void *ctx, mt_out *out, const uintptr_t *frames, unsigned depth)
{
    (void)ctx;
    mt_out_printf(out, "  #0 %#lx (%u frames)\n", (unsigned long)frames[0], depth);
}

static const char *format(const mt_fmt_heap_error_report *e)
{
    FILE *f = tmpfile();
    cr_assert(f);
    mt_out out;
    mt_out_init(&out, fileno(f));
    mt_fmt_heap_error(&out, e, put_stack, NULL);
    mt_out_flush(&out);
    rewind(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

static const uintptr_t alloc_frames[] = { 0x1000 }, free_frames[] = { 0x2000 },
                       here_frames[] = { 0x3000, 0x3100 };

static mt_fmt_heap_error_report base(int kind)
{
    return (mt_fmt_heap_error_report){
        .kind = kind,
        .ptr = 0x5000,
        .size = 100,
        .alloc_seq = 7,
        .alloc_thread = { 1, "main" },
        .alloc_stack = { alloc_frames, 1 },
        .thread = { 2, NULL },
        .stack = { here_frames, 2 },
        .where = "free",
    };
}

Test(heap_check, overflow_by_one)
{
    mt_fmt_heap_error_report e = base(MT_HEAP_OVERFLOW);
    e.offset = 100;
    e.bytes = 1;
    cr_assert_str_eq(format(&e),
                     "memtrace: heap-buffer-overflow: 1 byte past the end of a 100-byte block at 0x5000\n"
                     "  allocated by thread 1 \"main\" (allocation #7) at:\n"
                     "  #0 0x1000 (1 frames)\n"
                     "  detected in free by thread 2 at:\n"
                     "  #0 0x3000 (2 frames)\n");
}

Test(heap_check, overflow_not_at_the_end_and_at_least)
{
    mt_fmt_heap_error_report e = base(MT_HEAP_OVERFLOW);
    e.offset = 103;
    e.bytes = 13;
    e.at_least = true;
    e.stack.depth = 0;
    e.thread.number = 0;
    e.where = "memtrace check";
    cr_assert_str_eq(format(&e),
                     "memtrace: heap-buffer-overflow: at least 13 bytes at offset 103, 3 bytes past "
                     "the end of a 100-byte block at 0x5000\n"
                     "  allocated by thread 1 \"main\" (allocation #7) at:\n"
                     "  #0 0x1000 (1 frames)\n"
                     "  detected in memtrace check\n");
}

Test(heap_check, write_after_free)
{
    mt_fmt_heap_error_report e = base(MT_HEAP_WRITE_AFTER_FREE);
    e.size = 64;
    e.offset = 8;
    e.bytes = 4;
    e.freed = true;
    e.free_seq = 9;
    e.free_thread = (mt_fmt_thread){ 3, "worker" };
    e.free_stack = (mt_fmt_stack_ref){ free_frames, 1 };
    e.where = "quarantine";
    cr_assert_str_eq(format(&e),
                     "memtrace: write-after-free: 4 bytes at offset 8 of a freed 64-byte block at 0x5000\n"
                     "  allocated by thread 1 \"main\" (allocation #7) at:\n"
                     "  #0 0x1000 (1 frames)\n"
                     "  freed by thread 3 \"worker\" (after allocation #9) at:\n"
                     "  #0 0x2000 (1 frames)\n"
                     "  detected in quarantine by thread 2 at:\n"
                     "  #0 0x3000 (2 frames)\n");
}

Test(heap_check, accesses_seen)
{
    mt_fmt_heap_error_report e = base(MT_HEAP_USE_AFTER_FREE);
    e.access = MT_HEAP_READ;
    e.offset = 8;
    e.bytes = 1;
    e.freed = true;
    e.free_stack.depth = 0; /* "(no stack was recorded for this block)" */
    e.free_thread = (mt_fmt_thread){ 1, NULL };
    e.where = "a fault";
    const char *t = format(&e);
    cr_assert(strstr(t, "memtrace: use-after-free read: 1 byte at offset 8 of a freed 100-byte "
                        "block at 0x5000\n") == t,
              "%s", t);
    cr_assert(strstr(t, "  freed by thread 1 (after allocation #0) at:\n"
                        "  (no stack was recorded for this block)\n"),
              "%s", t);
    e = base(MT_HEAP_OVERFLOW);
    e.access = MT_HEAP_WRITE;
    e.offset = 100;
    e.bytes = 1;
    t = format(&e);
    cr_assert(strstr(t, "memtrace: heap-buffer-overflow write: 1 byte past the end of a 100-byte "
                        "block at 0x5000\n") == t,
              "%s", t);
    e = base(MT_HEAP_UNDERFLOW);
    e.offset = -2;
    e.bytes = 2;
    t = format(&e);
    cr_assert(strstr(t, "memtrace: heap-buffer-underflow: 2 bytes before the start of a 100-byte "
                        "block at 0x5000\n") == t,
              "%s", t);
}
