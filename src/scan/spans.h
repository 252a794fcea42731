/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* An address space as a sorted list of spans: what the leak scan's two
 * sources know of the target's mappings (the process itself, leak_self.c,
 * from its maps; a core's PT_LOAD segments or a live process's maps,
 * tools/target_mem.c), and the two questions both ask of it. */
#ifndef MT_SPANS_H
#define MT_SPANS_H

#include <stddef.h>
#include <stdint.h>

/* [lo, hi) is mapped; [lo, readable_hi) of it may be read (lo: none, as a
 * mapping without read permission or a core segment not dumped; hi: all).
 * DATA is the owner's (a core segment's file offset; whether a file backs
 * a mapping). */
typedef struct {
    uintptr_t lo, hi, readable_hi;
    uint64_t data;
} mt_span;

/* In both functions S holds N spans sorted by lo, not overlapping. */

/* The span holding ADDR, or NULL. */
const mt_span *mt_span_of(const mt_span *s, size_t n, uintptr_t addr);

/* mt_leak_region_fn's answer (leak_scan.h) for ADDR, from S. */
int mt_span_region(const mt_span *s, size_t n, uintptr_t addr, uintptr_t *end);

#endif
