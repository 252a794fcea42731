/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `memtrace EXPR` of an address in no heap block, for gdb and cores
 * (target_internal.h): a symbol's bytes (as gdb's `info symbol`), a
 * thread's stack frame (numbered as gdb's `bt`) or thread-local storage,
 * or else the mapping holding it. One line (mt_fmt_where_line). */
#include "target_internal.h"
#include "target_mem.h"

#include "report/format.h"

#include <string.h>

/* The red zone a leaf may use below its stack pointer (x86-64's ABI). */
#define RED_ZONE 128

/* ADDR in a thread's TLS or stack, from the roots gathered for it (the
 * stack's region ends below the TLS block, mt_leak_gather_threads). */
static bool thread_at(mt_sym_state *dwfl, const struct request *q, const struct roots *r,
                      uintptr_t addr, mt_fmt_where *w, char *fn, size_t size)
{
    for (size_t k = 0; k < r->nregions; k++) {
        const mt_leak_root *g = &r->regions[k];
        if (g->kind != MT_ROOT_TLS || addr < g->lo || addr >= g->hi)
            continue;
        for (size_t i = 0; i < q->nthreads; i++)
            if (q->threads[i].tid == g->thread) {
                *w = (mt_fmt_where){ .kind = MT_WHERE_TLS,
                                     .number = q->threads[i].number,
                                     .tid = q->threads[i].tid };
                return true;
            }
    }
    for (size_t i = 0; i < q->nthreads; i++) {
        const struct thread *t = &q->threads[i];
        uintptr_t lo, hi = 0;
        if (!t->sp || !mt_target_mapping(t->sp, &lo, &hi) || addr < lo || addr >= hi)
            continue;
        for (size_t k = 0; k < r->nregions; k++) /* the stack's own end */
            if (r->regions[k].kind == MT_ROOT_STACK && r->regions[k].thread == t->tid &&
                r->regions[k].hi > t->sp && r->regions[k].hi <= hi)
                hi = r->regions[k].hi;
        if (addr >= hi)
            continue;
        *w = (mt_fmt_where){ .kind = MT_WHERE_STACK,
                             .number = t->number,
                             .tid = t->tid,
                             .frame = -1 };
        if (addr + RED_ZONE < t->sp) {
            w->below_sp = true;
            return true;
        }
        const struct frame *f = mt_target_frame_of(dwfl, t, addr, fn, size);
        if (f) {
            w->frame = (int)f->level;
            w->frame_function = fn;
        }
        return true;
    }
    return false;
}

/* ADDR in no thread's stack or TLS: a symbol's, or a mapping's. */
static mt_fmt_where elsewhere(mt_sym_state *dwfl, uintptr_t addr, mt_sym_data *d,
                              mt_target_mapped *m)
{
    if (mt_sym_data_at(mt_sym_dwfl(dwfl), addr, d))
        return (mt_fmt_where){ .kind = MT_WHERE_SYMBOL,
                               .offset = d->offset,
                               .symbol = d->name,
                               .module = d->module,
                               .section = d->section,
                               .function = d->function };
    if (mt_target_mapped_at(addr, m))
        return (mt_fmt_where){ .kind = MT_WHERE_MAPPING,
                               .lo = m->lo,
                               .hi = m->hi,
                               .path = m->path,
                               .file = m->file,
                               .offset = m->offset };
    return (mt_fmt_where){ .kind = MT_WHERE_NONE }; /* a core: as the process had it */
}

bool mt_target_where(mt_sym_state *dwfl, const struct request *q, const struct roots *r,
                     mt_out *out)
{
    mt_fmt_where w;
    char fn[256];
    mt_sym_data d;
    mt_target_mapped m;
    if (!thread_at(dwfl, q, r, q->arg, &w, fn, sizeof fn))
        w = elsewhere(dwfl, q->arg, &d, &m);
    mt_fmt_where_line(out, &w);
    return true;
}
