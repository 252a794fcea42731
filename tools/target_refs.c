/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `memtrace refs` of another process or a core file (target_internal.h):
 * every root word, register and live block's word pointing into one
 * block, each named as gdb would (a global's symbol, a frame's function,
 * a thread's register, a block's allocation). */
#include "target_internal.h"
#include "target_mem.h"

#include "report/format.h"

#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>


/* The name of global ADDR: "SYMBOL+OFF" or "SYMBOL" and its module. */
static void global_name(Dwfl *dwfl, uintptr_t addr, char *out, size_t size)
{
    Dwfl_Module *mod = mt_sym_addrmodule(dwfl, addr);
    const char *modname = mod ? dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
                              : NULL;
    const char *base = modname ? strrchr(modname, '/') : NULL;
    base = base ? base + 1 : modname ? modname : "?";
    GElf_Off off = 0;
    GElf_Sym sym;
    const char *name = mod ? dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL) : NULL;
    if (name && off)
        snprintf(out, size, "global %s+%" PRIu64 " in %s", name, (uint64_t)off, base);
    else if (name)
        snprintf(out, size, "global %s in %s", name, base);
    else
        snprintf(out, size, "a global word of %s with no symbol", base);
}

static const struct thread *thread_of(const struct request *q, uint32_t tid)
{
    for (size_t i = 0; i < q->nthreads; i++)
        if (q->threads[i].tid == tid)
            return &q->threads[i];
    return NULL;
}

struct frame_row {
    unsigned outer; /* rows from the last one */
    char *out;
    size_t size;
};

/* mt_frames_fn: row n - 1 - OUTER's function (the last row: the function
 * the others are inlined into), as every frame line names it. */
static void frame_row_name(const mt_frame *rows, unsigned n, void *ctx)
{
    struct frame_row *o = ctx;
    if (o->outer < n && rows[n - 1 - o->outer].function)
        snprintf(o->out, o->size, "%s", rows[n - 1 - o->outer].function);
}

const struct frame *mt_target_frame_of(mt_sym_state *dwfl, const struct thread *t, uintptr_t addr,
                                       char *name, size_t size)
{
    const struct frame *f = NULL;
    for (size_t i = 0; i < t->nframes; i++)
        if (t->frames[i].sp <= addr)
            f = &t->frames[i];
    if (!f && t->nframes)
        f = &t->frames[0]; /* the red zone below the innermost frame */
    if (f) {
        name[0] = 0;
        if (f->ret)
            mt_sym_frames(dwfl, false, f->ret, frame_row_name,
                          &(struct frame_row){ f->outer, name, size });
        if (!name[0])
            snprintf(name, size, "%s", f->function[0] ? f->function : "??");
    }
    return f;
}

/* "frame #N FUNCTION" of thread T holding stack slot ADDR
 * (mt_target_frame_of), or "no frame known". */
static void frame_name(mt_sym_state *dwfl, const struct thread *t, uintptr_t addr, char *out,
                       size_t size)
{
    char name[256];
    const struct frame *f = mt_target_frame_of(dwfl, t, addr, name, sizeof name);
    if (f)
        snprintf(out, size, "frame #%u %s", f->level, name);
    else
        snprintf(out, size, "no frame known");
}

struct refs {
    mt_sym_state *dwfl;
    const struct request *q;
    uintptr_t lo, hi; /* the block: [lo, hi), or just lo for a 0-byte one */
    uint64_t found;
    mt_out *out;
    const mt_leak_block *blocks; /* all of them, sorted: what a heap root skips */
    size_t nblocks;
};

static bool points_in(const struct refs *s, uint64_t w)
{
    return w == s->lo || (w > s->lo && w < s->hi);
}

/* find_in over [LO, HI), 8-byte aligned and readable. */
static void find_in_readable(struct refs *s, uintptr_t lo, uintptr_t hi,
                             void (*fn)(struct refs *, uintptr_t at, uint64_t word, const void *),
                             const void *arg)
{
    for (uintptr_t a = lo; a < hi;) {
        size_t len = hi - a < MT_TARGET_READ_MAX ? hi - a : MT_TARGET_READ_MAX;
        const uint64_t *w = mt_target_read(NULL, a, len);
        uint64_t hits[64];
        uintptr_t where[64];
        size_t nh = 0, k = 0;
        for (; w && k < len / 8 && nh < 64; k++) {
            if (points_in(s, w[k])) {
                hits[nh] = w[k];
                where[nh++] = a + 8 * k;
            }
        }
        /* FN may read the target (a stack) and so reuse the buffer: the
         * hits are copied out first, and past 64 of them the rest of the
         * piece is read again from the word after the last one. */
        for (size_t h = 0; h < nh; h++)
            fn(s, where[h], hits[h], arg);
        a += w ? 8 * k : len;
    }
}

/* Calls FN for every aligned word of [LO, HI) pointing into the block. */
static void find_in(struct refs *s, uintptr_t lo, uintptr_t hi,
                    void (*fn)(struct refs *, uintptr_t at, uint64_t word, const void *),
                    const void *arg)
{
    lo = (lo + 7) & ~(uintptr_t)7;
    hi &= ~(uintptr_t)7;
    for (uintptr_t a = lo; a < hi;) {
        /* Only the readable pieces, as the scan: a range is never walked
         * chunk by chunk through memory the target does not have. */
        uintptr_t end = 0;
        int kind = mt_target_region(NULL, a, &end);
        uintptr_t stop = end > a && end < hi ? end & ~(uintptr_t)7 : hi;
        if (kind != MT_MEM_READABLE || stop <= a) {
            a = stop > a ? stop : hi;
            a = (a + 7) & ~(uintptr_t)7;
            continue;
        }
        find_in_readable(s, a, stop, fn, arg);
        a = stop;
    }
}

static void ref_region(struct refs *s, uintptr_t at, uint64_t word, const void *arg)
{
    const mt_leak_root *root = arg;
    char what[600];
    const struct thread *t = thread_of(s->q, root->thread);
    if (root->kind == MT_ROOT_GLOBALS) {
        global_name(mt_sym_dwfl(s->dwfl), at, what, sizeof what);
        if (root->starts_only && word != s->lo) /* leak_roots.h */
            snprintf(what + strlen(what), sizeof what - strlen(what),
                     " (the allocator's data: holds nothing but by a block's start)");
    } else if (root->kind == MT_ROOT_STACK && t) {
        char frame[300];
        frame_name(s->dwfl, t, at, frame, sizeof frame);
        snprintf(what, sizeof what, "thread %u (LWP %u) stack, %s", t->number, t->tid, frame);
    } else if (t) {
        snprintf(what, sizeof what, "thread %u (LWP %u) thread-local storage", t->number, t->tid);
    } else if (root->outside_blocks) {
        if (mt_leak_find(s->blocks, s->nblocks, at) >= 0)
            return; /* a known block's word: listed as that block's */
        snprintf(what, sizeof what,
                 "the allocator's heap outside the blocks memtrace knows "
                 "(allocated before the attach, or freed)%s",
                 word != s->lo ? " (holds nothing but by a block's start)" : "");
    } else {
        snprintf(what, sizeof what, "a root");
    }
    mt_fmt_ref_place(s->out, what, at, word - s->lo);
    s->found++;
}

/* mt_stack_writer: CTX is the symbolizer (mt_sym_state). */
static void put_stack(void *ctx, mt_out *out, const uintptr_t *frames, unsigned depth)
{
    mt_fmt_stack(out, ctx, false, frames, depth);
}

struct block_arg {
    const mt_leak_block *b;
};

static void ref_block(struct refs *s, uintptr_t at, uint64_t word, const void *arg)
{
    const mt_leak_block *b = ((const struct block_arg *)arg)->b;
    const uintptr_t *frames;
    unsigned depth = mt_target_stack(s->q, b->stack, &frames);
    mt_fmt_stack_ref st = { frames, depth };
    mt_fmt_ref_block(s->out, b->ptr, b->size, at - b->ptr, word - s->lo, b->class, put_stack,
                     s->dwfl, &st);
    s->found++;
}

bool mt_target_refs(mt_sym_state *dwfl, const struct request *q, const mt_leak_block *b, size_t n,
                    const struct roots *r, mt_out *out)
{
    ptrdiff_t i = mt_leak_find(b, n, q->arg);
    if (i < 0) {
        mt_out_printf(out, "memtrace: refs: no live block holds %#" PRIx64 "\n", q->arg);
        return false;
    }
    struct refs s = { dwfl, q, b[i].ptr, b[i].ptr + b[i].size, 0, out, b, n };
    mt_fmt_refs_begin(out, b[i].ptr, b[i].size, q->arg - b[i].ptr, b[i].class);
    for (size_t k = 0; k < r->nregions; k++)
        find_in(&s, r->regions[k].lo, r->regions[k].hi, ref_region, &r->regions[k]);
    for (size_t t = 0; t < q->nthreads; t++) {
        const struct thread *th = &q->threads[t];
        for (size_t k = 0; k < th->nregs; k++) {
            if (points_in(&s, th->regs[k].value)) {
                mt_fmt_ref_register(out, th->number, th->tid, th->regs[k].name,
                                    th->regs[k].value - s.lo);
                s.found++;
            }
        }
    }
    for (size_t k = 0; k < n; k++) {
        struct block_arg a = { &b[k] };
        find_in(&s, b[k].ptr, b[k].ptr + b[k].size, ref_block, &a);
    }
    mt_fmt_refs_end(out, s.found);
    return true;
}
