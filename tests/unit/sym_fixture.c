/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Functions with known lines for the symbolizer test. Each *_line variable
 * is set to the line of the call whose return address the test resolves. */
#include <stdint.h>

int fixture_inner_line, fixture_outer_line, fixture_plain_line;

uintptr_t fixture_capture(void);
uintptr_t fixture_outer(void);
uintptr_t fixture_plain(void);

__attribute__((noinline)) uintptr_t fixture_capture(void)
{
    return (uintptr_t)__builtin_return_address(0);
}

static inline __attribute__((always_inline)) uintptr_t fixture_inlined(void)
{
    fixture_inner_line = __LINE__ + 1;
    uintptr_t r = fixture_capture();
    return r;
}

__attribute__((noinline)) uintptr_t fixture_outer(void)
{
    fixture_outer_line = __LINE__ + 1;
    uintptr_t r = fixture_inlined();
    return r;
}

__attribute__((noinline)) uintptr_t fixture_plain(void)
{
    fixture_plain_line = __LINE__ + 1;
    uintptr_t r = fixture_capture();
    return r;
}
