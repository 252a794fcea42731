/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The byte-pattern check of the heap checks: whether a range still holds
 * the byte it was filled with (a redzone, a quarantined block's head, the
 * rest of a guard page), where it does not, and the fill. One check for
 * the library's hot path (capture/quarantine.h, guard.c) and memtrace-
 * symbolize's `check` (tools/heap_check.c) alike. Header-only and in line
 * (a redzone is checked on every free); no heap, no system call. */
#ifndef MT_PATTERN_H
#define MT_PATTERN_H

#include "base/common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Where [P, P + LEN) differs from BYTE, found once it does: the first and
 * last (exclusive) offsets from P. */
static MT_COLD MT_NOINLINE void mt_pattern_find(const unsigned char *p, size_t len,
                                                unsigned char byte, size_t *first, size_t *end)
{
    size_t i = 0, last = len;
    while (i < len && p[i] == byte)
        i++;
    while (last > i && p[last - 1] == byte)
        last--;
    *first = i;
    *end = last;
}

/* 16 bytes as one value: the checks and the fill below load and store a
 * range in such pieces, straight code for the few a redzone or a
 * quarantine fill has (no call, no rep prefix, which costs more than the
 * work on ranges this short). */
typedef unsigned char mt_pattern_v16 __attribute__((vector_size(16)));

/* Which of the 16 bytes at P equal WANT's: -1 where they do, 0 elsewhere. */
typedef signed char mt_pattern_m16 __attribute__((vector_size(16)));
static inline mt_pattern_m16 mt_pattern_eq(const unsigned char *p, mt_pattern_v16 want)
{
    mt_pattern_v16 v;
    memcpy(&v, p, sizeof v);
    return v == want;
}

/* Whether EQ (mt_pattern_eq's, pieces ANDed) says some byte differs: by
 * SSE2's byte mask where there is one (three instructions fewer than the
 * two halves' test, on every free). */
static inline bool mt_pattern_m16_differs(mt_pattern_m16 eq)
{
#if defined(__SSE2__)
    typedef char v16qi __attribute__((vector_size(16)));
    return __builtin_ia32_pmovmskb128((v16qi)eq) != 0xffff;
#else
    uint64_t lo, hi;
    memcpy(&lo, &eq, 8);
    memcpy(&hi, (const char *)&eq + 8, 8);
    return (lo & hi) != ~0ull;
#endif
}

/* Whether [P, P + LEN) differs from BYTE anywhere. Up to 128 bytes (a
 * redzone, a quarantine fill) in line, by 16-byte pieces: one for 16 bytes
 * (the default redzone), four for up to 64 (a quarantine fill: at 0, 16
 * and 32 bytes, none past LEN - 16, and at LEN - 16, so overlapping
 * rather than branching on LEN), else one by one with the last
 * overlapping the one before; one or two words for less; longer by memcmp
 * against itself one byte on (every byte equal to the first). */
static inline bool mt_pattern_differs(const unsigned char *p, size_t len, unsigned char byte)
{
    mt_pattern_v16 want = (mt_pattern_v16){ 0 } + byte;
    mt_pattern_m16 eq;
    if (len == 16) {
        eq = mt_pattern_eq(p, want);
    } else if (len > 16 && len <= 64) {
        size_t last = len - 16, at16 = last < 16 ? last : 16, at32 = last < 32 ? last : 32;
        eq = mt_pattern_eq(p, want) & mt_pattern_eq(p + at16, want) &
             mt_pattern_eq(p + at32, want) & mt_pattern_eq(p + last, want);
    } else if (len > 64 && len <= 128) {
        eq = mt_pattern_eq(p + len - 16, want);
        for (size_t i = 0; i + 16 < len; i += 16)
            eq &= mt_pattern_eq(p + i, want);
    } else if (len < 16) {
        uint64_t word = 0x0101010101010101ull * byte, d = 0, v;
        if (len >= 8) {
            memcpy(&v, p, 8);
            d = v ^ word;
            memcpy(&v, p + len - 8, 8);
            d |= v ^ word;
        } else {
            for (size_t i = 0; i < len; i++)
                d |= p[i] ^ byte;
        }
        return d != 0;
    } else {
        return p[0] != byte || memcmp(p, p + 1, len - 1) != 0;
    }
    return mt_pattern_m16_differs(eq);
}

/* Whether [P, P + LEN) differs from BYTE anywhere (then *FIRST and *END,
 * as mt_pattern_find). */
static inline bool mt_pattern_damage(const unsigned char *p, size_t len, unsigned char byte,
                                     size_t *first, size_t *end)
{
    if (MT_LIKELY(!mt_pattern_differs(p, len, byte)))
        return false;
    mt_pattern_find(p, len, byte, first, end);
    return true;
}

/* Fills [P, P + LEN) with BYTE, by the pieces mt_pattern_differs reads (in
 * line up to 128 bytes). */
static inline void mt_pattern_fill(unsigned char *p, size_t len, unsigned char byte)
{
    mt_pattern_v16 v = (mt_pattern_v16){ 0 } + byte;
    if (len == 16) {
        memcpy(p, &v, 16);
    } else if (len > 16 && len <= 64) {
        size_t last = len - 16, at16 = last < 16 ? last : 16, at32 = last < 32 ? last : 32;
        memcpy(p, &v, 16);
        memcpy(p + at16, &v, 16);
        memcpy(p + at32, &v, 16);
        memcpy(p + last, &v, 16);
    } else if (len > 64 && len <= 128) {
        /* The pieces before the last, written out: a loop would be made
         * a memset again (a rep stos). */
        switch ((len - 1) / 16) {
        case 7: memcpy(p + 96, &v, 16); /* fall through */
        case 6: memcpy(p + 80, &v, 16); /* fall through */
        case 5: memcpy(p + 64, &v, 16); /* fall through */
        default:
            memcpy(p + 48, &v, 16);
            memcpy(p + 32, &v, 16);
            memcpy(p + 16, &v, 16);
            memcpy(p, &v, 16);
            break;
        }
        memcpy(p + len - 16, &v, 16);
    } else if (len >= 8 && len < 16) {
        uint64_t word = 0x0101010101010101ull * byte;
        memcpy(p, &word, 8);
        memcpy(p + len - 8, &word, 8);
    } else {
        memset(p, byte, len);
    }
}

#endif
