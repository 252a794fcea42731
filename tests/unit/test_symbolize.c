/* Symbolizer: return addresses in a test fixture resolve to the exact
 * file:line of the call, with the inline chain, and an unmapped address is
 * reported as such. */
#include "../../src/format.h"
#include "../../src/output.h"
#include "../../src/symbolize.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

extern int fixture_inner_line, fixture_outer_line, fixture_plain_line;
uintptr_t fixture_outer(void);
uintptr_t fixture_plain(void);

static char text[8192];

static const char *symbolize(uintptr_t ret)
{
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    mt_out out;
    mt_out_init(&out, fileno(f));
    cr_assert(mt_sym_self_lock());
    mt_dwfl *dwfl = mt_sym_self();
    cr_assert_not_null(dwfl);
    mt_fmt_stack(&out, dwfl, true, &ret, 1);
    mt_sym_self_unlock();
    mt_out_flush(&out);
    size_t n = (size_t)pread(fileno(f), text, sizeof text - 1, 0);
    text[n] = '\0';
    fclose(f);
    return text;
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
