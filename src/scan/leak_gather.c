/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The roots gathered from a source (leak_gather.h). */
#include "scan/leak_gather.h"

static mt_leak_roots_sink sink_of(const mt_leak_source *src, const mt_leak_gathered *g)
{
    return (mt_leak_roots_sink){ g->add_root, g->ctx, src->read, src->ctx };
}

struct modules_arg {
    const mt_leak_source *src;
    mt_leak_gathered *g;
};

static void add_module(void *arg, const mt_leak_module *m)
{
    struct modules_arg *a = arg;
    if (m->kind == MT_LEAK_MODULE_MEMTRACE)
        return; /* no roots (leak_roots.h), whether its headers are known or not */
    if (!m->ph) {
        a->g->modules_unread++;
        return;
    }
    if (m->linker) {
        for (size_t i = 0; i < m->nph; i++) {
            const Elf64_Phdr *ph = &m->ph[i];
            if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
                a->g->linker_lo = m->bias + ph->p_vaddr;
                a->g->linker_hi = a->g->linker_lo + ph->p_memsz;
            }
        }
    }
    mt_leak_roots_sink s = sink_of(a->src, a->g);
    mt_leak_roots_module(&s, m->bias, m->ph, m->nph, m->kind);
}

void mt_leak_gather_modules(const mt_leak_source *src, mt_leak_gathered *g)
{
    struct modules_arg a = { src, g };
    src->modules(src->ctx, add_module, &a);
}

void mt_leak_gather_threads(const mt_leak_source *src, mt_leak_gathered *g)
{
    mt_leak_roots_sink s = sink_of(src, g);
    for (size_t i = 0; i < src->nthreads; i++) {
        mt_leak_thread t;
        if (!src->thread(src->ctx, i, &t))
            continue;
        uintptr_t tls_low = mt_leak_roots_tls(&s, t.tp, src->tcb_size, src->static_size, t.tid);
        if (t.sp) {
            uintptr_t lo = 0, hi = 0;
            if (!src->mapping(src->ctx, t.sp, &lo, &hi))
                lo = hi = 0; /* the reader refuses it: counted unreadable */
            /* the descriptor and static TLS at the mapping's top are TLS,
             * scanned once, as TLS */
            if (tls_low > t.sp && tls_low < hi)
                hi = tls_low;
            mt_leak_roots_stack(&s, t.sp, t.red_zone, lo, hi, t.tid);
        }
        uintptr_t w;
        for (size_t k = 0; src->reg(src->ctx, i, k, &w); k++)
            g->add_word(g->ctx, w);
    }
}

void mt_leak_gather_linker_blocks(const mt_leak_source *src, const mt_leak_gathered *g,
                                  mt_leak_block *b, size_t n)
{
    static struct {
        uint32_t id;
        int8_t linker; /* -1: not known */
    } cache[4096];
    if (!g->linker_hi)
        return;
    for (size_t i = 0; i < 4096; i++)
        cache[i].linker = -1;
    for (size_t i = 0; i < n; i++) {
        size_t c = b[i].stack & 4095;
        if (cache[c].linker < 0 || cache[c].id != b[i].stack) {
            const uintptr_t *frames;
            unsigned depth = src->stack(src->ctx, b[i].stack, &frames);
            cache[c].id = b[i].stack;
            cache[c].linker =
                mt_leak_roots_linker_block(frames, depth, g->linker_lo, g->linker_hi) ? 1 : 0;
        }
        if (cache[c].linker)
            b[i].flags |= MT_LEAK_FLAG_ROOT;
    }
}

void mt_leak_gather_heap(const mt_leak_source *src, const mt_leak_gathered *g, mt_leak_block *b,
                         size_t n)
{
    mt_leak_sort(b, n);
    mt_leak_roots_sink s = sink_of(src, g);
    uintptr_t lo = 0, hi = 0;
    for (size_t i = 0; i < n; i++) {
        if (b[i].ptr >= lo && b[i].ptr < hi)
            continue; /* this mapping was given already */
        if (!src->mapping(src->ctx, b[i].ptr, &lo, &hi)) {
            lo = hi = 0;
            continue;
        }
        mt_leak_roots_heap(&s, lo, hi, b, n);
    }
}
