/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The recording's start and end (record_end.h). The end runs at exit,
 * registered after the program's start-up handlers (the constructor), so
 * it comes after the program's own exit handlers and before the
 * profiler's exit report and the leak check, which memtrace registered
 * earlier. The frames are symbolized here, in the process, each distinct
 * address once (rows as the formatter gets them, without the frames tail
 * calls left off the stack); a recording cut short has none, and reads by
 * address and module. */
#include "runtime/record_end.h"

#include "base/os.h"
#include "base/reentry.h"
#include "store/internal_heap.h"
#include "symbolize/symbolize.h"
#include "timeline/timeline.h"

#include <stdlib.h>

static mt_sym_state *sym;

static void put_rows(const mt_frame *rows, unsigned n, void *ctx)
{
    mt_tl_row r[32];
    if (n > 32)
        n = 32;
    for (unsigned i = 0; i < n; i++)
        r[i] = (mt_tl_row){ rows[i].function, rows[i].file, rows[i].file ? rows[i].line : 0 };
    mt_tl_put_symbol(NULL, *(const uintptr_t *)ctx, r, n);
}

static void symbolize_one(uintptr_t addr, void *ctx)
{
    (void)ctx;
    mt_sym_frames(sym, true, addr, put_rows, &addr);
}

static void finish(void *arg)
{
    (void)arg;
    /* No symbolizing with less internal-heap headroom than a sixteenth of
     * the heap, as the reports: libdw does not survive every failed
     * allocation. */
    bool locked = mt_iheap_headroom() >= mt_iheap_capacity() / 16 && mt_sym_self_lock();
    sym = locked ? mt_sym_self() : NULL;
    if (mt_sym_raw(sym))
        sym = NULL; /* MEMTRACE_SYMBOLIZE=later: memtrace export symbolizes */
    mt_tl_finish(sym ? symbolize_one : NULL);
    if (locked)
        mt_sym_self_unlock();
}

static void finish_at_exit(void)
{
    if (!mt_tl_to_finish()) /* a forked child's, or ended already */
        return;
    int was = mt_enter();
    mt_os_on_stack(&mt_own_stack, finish, NULL);
    mt_leave(was);
}

void mt_record_file_start(void)
{
    if (!mt_tl_armed())
        return;
    int was = mt_enter();
    mt_tl_start();
    if (mt_tl_armed())
        atexit(finish_at_exit);
    mt_leave(was);
}
