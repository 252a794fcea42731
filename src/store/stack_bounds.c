/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The bounds of the calling thread's stack, learned once per thread from
 * /proc/self/maps with raw system calls (no libc lock, no allocation, no
 * cancellation point), for unwinders that must never read outside it. */
#include "store/stack_bounds.h"

#include "base/common.h"
#include "base/os.h"

#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

MT_TLS uintptr_t mt_stack_low;  /* lowest address of this thread's stack */
MT_TLS uintptr_t mt_stack_base; /* highest address of this thread's stack */
MT_TLS int mt_stack_known;      /* 1 known, -1 could not be found */

/* A mapping the search below may pick: its bounds as a stack. */
typedef struct {
    bool found;
    uintptr_t low, base;
} candidate;

typedef struct {
    uintptr_t sp, tls;
    candidate at_sp, at_tls, main_stack;
    bool sp_in_tls_mapping;
} search;

/* One mapping of /proc/self/maps: notes it if it holds SP, this thread's
 * TLS, or is the main thread's "[stack]". That one grows down into the gap
 * below it, which no other mapping may take (the kernel keeps its guard
 * gap), so its low bound is the end of the mapping before it, PREV_END. */
static void note_mapping(const mt_os_mapping *m, search *q, uintptr_t prev_end)
{
    bool grows = m->path_len == 7 && memcmp(m->path, "[stack]", 7) == 0;
    candidate c = { true, grows ? prev_end : m->start, m->end };
    if (q->sp >= m->start && q->sp < m->end)
        q->at_sp = c;
    if (q->tls >= m->start && q->tls < m->end) {
        q->at_tls = c;
        q->sp_in_tls_mapping = q->sp >= m->start && q->sp < m->end;
    }
    if (grows)
        q->main_stack = c;
}

/* Learns this thread's stack from its maps, with system calls only.
 * pthread_getattr_np would take the thread's lock and fopen (allocating),
 * and the capture may run inside that very call (Rust's std asks for its
 * stack bounds first thing; design notes, trap 10). Raw system calls are
 * not cancellation points either.
 *
 * The mapping holding SP is the stack, unless SP is on some other stack
 * (a fiber's, an alternate signal stack) at the thread's first capture:
 * then the thread's own is the main thread's "[stack]", or, for a thread
 * glibc created, the mapping holding its TLS (glibc places a thread's TLS
 * at the top of its stack mapping). Were SP's mapping kept, every later
 * capture on the real stack would be handed to libunwind. */
void mt_stack_find(uintptr_t sp)
{
    mt_stack_known = -1;
    /* The calling thread's view (mt_os_maps_open_self): threads may still
     * be started after main has called pthread_exit. */
    int fd = mt_os_maps_open_self();
    if (fd < 0)
        return;
    search q = { .sp = sp, .tls = (uintptr_t)&mt_stack_known };
    char buf[4096];
    mt_os_maps maps;
    mt_os_maps_fd(&maps, fd, buf, sizeof buf);
    mt_os_mapping m;
    uintptr_t prev_end = 0;
    while (mt_os_maps_next(&maps, &m)) {
        note_mapping(&m, &q, prev_end);
        prev_end = m.end;
    }
    syscall(SYS_close, fd);
    bool main_thread = syscall(SYS_gettid) == syscall(SYS_getpid);
    const candidate *c = &q.at_sp;
    bool sp_on_own = q.sp_in_tls_mapping ||
                     (q.main_stack.found && sp >= q.main_stack.low && sp < q.main_stack.base);
    if (!sp_on_own) {
        if (main_thread && q.main_stack.found)
            c = &q.main_stack;
        else if (!main_thread && q.at_tls.found)
            c = &q.at_tls;
    }
    if (!c->found)
        return;
    mt_stack_low = c->low;
    mt_stack_base = c->base;
    mt_stack_known = 1;
}
