/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What memtrace-symbolize's request readers share (the files of tools/): a request
 * it cannot read ends the program with status 3, memory it cannot get
 * with status 2, each with one "memtrace-symbolize:" line on stderr; the
 * helper (gdb/memtrace_gdb/symbolizer.py) reports that line. */
#ifndef MT_TOOLS_REQUEST_H
#define MT_TOOLS_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* LINE (a request line, its newline included) cannot be read: exits 3. */
_Noreturn void mt_request_malformed(const char *line);

/* P, an array of N items of ITEM bytes, with room for one more: arrays
 * double at powers of two (P NULL when N is 0). Exits 2 when out of
 * memory. */
void *mt_request_grow(void *p, size_t n, size_t item);

/* N hex numbers from *P into V, advancing *P past them; false if there
 * are fewer. */
bool mt_request_numbers(const char **p, uint64_t *v, unsigned n);

#endif
