/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `memtrace symbolize` (memtrace-symbolize --text): text written with
 * MEMTRACE_SYMBOLIZE=later written back as MEMTRACE_SYMBOLIZE=now writes
 * it, by the library's own symbolizer and formatter. */
#ifndef MT_TEXT_SYMBOLIZE_H
#define MT_TEXT_SYMBOLIZE_H

/* Reads the NFILES files FILES (standard input when NFILES is 0) and
 * writes them to standard output, every raw frame replaced (see there).
 * Returns the exit status: 0, or 1 when no input could be read. */
int mt_text_symbolize(int nfiles, char **files);

#endif
