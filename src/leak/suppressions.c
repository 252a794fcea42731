/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* LeakSanitizer's suppressions (suppressions.h): parsing lines in place and
 * matching patterns, with no heap, so that the process itself can use it at
 * exit and memtrace-symbolize alike. */
#include "leak/suppressions.h"

#include "base/output.h"

#include <stdio.h>
#include <string.h>

size_t mt_suppressions_parse(const char *name, char *text, size_t len, mt_suppression *out)
{
    size_t n = 0;
    unsigned lineno = 0;
    for (char *line = text; line <= text + len;) {
        char *end = strchr(line, '\n');
        if (!end)
            end = text + len;
        *end = '\0';
        lineno++;
        while (*line == ' ' || *line == '\t')
            line++;
        size_t l = strlen(line);
        while (l && (line[l - 1] == ' ' || line[l - 1] == '\t' || line[l - 1] == '\r'))
            line[--l] = '\0';
        if (l && line[0] != '#') {
            const char *p = strncmp(line, "leak:", 5) == 0 ? line + 5 : NULL;
            while (p && (*p == ' ' || *p == '\t'))
                p++;
            if (!p || !*p || strlen(p) >= MT_PATTERN_MAX) {
                mt_warn("MEMTRACE_SUPPRESSIONS: %s:%u: not a \"leak:PATTERN\" line (PATTERN "
                        "1 to %d bytes); ignored",
                        name, lineno, MT_PATTERN_MAX - 1);
            } else if (n == MT_SUPPRESSIONS_MAX) {
                mt_warn("MEMTRACE_SUPPRESSIONS: %s:%u: more than %d suppressions; ignored", name,
                        lineno, MT_SUPPRESSIONS_MAX);
            } else {
                snprintf(out[n].pattern, MT_PATTERN_MAX, "%s", p);
                out[n].bytes = out[n].blocks = 0;
                n++;
            }
        }
        line = end + 1;
    }
    return n;
}

/* Whether pattern T matches S from its start: to S's end when END. */
static bool glob_at(const char *t, const char *s, bool end)
{
    for (;; t++, s++) {
        if (*t == '\0')
            return !end || *s == '\0';
        if (*t == '$' && t[1] == '\0' && end)
            return *s == '\0';
        if (*t == '*') {
            while (*t == '*')
                t++;
            for (const char *k = s;; k++) {
                if (glob_at(t, k, end))
                    return true;
                if (*k == '\0')
                    return false;
            }
        }
        if (*s == '\0' || *t != *s)
            return false;
    }
}

bool mt_suppression_matches(const char *pattern, const char *s)
{
    if (!s)
        return false;
    size_t len = strlen(pattern);
    bool end = len > 0 && pattern[len - 1] == '$';
    if (*pattern == '^')
        return glob_at(pattern + 1, s, end);
    for (const char *k = s;; k++) {
        if (glob_at(pattern, k, end))
            return true;
        if (*k == '\0')
            return false;
    }
}

size_t mt_suppressions_match_rows(const mt_suppression *s, size_t found, const mt_frame *rows,
                                  unsigned count)
{
    for (unsigned r = 0; r < count; r++)
        for (size_t i = 0; i < found; i++)
            if (mt_suppression_matches(s[i].pattern, rows[r].function) ||
                mt_suppression_matches(s[i].pattern, rows[r].file) ||
                mt_suppression_matches(s[i].pattern, rows[r].module))
                found = i;
    return found;
}
