/* The report of a fault on a guard page (runtime/guard_signal.c), in the
 * heap errors' format: a first line naming the kind, which scripts parse,
 *   "memtrace: heap-buffer-overflow: ACCESS at offset K, B bytes past the
 *    end of a N-byte block at START"
 *   "memtrace: heap-buffer-underflow: ACCESS at offset -K, K bytes before
 *    a N-byte block at START"
 *   "memtrace: use-after-free ACCESS: at offset K of a freed N-byte block
 *    at START"
 * (ACCESS: "read" or "write" as the fault's error code says, "access"
 * when it does not; B counts the first byte past the end as 1); then
 * "  detected by thread T at:" and the access's stack, "  freed by thread
 * T (after allocation #S) at:" and the free's stack for a freed block,
 * "  allocated by thread T (allocation #S) at:" and the allocation's; last
 * one line saying where the fault goes on to. */
#ifndef MT_GUARD_REPORT_H
#define MT_GUARD_REPORT_H

#include "capture/guard.h"

#include <stdbool.h>
#include <stdint.h>

enum { MT_ACCESS_UNKNOWN, MT_ACCESS_READ, MT_ACCESS_WRITE };

typedef struct {
    uintptr_t addr;          /* the faulting address */
    int access;              /* MT_ACCESS_* */
    mt_guard_block block;    /* the block it belongs to (guard.h) */
    bool has_alloc;          /* a live block's record was found */
    uint64_t alloc_seq;      /* a live block's record */
    uint32_t alloc_thread;
    mt_stack_id alloc_stack;
    const uintptr_t *frames; /* the access's stack, innermost first */
    unsigned depth;
    const char *then;        /* where the fault goes on to, one line */
} mt_guard_fault;

/* Writes F's report on memtrace's stderr (mt_err_fd). Call inside
 * memtrace (mt_enter). */
void mt_guard_report(const mt_guard_fault *f);

#endif
