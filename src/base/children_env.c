/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* MEMTRACE_CHILDREN's answer and the per-process file names children
 * find (children_env.h). No heap, no lock: environ is edited in place. */
#include "base/children_env.h"

#include "base/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

bool mt_children_off(void)
{
    const char *s = mt_setting_env("MEMTRACE_CHILDREN");
    if (!s || !*s)
        return false;
    char *end;
    long v = strtol(s, &end, 10);
    while (*end == ' ' || *end == '\t')
        end++;
    return *end == '\0' && v == 0;
}

static bool has_pid(const char *template)
{
    for (const char *p = template; *p; p++)
        if (p[0] == '%' && p[1]) {
            if (p[1] == 'p')
                return true;
            p++;
        }
    return false;
}

const char *mt_children_pass_on(const char *name, const char *template, char *env, size_t size)
{
    if (!template || has_pid(template))
        return template;
    size_t len = strlen(name);
    int n = snprintf(env, size, "%s=%s.%%p", name, template);
    if (n < 0 || (size_t)n >= size)
        return template;
    if (!mt_children_off())
        for (char **e = environ; e && *e; e++)
            if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
                *e = env;
    return env + len + 1;
}
