/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The symbolizer's state (struct mt_sym_state, sym_internal.h): creation,
 * the caches it owns, and the process's default state.
 *
 * The default state, mt_sym_self's, is one static object of this file:
 * static so that the first symbolization needs no allocation for it (it can
 * come with memtrace's internal heap nearly full). Its Dwfl is created on
 * first use and re-read when the modules change; the state itself lives as
 * long as the process. It is used under self_lock only, taken with
 * mt_sym_self_lock by every caller in the library (reports, print_trace,
 * the profiler, the leak check). memtrace-symbolize never touches it: it
 * makes its own state with mt_sym_new. */
#include "symbolize/sym_internal.h"

#include "base/common.h"
#include "base/lock.h"

#include <stdlib.h>

static mt_lock self_lock = MT_LOCK_INIT;
static struct mt_sym_state self;

bool mt_sym_self_lock(void)
{
    return mt_lock_try_for(&self_lock, 20000000);
}

void mt_sym_self_unlock(void)
{
    mt_lock_release(&self_lock);
}

void mt_sym_set_unloaded_lookup(bool (*fn)(uintptr_t, mt_unloaded_module *),
                                unsigned long (*generation)(void))
{
    self.unloaded_lookup = fn;
    self.modules_generation = generation;
}

void mt_sym_self_later(void)
{
    self.raw = true; /* at start-up, before any report */
}

bool mt_sym_raw(const mt_sym_state *st)
{
    return st && st->raw;
}

mt_sym_state *mt_sym_self(void)
{
    struct mt_sym_state *st = &self;
    unsigned long generation = st->modules_generation ? st->modules_generation() : 0;
    if (st->raw) {
        /* A library may have been unloaded and another loaded at its
         * addresses: the raw rows cached go. */
        if (generation != st->generation)
            sym_clear_caches(st);
        st->generation = generation;
        return st;
    }
    /* The thread's thread-local storage of libdw and libelf allocated now,
     * before anything can fail: the memtrace libraries dlopen them, and
     * glibc ends the process when the block of a dlopened library cannot
     * be allocated on a thread's first access (base/lazy_libs.h). Each
     * call reads the thread's error code, which its callers took already. */
    (void)dwarf_errno();
    (void)elf_errno();
    if (st->dwfl && generation != st->generation && !sym_read_modules(st)) {
        sym_end_dwfl(st, st->dwfl);
        st->dwfl = NULL;
    }
    st->generation = generation;
    if (!st->dwfl) {
        st->dwfl = dwfl_begin(&sym_self_callbacks);
        if (st->dwfl && !sym_read_modules(st)) {
            dwfl_end(st->dwfl);
            st->dwfl = NULL;
        }
    }
    return st->dwfl ? st : NULL;
}

mt_sym_state *mt_sym_new(Dwfl *dwfl)
{
    struct mt_sym_state *st = calloc(1, sizeof *st);
    if (st)
        st->dwfl = dwfl;
    return st;
}

void mt_sym_free(mt_sym_state *st)
{
    if (!st)
        return;
    if (st->unloaded_dwfl)
        sym_end_dwfl(st, st->unloaded_dwfl);
    if (st->dwfl)
        sym_end_dwfl(st, st->dwfl);
    sym_clear_caches(st);
    free(st);
}

Dwfl *mt_sym_dwfl(const mt_sym_state *st)
{
    return st->dwfl;
}
