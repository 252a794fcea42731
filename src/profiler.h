/* The profiler build's reporting (profiler.c: periodic top sites, exit
 * report, folded files); in the tracer build profiler_off.c, which only
 * checks the settings. The build picks one of the two files. */
#ifndef MT_PROFILER_H
#define MT_PROFILER_H

#include "output.h"

#include <stdbool.h>

/* Called once, at the end of memtrace's initialisation, outside any lock,
 * with the thread's re-entrancy flag clear. */
void mt_profiler_start(void);

/* Where the reports made at exit go (the leak check's too): the file
 * MEMTRACE_OUTPUT names in the profiler build, memtrace's stderr
 * (mt_err_fd) otherwise. *OWN: close with mt_report_close. */
void mt_report_open(mt_out *o, bool *own);
void mt_report_close(mt_out *o, bool own);

#endif
