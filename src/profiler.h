/* The profiler build's reporting (periodic top sites, exit report). In the
 * tracer build these do nothing; profiler.c holds both versions. */
#ifndef MT_PROFILER_H
#define MT_PROFILER_H

/* Called once, at the end of memtrace's initialisation, outside any lock,
 * with the thread's re-entrancy flag clear. */
void mt_profiler_start(void);

#endif
