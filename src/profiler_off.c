/* The tracer build's stand-in for profiler.c: no reports, but the
 * profiler's settings are still checked (a bad value warns whichever
 * library is preloaded) and memtrace_report says where reports come from. */
#include "profiler.h"

#include "common.h"
#include "config.h"
#include "output.h"
#include "pprof_out.h"

#include "../include/memtrace.h"

void mt_profiler_start(void)
{
    mt_profiler_config ignored;
    mt_config_profiler(&ignored);
    mt_pprof_out_start(false);
}

void mt_report_open(mt_out *o, bool *own)
{
    *own = false;
    mt_out_init(o, mt_err_fd());
}

void mt_report_close(mt_out *o, bool own)
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
    mt_warn("memtrace_report: reports are made by the profiler build, "
            "libmemtrace-profiler.so; this is libmemtrace.so");
}
