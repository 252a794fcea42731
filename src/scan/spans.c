/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "scan/spans.h"

#include "scan/leak_scan.h"

/* The first of S's N spans ending above ADDR; N if none. */
static size_t first_above(const mt_span *s, size_t n, uintptr_t addr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s[mid].hi <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

const mt_span *mt_span_of(const mt_span *s, size_t n, uintptr_t addr)
{
    size_t i = first_above(s, n, addr);
    return i < n && s[i].lo <= addr ? &s[i] : NULL;
}

int mt_span_region(const mt_span *s, size_t n, uintptr_t addr, uintptr_t *end)
{
    size_t i = first_above(s, n, addr);
    if (i == n || s[i].lo > addr) {
        *end = i == n ? 0 : s[i].lo;
        return MT_MEM_NONE;
    }
    if (addr < s[i].readable_hi) {
        *end = s[i].readable_hi;
        return MT_MEM_READABLE;
    }
    *end = s[i].hi;
    return MT_MEM_UNREADABLE;
}
