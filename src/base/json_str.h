/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one writer of a JSON string's characters from any bytes (the tags
 * JSON, the export's timeline JSON): the program's names, paths and
 * command line are its bytes, not always UTF-8, and a JSON text must be
 * (RFC 8259). A valid UTF-8 sequence is copied; ", \ and the control bytes
 * (< 0x20, 0x7f) are escaped; every other byte, one that is no part of a
 * valid sequence, is written as \u00XX (the byte read as Latin-1), so the
 * text stays valid and the byte is still shown. Async-signal-safe: no
 * stdio, no allocation. */
#ifndef MT_JSON_STR_H
#define MT_JSON_STR_H

#include "base/utf8.h"

#include <stddef.h>

/* Bytes one call of mt_json_char writes at most ("\u00XX"); no input
 * byte takes more than that. */
#define MT_JSON_CHAR_MAX 6

/* The bytes [*P, END) up to the next character boundary, escaped into
 * OUT (room for MT_JSON_CHAR_MAX bytes); returns the bytes
 * written and advances *P past what it took (at least one byte). */
static inline size_t mt_json_char(const unsigned char **p, const unsigned char *end, char *out)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = *p;
    size_t n = mt_utf8_len(s, end);
    if (n > 1) {
        for (size_t i = 0; i < n; i++)
            out[i] = (char)s[i];
        *p = s + n;
        return n;
    }
    *p = s + 1;
    if (n == 1 && (s[0] == '"' || s[0] == '\\')) {
        out[0] = '\\';
        out[1] = (char)s[0];
        return 2;
    }
    if (n == 1 && s[0] >= 0x20 && s[0] != 0x7f) {
        out[0] = (char)s[0];
        return 1;
    }
    out[0] = '\\';
    out[1] = 'u';
    out[2] = '0';
    out[3] = '0';
    out[4] = hex[s[0] >> 4];
    out[5] = hex[s[0] & 15];
    return 6;
}

#endif
