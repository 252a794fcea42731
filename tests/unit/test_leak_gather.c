/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The roots' gatherer (src/scan/leak_gather.c) over a made-up target: which
 * roots each fact gives, in which order, for the modules (memtrace's own,
 * the allocator's, one whose headers are unknown, the dynamic linker) and
 * the threads (stopped, in no mapping, skipped, without a stack), and the
 * dynamic linker's blocks. */
#include "scan/leak_gather.h"

#include <criterion/criterion.h>
#include <string.h>

#define TCB 0x100

static mt_leak_root roots[32];
static size_t nroots;
static uintptr_t words[32];
static size_t nwords;

static void add_root(void *ctx, const mt_leak_root *r)
{
    (void)ctx;
    cr_assert_lt(nroots, 32);
    roots[nroots++] = *r;
}

static void add_word(void *ctx, uintptr_t w)
{
    (void)ctx;
    cr_assert_lt(nwords, 32);
    words[nwords++] = w;
}

/* Nothing of the target's memory can be read: a TLS has no DTV then. */
static const void *read_none(void *ctx, uintptr_t addr, size_t len)
{
    (void)ctx, (void)addr, (void)len;
    return NULL;
}

/* One mapping, [0x7000, 0x9000): the stacks. */
static bool mapping(void *ctx, uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
    (void)ctx;
    if (addr < 0x7000 || addr >= 0x9000)
        return false;
    *lo = 0x7000, *hi = 0x9000;
    return true;
}

static const Elf64_Phdr data_code[] = {
    { .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_vaddr = 0x0, .p_memsz = 0x500 },
    { .p_type = PT_LOAD, .p_flags = PF_R | PF_W, .p_vaddr = 0x1000, .p_memsz = 0x80 },
};

static void modules(void *ctx, void (*fn)(void *arg, const mt_leak_module *m), void *arg)
{
    (void)ctx;
    mt_leak_module m[] = {
        { 0x100000, data_code, 2, MT_LEAK_MODULE_MEMTRACE, false },  /* nothing */
        { 0x200000, data_code, 2, MT_LEAK_MODULE_ALLOCATOR, false }, /* starts only */
        { 0, NULL, 0, MT_LEAK_MODULE_PROGRAM, false },               /* unread */
        { 0x300000, data_code, 2, MT_LEAK_MODULE_PROGRAM, true },    /* the linker */
        { 0x400000, NULL, 0, MT_LEAK_MODULE_MEMTRACE, false },       /* nothing, not unread */
    };
    for (size_t i = 0; i < sizeof m / sizeof *m; i++)
        fn(arg, &m[i]);
}

static const mt_leak_thread threads[] = {
    { 11, 0x8000, true, 0x5000 },  /* stopped: stack, registers, TLS */
    { 12, 0xa000, true, 0 },       /* its SP in no mapping */
    { 13, 0x8800, false, 0x6000 }, /* skipped (thread() says no) */
    { 14, 0, true, 0x6000 },       /* no stack: TLS only */
    { 15, 0x8f00, false, 0 },      /* a caller's SP: no red zone */
};

static bool thread(void *ctx, size_t i, mt_leak_thread *t)
{
    (void)ctx;
    *t = threads[i];
    return threads[i].tid != 13;
}

static bool reg(void *ctx, size_t i, size_t k, uintptr_t *value)
{
    (void)ctx;
    if (threads[i].tid != 11 || k >= 2)
        return false;
    *value = 0xa0 + k;
    return true;
}

static const uintptr_t in_linker[] = { 0x300010, 0x999 }, elsewhere[] = { 0x200010, 0x300010 };

static unsigned stack(void *ctx, uint32_t id, const uintptr_t **frames)
{
    (void)ctx;
    *frames = id == 1 ? in_linker : elsewhere;
    return id == 0 ? 0 : 2;
}

static const mt_leak_source source = { NULL,   read_none, mapping, modules, 5,
                                       thread, reg,       TCB,     0,       stack };

static void expect_root(size_t i, uintptr_t lo, uintptr_t hi, int kind, uint32_t tid,
                        bool starts_only)
{
    cr_assert_lt(i, nroots);
    cr_expect_eq(roots[i].lo, lo, "root %zu: lo %#lx", i, (unsigned long)roots[i].lo);
    cr_expect_eq(roots[i].hi, hi, "root %zu: hi %#lx", i, (unsigned long)roots[i].hi);
    cr_expect_eq(roots[i].kind, kind, "root %zu: kind", i);
    cr_expect_eq(roots[i].thread, tid, "root %zu: thread", i);
    cr_expect_eq(roots[i].starts_only, starts_only, "root %zu: starts_only", i);
}

Test(leak_gather, modules_then_threads)
{
    nroots = nwords = 0;
    mt_leak_gathered g = { add_root, add_word, NULL, 0, 0, 0 };
    mt_leak_gather_modules(&source, &g);
    cr_expect_eq(nroots, 2, "memtrace's own modules give nothing");
    expect_root(0, 0x201000, 0x201080, MT_ROOT_GLOBALS, 0, true);
    expect_root(1, 0x301000, 0x301080, MT_ROOT_GLOBALS, 0, false);
    cr_expect_eq(g.modules_unread, 1);
    cr_expect_eq(g.linker_lo, 0x300000, "the linker's code");
    cr_expect_eq(g.linker_hi, 0x300500);

    mt_leak_gather_threads(&source, &g);
    cr_expect_eq(nroots, 7);
    /* a thread's TLS first: its stack ends below it when they share a
     * mapping */
    expect_root(2, 0x5000, 0x5000 + TCB, MT_ROOT_TLS, 11, false);
    expect_root(3, 0x8000 - 128, 0x9000, MT_ROOT_STACK, 11, false);
    expect_root(4, 0xa000 - 128, 0xa008, MT_ROOT_STACK, 12, false); /* read as unreadable */
    expect_root(5, 0x6000, 0x6000 + TCB, MT_ROOT_TLS, 14, false);
    expect_root(6, 0x8f00, 0x9000, MT_ROOT_STACK, 15, false);
    cr_expect_eq(nwords, 2, "thread 11's registers only");
    cr_expect_eq(words[0], 0xa0);
    cr_expect_eq(words[1], 0xa1);
}

Test(leak_gather, the_linkers_blocks)
{
    nroots = nwords = 0;
    mt_leak_gathered g = { add_root, add_word, NULL, 0, 0, 0 };
    mt_leak_block b[4] = { { .stack = 1 }, { .stack = 2 }, { .stack = 0 }, { .stack = 1 } };
    mt_leak_gather_linker_blocks(&source, &g, b, 4);
    for (int i = 0; i < 4; i++)
        cr_expect_eq(b[i].flags, 0, "no linker known: no block is its");
    mt_leak_gather_modules(&source, &g);
    mt_leak_gather_linker_blocks(&source, &g, b, 4);
    cr_expect_eq(b[0].flags, MT_LEAK_FLAG_ROOT, "its innermost frame in the linker");
    cr_expect_eq(b[1].flags, 0, "an outer frame in it is not enough");
    cr_expect_eq(b[2].flags, 0, "no stack");
    cr_expect_eq(b[3].flags, MT_LEAK_FLAG_ROOT);
}
