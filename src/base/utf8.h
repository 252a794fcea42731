/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* UTF-8 validity, for the writers of text made of the program's bytes
 * (json_str.h, mt_text_escape). */
#ifndef MT_UTF8_H
#define MT_UTF8_H

#include <stddef.h>

/* The length of the valid UTF-8 sequence at P (before END), 0 if there is
 * none: no overlong forms, no surrogates, nothing above U+10FFFF. */
static inline size_t mt_utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned char c = p[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range */
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else
        return 0;
    if ((size_t)(end - p) < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

#endif
