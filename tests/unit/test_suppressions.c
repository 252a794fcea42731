/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* LeakSanitizer's suppression templates and the file format, as
 * suppressions.c implements them: substring by default, '*', '^' and '$';
 * comments, blank lines and bad lines. */
#include "leak/suppressions.h"

#include <criterion/criterion.h>
#include <string.h>

Test(suppressions, templates)
{
    cr_expect(mt_suppression_matches("lose", "lose_direct"));
    cr_expect(mt_suppression_matches("direct", "lose_direct"), "anywhere in the name");
    cr_expect(mt_suppression_matches("^lose_direct$", "lose_direct"));
    cr_expect(!mt_suppression_matches("^lose$", "lose_direct"));
    cr_expect(!mt_suppression_matches("^direct", "lose_direct"));
    cr_expect(mt_suppression_matches("direct$", "lose_direct"));
    cr_expect(!mt_suppression_matches("lose$", "lose_direct"));
    cr_expect(mt_suppression_matches("l*_d*t", "lose_direct"));
    cr_expect(mt_suppression_matches("^*direct$", "lose_direct"));
    cr_expect(mt_suppression_matches("libfoo*.so", "/usr/lib/libfoo.so.1"));
    cr_expect(!mt_suppression_matches("x*y", "xz"));
    cr_expect(!mt_suppression_matches("lose", NULL));
}

Test(suppressions, file)
{
    char text[] = "# comment\n\n  leak:first  \nrace:other\nleak:\nleak:^second$\r\nleak:third";
    mt_suppression s[MT_SUPPRESSIONS_MAX];
    size_t n = mt_suppressions_parse("test.supp", text, strlen(text), s);
    cr_assert_eq(n, 3);
    cr_expect_str_eq(s[0].pattern, "first");
    cr_expect_str_eq(s[1].pattern, "^second$");
    cr_expect_str_eq(s[2].pattern, "third");
    mt_frame rows[2] = { { .function = "inner", .file = "a.c", .module = "prog" },
                         { .function = "third_party", .file = "b.c", .module = "libx.so" } };
    cr_expect_eq(mt_suppressions_match_rows(s, n, rows, 2), 2, "an inlined row matches too");
    cr_expect_eq(mt_suppressions_match_rows(s, n, rows, 1), n, "nothing matches the first row");
}
