/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the program tells the leak check (memtrace_ignore_object,
 * memtrace_register_root_region): the blocks it must hold as roots and
 * the regions it must scan as roots, in two fixed tables of memtrace's
 * own (.bss: memtrace's module is no root, so they hold nothing). Read by
 * every check the process makes (leak_check.c), before the threads are
 * stopped. Each call takes one lock for a bounded copy; no heap. */
#ifndef MT_LEAK_CLIENT_H
#define MT_LEAK_CLIENT_H

#include "scan/leak_scan.h"
#include "store/live_table.h"

#include <stddef.h>
#include <stdint.h>

/* The live block holding P is held from now on, for its life. NULL, or
 * why nothing changed (no live block holds P; the table is full), for one
 * "memtrace:" line. */
const char *mt_leak_ignore(uintptr_t p);

/* [P, P + SIZE) is a root from now on: NULL, or why nothing changed (an
 * empty or wrapping region, the table full). *OVERLAP is set to a region
 * registered before that overlaps it (then {0, 0}: none). */
const char *mt_leak_root_add(uintptr_t p, size_t size, uintptr_t overlap[2]);
/* The region registered as exactly [P, P + SIZE) is one no more: NULL, or
 * why nothing changed. */
const char *mt_leak_root_remove(uintptr_t p, size_t size);

/* The registered regions, as roots (MT_ROOT_OTHER), into ADD(CTX, root). */
void mt_leak_client_roots(void (*add)(void *ctx, const mt_leak_root *root), void *ctx);

/* For the blocks B[0..N), sorted by ptr (mt_leak_sort): the ones the
 * program ignored get MT_LEAK_FLAG_ROOT; entries of blocks since freed
 * (another allocation number at the address, or none) leave the table.
 * Safe while the other threads are stopped anywhere: every wait is
 * bounded (the table's lock; mt_live_find's). */
void mt_leak_client_ignored(mt_leak_block *b, size_t n);

/* Where the two tables live, for the descriptor (runtime/descriptor.h's
 * client_* words), so that a check made out of the process (gdb, a core)
 * honours them too: each table an array of MAX entries of two uint64_t
 * words ({address, allocation number} for an ignored block, {lo, hi}
 * for a root region), its count a uint64_t at *COUNT, the entries below
 * it in use. */
typedef struct {
    uintptr_t ignored, ignored_count, roots, roots_count;
    size_t ignored_max, roots_max;
} mt_leak_client_layout;
void mt_leak_client_describe(mt_leak_client_layout *l);

#endif
