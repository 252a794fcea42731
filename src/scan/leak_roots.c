/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The roots' policy (leak_roots.h). */
#include "scan/leak_roots.h"

#include <string.h>

static void add(const mt_leak_roots_sink *s, uintptr_t lo, uintptr_t hi, int kind, uint32_t tid,
                bool starts_only)
{
    if (hi <= lo)
        return;
    mt_leak_root r = { .lo = lo, .hi = hi, .kind = kind, .thread = tid, .starts_only = starts_only };
    s->add(s->ctx, &r);
}

void mt_leak_roots_module(const mt_leak_roots_sink *s, uintptr_t bias, const Elf64_Phdr *ph,
                          size_t n, int kind)
{
    if (kind == MT_LEAK_MODULE_MEMTRACE)
        return;
    for (size_t i = 0; i < n; i++)
        if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_W))
            add(s, bias + ph[i].p_vaddr, bias + ph[i].p_vaddr + ph[i].p_memsz, MT_ROOT_GLOBALS, 0,
                kind == MT_LEAK_MODULE_ALLOCATOR);
}

#define RED_ZONE 128

void mt_leak_roots_stack(const mt_leak_roots_sink *s, uintptr_t sp, bool red_zone, uintptr_t map_lo,
                         uintptr_t map_hi, uint32_t tid)
{
    uintptr_t lo = red_zone && sp >= RED_ZONE ? sp - RED_ZONE : sp;
    if (!map_hi) {
        add(s, lo, sp + 8, MT_ROOT_STACK, tid, false);
        return;
    }
    add(s, lo >= map_lo ? lo : map_lo, map_hi, MT_ROOT_STACK, tid, false);
}

static bool read_word(const mt_leak_roots_sink *s, uintptr_t addr, uintptr_t *v)
{
    const void *p = s->read(s->read_ctx, addr, sizeof *v);
    if (p)
        memcpy(v, p, sizeof *v);
    return p != NULL;
}

uintptr_t mt_leak_roots_tls(const mt_leak_roots_sink *s, uintptr_t tp, size_t tcb_size,
                            size_t static_size, uint32_t tid)
{
    if (!tp)
        return 0;
    uintptr_t low = tp, dtv = 0, len = 0;
    const size_t w = sizeof(uintptr_t);
    if (read_word(s, tp + w, &dtv) && dtv && read_word(s, dtv - 2 * w, &len) && len <= 65536) {
        add(s, dtv - 2 * w, dtv + (len + 1) * 2 * w, MT_ROOT_TLS, tid, false);
        /* Entries of two words from dtv[1] on: the first word is the
         * module's TLS block. */
        for (uintptr_t i = 0; !static_size && i < len; i++) {
            uintptr_t e;
            if (read_word(s, dtv + (i + 1) * 2 * w, &e) && e < tp && e >= tp - (16u << 20) &&
                e < low)
                low = e;
        }
    }
    if (static_size)
        low = static_size > tcb_size ? tp + tcb_size - static_size : tp;
    add(s, low, tp + tcb_size, MT_ROOT_TLS, tid, false);
    return low;
}

bool mt_leak_roots_linker_block(const uintptr_t *frames, unsigned depth, uintptr_t lo, uintptr_t hi)
{
    return hi && depth && frames[0] >= lo && frames[0] < hi;
}

void mt_leak_roots_heap(const mt_leak_roots_sink *s, uintptr_t lo, uintptr_t hi,
                        const mt_leak_block *blocks, size_t n)
{
    size_t k = 0, top = n; /* the first block starting at or above LO */
    while (k < top) {
        size_t mid = k + (top - k) / 2;
        if (blocks[mid].ptr < lo)
            k = mid + 1;
        else
            top = mid;
    }
    if (k == n || blocks[k].ptr >= hi || hi <= lo)
        return;
    mt_leak_root r = { .lo = lo,
                       .hi = hi,
                       .kind = MT_ROOT_OTHER,
                       .starts_only = true,
                       .outside_blocks = true };
    s->add(s->ctx, &r);
}
