/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Warming the symbolizer ahead of a report (mt_sym_warm): what symbolizing
 * a module's first address costs (its debug file opened and, when its
 * sections are compressed as Debian's -dbgsym and libc6-dbg files are, all
 * of them inflated by libdw; or its whole symbol table read and sorted
 * when it has no DWARF, as libLLVM) is paid once per module and dwarfs
 * the cost of every later address. Paying it before a report, from a
 * thread of memtrace's, leaves the report the per-address work only; the
 * rows it works out are the same, and are cached as any others. */
#include "symbolize/sym_internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The modules warmed, by their Dwfl and start address: a Dwfl made again
 * (the modules re-read) has its modules warmed again. At most WARM_MAX are
 * remembered; past that a module is warmed every time it is asked for,
 * which costs one cached lookup. Only the default state's holder (under
 * mt_sym_self_lock) calls here. */
#define WARM_MAX 512
static struct {
    const Dwfl *dwfl;
    Dwarf_Addr start;
} warmed[WARM_MAX];
static size_t nwarmed;

static bool is_warm(const Dwfl *dwfl, Dwarf_Addr start)
{
    for (size_t i = 0; i < nwarmed; i++)
        if (warmed[i].dwfl == dwfl && warmed[i].start == start)
            return true;
    return false;
}

static void no_rows(const mt_frame *rows, unsigned n, void *ctx)
{
    (void)rows;
    (void)n;
    (void)ctx;
}

unsigned mt_sym_warm(mt_sym_state *st, const uintptr_t *frames, unsigned n)
{
    unsigned loaded = 0;
    if (st->raw)
        return 0; /* MEMTRACE_SYMBOLIZE=later: nothing to warm */
    for (unsigned i = 0; i < n; i++) {
        uintptr_t ret = frames[i];
        if (ret == 0)
            continue;
        Dwfl *dwfl = st->dwfl;
        Dwfl_Module *mod = dwfl ? mt_sym_addrmodule(dwfl, ret - 1) : NULL;
        Dwarf_Addr start = 0;
        if (mod)
            dwfl_module_info(mod, NULL, &start, NULL, NULL, NULL, NULL, NULL);
        if (mod && is_warm(dwfl, start))
            continue;
        /* A module not known yet is looked for (REFRESH), as a report
         * would. */
        mt_sym_frames(st, true, ret, no_rows, NULL);
        loaded++;
        if (!mod || st->dwfl != dwfl)
            continue;
        if (nwarmed < WARM_MAX)
            warmed[nwarmed++] = (__typeof__(warmed[0])){ dwfl, start };
    }
    return loaded;
}
