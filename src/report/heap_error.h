/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Heap errors: the one report every detector uses
 * (mt_heap_error_report, declared in base/upcalls.h since the hot path's
 * checks call it: redzones and quarantine in capture/, the guard pages'
 * fault handler), the exported memtrace_on_error(), the check of every
 * live block and quarantined block (at exit, memtrace_check()) and the
 * exit status after an error (MEMTRACE_ERROR_EXITCODE). */
#ifndef MT_HEAP_ERROR_H
#define MT_HEAP_ERROR_H

#include "base/upcalls.h"
#include "report/error_record.h"

#include <stdint.h>

/* Exported, and called after every heap error report (before
 * MEMTRACE_ON_ERROR=abort's abort): `break memtrace_on_error` in gdb
 * stops at the moment of detection. Does nothing. */
void memtrace_on_error(void);

/* After any error report (a heap error's, bad_free.c's), with mt_busy
 * clear: counted for the exit status (MEMTRACE_ERROR_EXITCODE; a forked
 * child starts from none), then memtrace_on_error() and MEMTRACE_ON_ERROR
 * (abort). */
void mt_error_reported(void);

/* The address of the count of errors reported so far, heap errors and
 * bad frees (mt_error_reported), for the state descriptor's heap_errors. */
const uint64_t *mt_heap_errors_counter(void);

/* The ring of the last reports' facts (error_record.h) and the address of
 * the count of records written, for the state descriptor. */
const void *mt_error_records(void);
const uint64_t *mt_error_records_count(void);

/* Keeps the facts of a report just written (error_record.h): called by
 * the reports of heap errors and bad frees, before mt_error_reported. R's
 * number is set here. */
void mt_error_record_keep(mt_error_record *r);

/* In a forked child (the fork's child handler): no heap error reported
 * yet. The child's exit status and the count say only what was found in
 * the child; the parent's errors were the parent's to report. */
void mt_heap_errors_fork_child(void);

/* Checks every live block's redzone and every quarantined block memtrace
 * can read safely, reporting each damaged one (WHERE: "exit",
 * "memtrace_check"); returns how many it reported. Called outside
 * memtrace (mt_busy clear). */
unsigned long mt_heap_check_all(const char *where);

/* At start-up (runtime/startup.c), before the leak check registers its
 * exit handler: the handler that makes the exit status
 * MEMTRACE_ERROR_EXITCODE after a heap error (it runs after the leak
 * check's, whose status wins when leaks were found). */
void mt_heap_errors_register_status(void);
/* After the leak check registers: the check of every block at exit (it
 * runs before the leak check's handler, which may end the process). */
void mt_heap_errors_register_check(void);

#endif
