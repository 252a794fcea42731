/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one JSON string writer (base/json_str.h's mt_json_char, used by the
 * tags JSON and `memtrace export --json`): any bytes give valid JSON
 * (RFC 8259): quotes and backslashes escaped, control bytes and DEL as
 * \u00XX, valid UTF-8 copied, every byte of an invalid sequence (overlong
 * forms, surrogates, above U+10FFFF, cut short, a stray continuation) as
 * \u00XX, the byte read as Latin-1. */
#include "base/json_str.h"

#include <criterion/criterion.h>
#include <string.h>

/* S's LEN bytes escaped, NUL-terminated, into a static buffer. */
static const char *escaped(const char *s, size_t len)
{
    static char out[1024];
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    size_t n = 0;
    while (p < end) {
        cr_assert_leq(n + MT_JSON_CHAR_MAX, sizeof out - 1);
        const unsigned char *was = p;
        size_t k = mt_json_char(&p, end, out + n);
        cr_assert_gt(p, was, "takes at least one byte");
        cr_assert_leq(k, MT_JSON_CHAR_MAX);
        n += k;
    }
    out[n] = 0;
    return out;
}

#define EXPECT_JSON(in, want) cr_expect_str_eq(escaped(in, sizeof in - 1), want, "%s", #in)

Test(json_str, plain_text_as_is)
{
    EXPECT_JSON("main.c:12 foo(int) <lambda> ~", "main.c:12 foo(int) <lambda> ~");
    EXPECT_JSON("", "");
}

Test(json_str, quotes_and_backslashes)
{
    EXPECT_JSON("say \"hi\"", "say \\\"hi\\\"");
    EXPECT_JSON("C:\\dir\\", "C:\\\\dir\\\\");
    EXPECT_JSON("'single'/slash", "'single'/slash");
}

Test(json_str, control_bytes_and_del)
{
    EXPECT_JSON("a\nb\tc\rd", "a\\u000ab\\u0009c\\u000dd");
    EXPECT_JSON("\x01\x1f\x7f", "\\u0001\\u001f\\u007f");
    cr_expect_str_eq(escaped("x\0y", 3), "x\\u0000y", "a NUL byte inside");
}

Test(json_str, valid_utf8_copied)
{
    EXPECT_JSON("caf\xc3\xa9", "caf\xc3\xa9");           /* U+00E9 */
    EXPECT_JSON("\xe2\x82\xac", "\xe2\x82\xac");         /* U+20AC */
    EXPECT_JSON("\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"); /* U+1F600 */
    EXPECT_JSON("\xef\xbf\xbf\xf4\x8f\xbf\xbf",
                "\xef\xbf\xbf\xf4\x8f\xbf\xbf"); /* U+FFFF, U+10FFFF */
}

Test(json_str, invalid_utf8_as_latin1)
{
    EXPECT_JSON("\xe9t\xe9", "\\u00e9t\\u00e9");                     /* Latin-1 bytes */
    EXPECT_JSON("\x80", "\\u0080");                                  /* a stray continuation */
    EXPECT_JSON("\xc0\xaf", "\\u00c0\\u00af");                       /* overlong '/' */
    EXPECT_JSON("\xe0\x80\xaf", "\\u00e0\\u0080\\u00af");            /* overlong, 3 bytes */
    EXPECT_JSON("\xed\xa0\x80", "\\u00ed\\u00a0\\u0080");            /* a surrogate, U+D800 */
    EXPECT_JSON("\xf4\x90\x80\x80", "\\u00f4\\u0090\\u0080\\u0080"); /* above U+10FFFF */
    EXPECT_JSON("\xff\xfe", "\\u00ff\\u00fe");
    EXPECT_JSON("ok\xe2\x82", "ok\\u00e2\\u0082"); /* cut short at the end */
    EXPECT_JSON("\xc3(", "\\u00c3(");              /* a lead byte, then ASCII */
}
