/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The tracer build's stand-in for the profiler's files: no reports, but the
 * profiler's settings are still checked (a bad value warns whichever
 * library is preloaded), one line says which of them have no effect here,
 * and memtrace_report says where reports come from. */
#include "profile/profiler.h"

#include "base/common.h"
#include "base/config.h"
#include "base/output.h"
#include "capture/state.h"
#include "report/pprof_out.h"

#define MEMTRACE_DEFINING /* the definitions: no weak declarations, no macros */
#include "../../include/memtrace.h"

#include <stdlib.h>
#include <string.h>

/* Once per process (each exec'd program is one; a forked child inherits
 * its parent's start): one line naming the profiler's settings that are
 * set, if any (settings.def's PROFILER rows, in its order). */
void mt_profiler_start(void)
{
    mt_profiler_config ignored;
    mt_config_profiler(&ignored);
    char names[256];
    size_t len = 0, n = 0;
    for (int id = 0; id < MT_SETTINGS; id++) {
        const char *name = mt_setting_name(id);
        if (!mt_setting_profiler_only(id) || !mt_setting_env(name))
            continue;
        size_t add = strlen(name);
        if (len + add + 3 > sizeof names)
            break;
        if (n++) {
            memcpy(names + len, ", ", 2);
            len += 2;
        }
        memcpy(names + len, name, add);
        len += add;
    }
    names[len] = '\0';
    if (n)
        mt_warn("%s: %s in libmemtrace.so, the tracer; preload libmemtrace-profiler.so "
                "for the profiler's reports",
                names, n == 1 ? "a profiler setting, no effect" : "profiler settings, no effect");
    mt_pprof_out_start(false);
}

bool mt_profiler_pause(void)
{
    return false; /* the tracer starts no thread */
}

void mt_profiler_resume(void) {}

void mt_profiler_output_open(mt_out *o, bool *own)
{
    *own = false;
    mt_out_init(o, mt_err_fd());
}

void mt_profiler_output_close(mt_out *o, bool own)
{
    (void)own;
    mt_out_flush(o);
}

void mt_profiler_set_leak_hooks(const mt_leak_hooks *hooks)
{
    (void)hooks; /* no exit report to mark */
}

MT_EXPORT void memtrace_report(void)
{
    void (*owner)(void) = mt_owner("memtrace_report");
    if (owner) {
        owner();
        return;
    }
    mt_warn("memtrace_report: reports are made by the profiler build, "
            "libmemtrace-profiler.so; this is libmemtrace.so");
}
