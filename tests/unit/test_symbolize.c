/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Symbolizer: return addresses in a test fixture resolve to the exact
 * file:line of the call, with the inline chain, and an unmapped address is
 * reported as such. */
#include "base/output.h"
#include "report/format.h"
#include "symbolize/symbolize.h"

#include <criterion/criterion.h>
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

extern int fixture_inner_line, fixture_outer_line, fixture_plain_line;
uintptr_t fixture_outer(void);
uintptr_t fixture_plain(void);

static char text[8192];

/* The frame lines of RET by ST (the default state when NULL), in TEXT. */
static const char *symbolize_by(mt_sym_state *st, uintptr_t ret)
{
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    mt_out out;
    mt_out_init(&out, fileno(f));
    cr_assert(mt_sym_self_lock());
    mt_sym_state *dwfl = st ? st : mt_sym_self();
    cr_assert_not_null(dwfl);
    mt_fmt_stack(&out, dwfl, !st, &ret, 1);
    mt_sym_self_unlock();
    mt_out_flush(&out);
    size_t n = (size_t)pread(fileno(f), text, sizeof text - 1, 0);
    text[n] = '\0';
    fclose(f);
    return text;
}

static const char *symbolize(uintptr_t ret)
{
    return symbolize_by(NULL, ret);
}

Test(symbolize, plain_call_resolves_to_its_line)
{
    const char *s = symbolize(fixture_plain());
    char want[128];
    snprintf(want, sizeof want, "  #0 fixture_plain at ");
    cr_assert(strstr(s, want), "got: %s", s);
    snprintf(want, sizeof want, "tests/unit/sym_fixture.c:%d:", fixture_plain_line);
    cr_assert(strstr(s, want), "want %s, got: %s", want, s);
}

Test(symbolize, inline_chain_names_both_sites)
{
    const char *s = symbolize(fixture_outer());
    char want[160];
    snprintf(want, sizeof want, "  #0 fixture_inlined at %s", "");
    cr_assert(strstr(s, want), "got: %s", s);
    snprintf(want, sizeof want, "tests/unit/sym_fixture.c:%d:", fixture_inner_line);
    cr_assert(strstr(s, want), "want %s, got: %s", want, s);
    snprintf(want, sizeof want, "     inlined into fixture_outer at ");
    cr_assert(strstr(s, want), "got: %s", s);
    snprintf(want, sizeof want, "tests/unit/sym_fixture.c:%d:", fixture_outer_line);
    const char *inl = strstr(s, "inlined into");
    cr_assert(inl && strstr(inl, want), "want %s after 'inlined into', got: %s", want, s);
}

Test(symbolize, unmapped_address_is_said_so)
{
    const char *s = symbolize(0x10);
    cr_assert(strstr(s, "  #0 0x10 in a module that is no longer mapped"), "got: %s", s);
}

/* Symbolizes RETS (N) by a state of its own, made as memtrace-symbolize
 * makes one (the caller reports the Dwfl of a process, mt_sym_new takes it
 * over), twice (the second time from its cache), into WANT's form, then
 * frees it. */
static void own_state_round(const uintptr_t *rets, char (*want)[sizeof text], int n)
{
    static const Dwfl_Callbacks callbacks = {
        .find_elf = dwfl_linux_proc_find_elf,
        .find_debuginfo = dwfl_build_id_find_debuginfo,
    };
    Dwfl *dwfl = dwfl_begin(&callbacks);
    cr_assert_not_null(dwfl);
    dwfl_report_begin(dwfl);
    cr_assert(mt_sym_report_process(dwfl, getpid(), NULL));
    cr_assert_eq(dwfl_report_end(dwfl, NULL, NULL), 0);
    mt_sym_state *own = mt_sym_new(dwfl);
    cr_assert_not_null(own);
    cr_assert_eq(mt_sym_dwfl(own), dwfl);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < n; i++)
            cr_assert_str_eq(symbolize_by(own, rets[i]), want[i]);
    mt_sym_free(own);
}

/* A state of its own names frames (inlined ones too) exactly as the
 * default state does, and freeing it leaves the default state's frames as
 * they were. (Whether mt_sym_free frees everything cannot be told by a
 * count of the heap: libdwfl itself keeps about 400 bytes per process
 * report.) */
Test(symbolize, own_state_names_frames_as_the_default_one)
{
    uintptr_t rets[2] = { fixture_plain(), fixture_outer() };
    char want[2][sizeof text];
    for (int i = 0; i < 2; i++)
        snprintf(want[i], sizeof want[i], "%s", symbolize(rets[i]));
    own_state_round(rets, want, 2);
    for (int i = 0; i < 2; i++)
        cr_assert_str_eq(symbolize(rets[i]), want[i]);
}

/* The second time an address is printed its text comes from the frame
 * cache: the same bytes, under its own frame number. */
Test(symbolize, repeated_frame_prints_the_same_text)
{
    uintptr_t frames[3] = { fixture_outer(), fixture_plain(), 0 };
    frames[2] = frames[0];
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    mt_out out;
    mt_out_init(&out, fileno(f));
    cr_assert(mt_sym_self_lock());
    mt_fmt_stack(&out, mt_sym_self(), true, frames, 3);
    mt_sym_self_unlock();
    mt_out_flush(&out);
    size_t n = (size_t)pread(fileno(f), text, sizeof text - 1, 0);
    text[n] = '\0';
    fclose(f);
    const char *first = strstr(text, "  #0 "), *second = strstr(text, "  #1 "),
               *third = strstr(text, "  #2 ");
    cr_assert(first && second && third, "got: %s", text);
    cr_assert(second - first == (long)strlen(third), "got: %s", text);
    cr_assert(strncmp(first + 5, third + 5, (size_t)(second - first) - 5) == 0, "got: %s", text);
}

/* /proc/PID/maps as libdwfl reads it: the private read-write copies of
 * files that libelf makes to read them (here of the program and of a debug
 * file) are dropped; loaded segments, anonymous mappings, shared mappings
 * and the vdso stay. Found as "0x7f... in dl_reuse+0x10061c120": a copy of
 * the program, reported as a module, covered a library unloaded nearby. */
Test(symbolize, maps_without_libelf_copies)
{
    char maps[] =
        "55b0cd1c2000-55b0cd1c3000 r--p 00000000 fe:00 10952748   /tmp/prog\n"
        "55b0cd1c3000-55b0cd1c4000 r-xp 00001000 fe:00 10952748   /tmp/prog\n"
        "55b0cd1c6000-55b0cd1c7000 rw-p 00003000 fe:00 10952748   /tmp/prog\n"
        "7fdee9600000-7fdee99fa000 rw-p 00000000 fe:00 257472     /usr/lib/debug/.build-id/93/ac.debug\n"
        "7fdee9a00000-7fdeeab00000 rw-p 00000000 00:00 0 \n"
        "7fdfe9a02000-7fdfe9a08000 rw-p 00000000 fe:00 10952748   /tmp/prog\n"
        "7fdfe9a09000-7fdfe9a0a000 rw-s 00000000 fe:00 4242       /tmp/shared.db\n"
        "7fdfea252000-7fdfea254000 r--p 00000000 fe:00 332825     /usr/lib/libbz2.so.1.0.4\n"
        "7fdfea264000-7fdfea265000 rw-p 00011000 fe:00 332825     /usr/lib/libbz2.so.1.0.4\n"
        "7ffd1e5f0000-7ffd1e5f2000 r-xp 00000000 00:00 0          [vdso]\n";
    const char *want =
        "55b0cd1c2000-55b0cd1c3000 r--p 00000000 fe:00 10952748   /tmp/prog\n"
        "55b0cd1c3000-55b0cd1c4000 r-xp 00001000 fe:00 10952748   /tmp/prog\n"
        "55b0cd1c6000-55b0cd1c7000 rw-p 00003000 fe:00 10952748   /tmp/prog\n"
        "7fdee9a00000-7fdeeab00000 rw-p 00000000 00:00 0 \n"
        "7fdfe9a09000-7fdfe9a0a000 rw-s 00000000 fe:00 4242       /tmp/shared.db\n"
        "7fdfea252000-7fdfea254000 r--p 00000000 fe:00 332825     /usr/lib/libbz2.so.1.0.4\n"
        "7fdfea264000-7fdfea265000 rw-p 00011000 fe:00 332825     /usr/lib/libbz2.so.1.0.4\n"
        "7ffd1e5f0000-7ffd1e5f2000 r-xp 00000000 00:00 0          [vdso]\n";
    size_t len = mt_sym_filter_maps(maps, strlen(maps));
    cr_assert_eq(len, strlen(want));
    cr_assert(memcmp(maps, want, len) == 0, "got:\n%.*s", (int)len, maps);
}
