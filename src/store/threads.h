/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Thread registry: memtrace's small thread numbers mapped to the kernel's
 * thread id and the name the program gave the thread (pthread_setname_np,
 * prctl(PR_SET_NAME)).
 * Kept in memtrace's own mapping so a debugger can read it from a core file
 * (layout published by descriptor.c). */
#ifndef MT_THREADS_H
#define MT_THREADS_H

#include "base/atomic.h"
#include "base/common.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define MT_THREAD_NAME 16 /* bytes, with the terminating NUL, as in the kernel */

/* A registered thread's slot: one cache line, so that the allocation
 * numbers the thread hands itself on every allocation (seq_next) are on a
 * line no other thread writes. */
typedef struct {
    uint32_t tid; /* kernel thread id; 0 = slot never used */
    uint32_t reserved;
    uint64_t self;             /* pthread_self() of the thread, to find it by pthread_t */
    char name[MT_THREAD_NAME]; /* "" until the program names the thread */
    /* The thread's batch of allocation numbers (malloc.c's next_seq):
     * seq_next to seq_end - 1 are its to hand out, while seq_epoch is
     * mt_seq_epoch's value; 0, 0 before its first batch. Written by the
     * thread only; read by the counts (mt_threads_seq_highest, the reader
     * outside the process). */
    mt_atomic(uint64_t) seq_next, seq_end;
    uint32_t seq_epoch;
} __attribute__((aligned(MT_CACHELINE))) mt_thread_info;

/* Allocation numbers a thread takes at a time from the shared counter. */
#define MT_SEQ_BATCH 64

/* The calling thread's slot, set when it registers; NULL until then, and
 * for good for a thread the registry has no slot for (numbered past
 * MT_THREADS_MAX, or the registry not mapped): such a thread takes its
 * allocation numbers one at a time. */
extern MT_TLS mt_thread_info *mt_thread_slot MT_HIDDEN;

/* Read on every allocation, written when every thread must give up its
 * batch of allocation numbers (mt_seq_new_epoch); with the count of the
 * numbers so given up, unused. A line of its own. */
typedef struct {
    mt_atomic(uint32_t) epoch;
    mt_atomic(uint64_t) discarded;
} __attribute__((aligned(MT_CACHELINE))) mt_seq_state;
extern mt_seq_state mt_seq MT_HIDDEN;

/* Every thread takes a new batch before its next allocation number: no
 * number handed out from now on by a thread that sees this is below the
 * shared counter's value read before the call. */
void mt_seq_new_epoch(void);

/* The highest allocation number the registered threads have handed out
 * (0 for none); UINT64_MAX when a thread without a slot may have handed
 * out others (the caller then takes the shared counter's bound). Exact
 * when no thread is allocating. */
uint64_t mt_threads_seq_highest(void);

/* Slots in the registry; threads numbered beyond it are not registered. */
#define MT_THREADS_MAX 65536

/* Thread numbers are at most MT_THREAD_NUMBER_MAX: the live table entry
 * keeps them in MT_THREAD_NUMBER_BITS bits, below the block's kind
 * (live_table.h), and the readers outside the process mask them so
 * (descriptor's entry_thread_bits). */
#define MT_THREAD_NUMBER_BITS 24
#define MT_THREAD_NUMBER_MAX ((1u << MT_THREAD_NUMBER_BITS) - 1)

/* The number of the Nth thread (N from 1): N itself up to
 * MT_THREAD_NUMBER_MAX; past it, the numbers above the registry's slots
 * (MT_THREADS_MAX + 1 .. MT_THREAD_NUMBER_MAX) again, in a cycle. So a
 * number never reaches the kind bits and is never 0, numbers 1 to
 * MT_THREADS_MAX (registered, named) are each one thread's for good, and
 * two threads that run 16,711,679 thread starts apart may share one of
 * the others. */
static inline uint32_t mt_thread_wrap(uint64_t n)
{
    if (MT_LIKELY(n <= MT_THREAD_NUMBER_MAX))
        return (uint32_t)n;
    return MT_THREADS_MAX + 1 +
           (uint32_t)((n - MT_THREADS_MAX - 1) % (MT_THREAD_NUMBER_MAX - MT_THREADS_MAX));
}

/* memtrace's number for the calling thread (main thread = 1), given on its
 * first recorded allocation (mt_thread_wrap of how many threads asked
 * before it, plus one), which also registers the thread (no heap, no
 * lock). */
extern MT_TLS uint32_t mt_thread_self MT_HIDDEN;
uint32_t mt_thread_number_new(void);

static inline uint32_t mt_thread_number(void)
{
    uint32_t n = mt_thread_self;
    return MT_LIKELY(n != 0) ? n : mt_thread_number_new();
}

/* The name of thread NUMBER, or NULL if it has none. The string lives in the
 * registry and may change if the program renames the thread. */
const char *mt_threads_name(uint32_t number);

/* pthread_setname_np, interposed: forwards to the real one and, on success,
 * records NAME for THREAD. */
int mt_pthread_setname(pthread_t thread, const char *name);

/* prctl, interposed (its five arguments as the kernel takes them): forwards
 * to the real one, and on a successful PR_SET_NAME records the name (A2)
 * for the calling thread. Return value and errno are the real prctl's. */
int mt_prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4, unsigned long a5);

/* For the unit tests: the next thread to ask is the (N + 1)th. */
void mt_threads_skip_to(uint64_t n);

/* memtrace's own threads (the profiler's reporter), by kernel thread id:
 * they run only memtrace's code and hold no pointer of the program, so the
 * leak check neither stops nor scans them, and the reporter can tell when
 * no thread of the program is left. At most MT_OWN_THREADS at a time;
 * mt_threads_own_add returns false when full. Lock-free. */
#define MT_OWN_THREADS 4
bool mt_threads_own_add(int tid);
void mt_threads_own_remove(int tid);
bool mt_threads_is_own(int tid);

/* For the state descriptor: the registry (NULL if it could not be mapped)
 * and the address of the highest registered number; and mt_seq.discarded's. */
const uint64_t *mt_seq_discarded(void);
const mt_thread_info *mt_threads_registry(void);
const uint32_t *mt_threads_highest(void);

#endif
