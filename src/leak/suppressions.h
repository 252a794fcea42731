/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* LeakSanitizer's suppressions format, for the leak check at exit and (to
 * come) the gdb command through memtrace-symbolize: `leak:PATTERN` lines,
 * `#` comments, PATTERN matched against the function, source file and
 * module of a symbolized frame. No heap, no file access: the caller reads
 * the file and owns the arrays. */
#ifndef MT_SUPPRESSIONS_H
#define MT_SUPPRESSIONS_H

#include "symbolize/symbolize.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MT_SUPPRESSIONS_MAX 256
#define MT_PATTERN_MAX 256 /* bytes, with the terminating NUL */

typedef struct {
    char pattern[MT_PATTERN_MAX];
    uint64_t bytes, blocks; /* what it took: the caller counts */
} mt_suppression;

/* Parses TEXT (LEN bytes followed by a NUL; modified in place) into
 * OUT[0..MT_SUPPRESSIONS_MAX) with zero counts and returns how many. A line
 * that is neither blank, a comment nor `leak:PATTERN` (PATTERN 1 to
 * MT_PATTERN_MAX - 1 bytes), and any beyond the maximum, gets one warning
 * "memtrace: MEMTRACE_SUPPRESSIONS: NAME:LINE: ..." and is ignored. */
size_t mt_suppressions_parse(const char *name, char *text, size_t len, mt_suppression *out);

/* LeakSanitizer's template match: '*' matches any run of characters; the
 * pattern matches anywhere in S unless it starts with '^' (at the start)
 * or ends with '$' (at the end). False for a NULL S. */
bool mt_suppression_matches(const char *pattern, const char *s);

/* The index of the first of S[0..FOUND) whose pattern matches the
 * function, file or module of one of ROWS[0..COUNT); FOUND if none. Pass
 * the number of suppressions first, then the result of the previous call,
 * frame after frame: the earliest suppression of the file wins. */
size_t mt_suppressions_match_rows(const mt_suppression *s, size_t found, const mt_frame *rows,
                                  unsigned count);

#endif
