/* The profiler build's reporting (profiler.c: periodic top sites, exit
 * report, folded files); in the tracer build profiler_off.c, which only
 * checks the settings. The build picks one of the two files. */
#ifndef MT_PROFILER_H
#define MT_PROFILER_H

/* Called once, at the end of memtrace's initialisation, outside any lock,
 * with the thread's re-entrancy flag clear. */
void mt_profiler_start(void);

#endif
