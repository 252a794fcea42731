/* Profiler reporting. Compiled in both builds; only the profiler build
 * (-DMEMTRACE_PROFILER) reports anything. */
#include "profiler.h"

#include "common.h"

#ifdef MEMTRACE_PROFILER

void mt_profiler_start(void)
{
}

#else

void mt_profiler_start(void)
{
}

#endif
