/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libdw running out of memory, in the traced process. */
#include "symbolize/sym_internal.h"

#include "base/common.h"
#include "base/output.h"

#include <setjmp.h>
#include <stdlib.h>

/* libdw's memory blocks (libdw_alloc) call their Dwarf's out-of-memory
 * handler when malloc fails, and the default one ends the process
 * ("libdw: Cannot allocate memory", status 1). In the traced process malloc
 * is memtrace's internal heap, which a program under ulimit -v can leave
 * short. Every Dwarf the symbolizer reads gets oom_jump instead, which
 * jumps back to the entry that called into libdw (mt_sym_frames,
 * mt_sym_tail_calls, through sym_libdw_call; oom_target); from then on
 * libdw, whose state a jump out of it leaves unknown, is never called again
 * (libdw_spent): frames are module+offset, said once. An allocation failure
 * outside those entries gets the default handler.
 *
 * These three are the process's, not a state's: libdw's handler takes no
 * argument that could name one, and what a jump out of libdw leaves
 * unknown is libdw itself, whichever state called it. */
static MT_TLS jmp_buf *oom_target;
static Dwarf_OOM default_oom;
static bool libdw_spent;

static void __attribute__((noreturn)) oom_jump(void)
{
    if (oom_target)
        longjmp(*oom_target, 1);
    if (default_oom)
        default_oom();
    abort();
}

/* MOD's Dwarf (if it has one) with oom_jump as its handler. */
void sym_guard_module(Dwfl_Module *mod)
{
    Dwarf_Addr bias;
    Dwarf *dw = dwfl_module_getdwarf(mod, &bias);
    if (!dw)
        return;
    Dwarf_OOM old = dwarf_new_oom_handler(dw, oom_jump);
    if (old != oom_jump)
        default_oom = old;
}

void mt_sym_stop_libdw(const char *why)
{
    if (!libdw_spent)
        mt_warn("%s; frames are module+offset from now on", why);
    libdw_spent = true;
}

static void spend_libdw(void)
{
    mt_sym_stop_libdw("libdw ran out of memory (memtrace's internal heap is full)");
}

bool sym_libdw_spent(void)
{
    return libdw_spent;
}

bool sym_libdw_call(void (*fn)(void *), void *arg)
{
    jmp_buf here;
    jmp_buf *outer = oom_target;
    bool ok = true;
    if (setjmp(here) == 0) {
        oom_target = &here;
        fn(arg);
    } else {
        spend_libdw();
        ok = false;
    }
    oom_target = outer;
    return ok;
}
