/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The leak report (leak_report.h). Groups are made from runs of blocks
 * with one (stack, class), kept in one mmap'ed array, sorted definitely
 * lost first (see group_before); the summary counts every group, listed or
 * not. A definitely lost group carries what its blocks hold indirectly
 * (the scan's HELD fields), in valgrind's "T (D direct, I indirect)". */
#include "leak/leak_report.h"

#include <string.h>
#include <sys/mman.h>

struct group {
    uint64_t bytes, blocks;
    uint64_t held_bytes, held_blocks; /* DEFINITE: what its blocks hold indirectly */
    uint32_t stack, class;
    size_t suppressed_by; /* index, or SIZE_MAX */
};

typedef bool before_fn(const void *a, const void *b);

static void swap_items(char *a, char *b, size_t size)
{
    char t[64];
    memcpy(t, a, size);
    memcpy(a, b, size);
    memcpy(b, t, size);
}

/* Heapsort of N items of SIZE <= 64 bytes into BEFORE's order (BEFORE(A, B):
 * A goes first): no recursion, no heap. */
static void sort_items(void *base, size_t n, size_t size, before_fn *before)
{
    char *b = base;
    for (size_t start = n / 2, end = n; end > 1;) {
        size_t root;
        if (start > 0) {
            root = --start;
        } else {
            swap_items(b, b + (end - 1) * size, size);
            root = 0;
            end--;
        }
        for (;;) {
            size_t c = 2 * root + 1;
            if (c >= end)
                break;
            if (c + 1 < end && before(b + c * size, b + (c + 1) * size))
                c++;
            if (!before(b + root * size, b + c * size))
                break;
            swap_items(b + root * size, b + c * size, size);
            root = c;
        }
    }
}

static bool block_before(const void *a, const void *b)
{
    const mt_leak_block *x = a, *y = b;
    return x->stack != y->stack ? x->stack < y->stack : x->class < y->class;
}

void mt_leak_sort_by_stack(mt_leak_block *blocks, size_t n)
{
    sort_items(blocks, n, sizeof *blocks, block_before);
}

/* Definitely lost first, largest total (with what they hold) first, as
 * the groups that explain the others; then indirectly lost, then possibly
 * lost, each largest first; then by stack id, so the order is
 * reproducible. */
static unsigned class_rank(uint32_t class)
{
    return class == MT_LEAK_DEFINITE ? 0 : class == MT_LEAK_INDIRECT ? 1 : 2;
}

static bool group_before(const void *a, const void *b)
{
    const struct group *x = a, *y = b;
    if (x->class != y->class)
        return class_rank(x->class) < class_rank(y->class);
    if (x->bytes + x->held_bytes != y->bytes + y->held_bytes)
        return x->bytes + x->held_bytes > y->bytes + y->held_bytes;
    return x->stack < y->stack;
}

struct match_rows {
    const mt_suppression *s;
    size_t found; /* index of the first suppression matched so far */
};

static void match_rows(const mt_frame *rows, unsigned count, void *ctx)
{
    struct match_rows *m = ctx;
    m->found = mt_suppressions_match_rows(m->s, m->found, rows, count);
}

size_t mt_leak_match_frames(mt_sym_state *dwfl, bool refresh, const uintptr_t *frames,
                            unsigned depth, const mt_suppression *sup, size_t nsup)
{
    struct match_rows m = { sup, nsup };
    for (unsigned f = 0; dwfl && f < depth && m.found == nsup; f++)
        mt_sym_frames(dwfl, refresh, frames[f], match_rows, &m);
    return m.found;
}

uint64_t mt_leak_report(mt_out *o, const mt_leak_report_input *in)
{
    const mt_leak_block *blocks = in->blocks;
    /* At most one group per lost block: counted first, mapped once. */
    size_t ngroups = 0;
    for (size_t i = 0; i < in->nblocks; i++)
        if (blocks[i].class != MT_LEAK_REACHABLE &&
            (i == 0 || blocks[i - 1].stack != blocks[i].stack ||
             blocks[i - 1].class != blocks[i].class))
            ngroups++;
    size_t mapped = (ngroups ? ngroups : 1) * sizeof(struct group);
    struct group *g =
        mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    const char *incomplete = in->incomplete;
    if (g == MAP_FAILED) {
        g = NULL;
        if (!incomplete)
            incomplete = "memory for the report's groups ran out, the lost blocks are not listed";
    }
    size_t k = 0;
    for (size_t i = 0; g && i < in->nblocks; i++) {
        if (blocks[i].class == MT_LEAK_REACHABLE)
            continue;
        if (k == 0 || g[k - 1].stack != blocks[i].stack || g[k - 1].class != blocks[i].class)
            g[k++] = (struct group){ 0, 0, 0, 0, blocks[i].stack, blocks[i].class, SIZE_MAX };
        g[k - 1].bytes += blocks[i].size;
        g[k - 1].blocks++;
        g[k - 1].held_bytes += blocks[i].held_bytes;
        g[k - 1].held_blocks += blocks[i].held_blocks;
    }
    ngroups = k;
    sort_items(g, ngroups, sizeof *g, group_before);

    if (in->nsup && in->match) {
        for (size_t i = 0; i < ngroups; i++) {
            const uintptr_t *frames;
            unsigned depth = in->stack(in->ctx, g[i].stack, &frames);
            size_t found = in->match(in->ctx, frames, depth, in->sup, in->nsup);
            if (found < in->nsup) {
                g[i].suppressed_by = found;
                in->sup[found].bytes += g[i].bytes;
                in->sup[found].blocks += g[i].blocks;
            }
        }
    }

    uint64_t lost[MT_LEAK_CLASSES] = { 0 }, lost_blocks[MT_LEAK_CLASSES] = { 0 };
    size_t listed = 0, unlisted = 0;
    mt_fmt_leak_begin(o, in->pid, in->nblocks, in->nroots, in->totals->seconds);
    for (size_t i = 0; i < ngroups; i++) {
        if (g[i].suppressed_by != SIZE_MAX)
            continue;
        lost[g[i].class] += g[i].bytes;
        lost_blocks[g[i].class] += g[i].blocks;
        if (listed == in->max_groups) {
            unlisted++;
            continue;
        }
        listed++;
        const uintptr_t *frames;
        unsigned depth = in->stack(in->ctx, g[i].stack, &frames);
        mt_fmt_stack_ref s = { frames, depth };
        mt_fmt_leak_group(o, (int)g[i].class, g[i].bytes, g[i].blocks, g[i].held_bytes,
                          g[i].held_blocks, in->put_stack, in->ctx, &s);
    }
    if (unlisted)
        mt_fmt_leak_more(o, unlisted);
    for (size_t i = 0; i < in->nnotes; i++)
        mt_fmt_leak_thread_note(o, in->notes[i].tid, in->notes[i].what);
    const mt_leak_totals *t = in->totals;
    if (t->unreadable_root_bytes || t->unreadable_blocks)
        mt_fmt_leak_unreadable(o, t->unreadable_root_bytes, t->unreadable_blocks);
    if (t->damaged)
        mt_fmt_leak_damaged(o, t->damaged, t->first_damaged);
    if (incomplete)
        mt_fmt_leak_incomplete(o, incomplete);
    for (size_t i = 0; i < in->nsup; i++)
        if (in->sup[i].blocks)
            mt_fmt_leak_suppressed(o, in->sup[i].pattern, in->sup[i].bytes, in->sup[i].blocks);
    mt_fmt_leak_summary(o, lost[MT_LEAK_DEFINITE], lost_blocks[MT_LEAK_DEFINITE],
                        lost[MT_LEAK_INDIRECT], lost_blocks[MT_LEAK_INDIRECT],
                        lost[MT_LEAK_POSSIBLE], lost_blocks[MT_LEAK_POSSIBLE],
                        t->bytes[MT_LEAK_REACHABLE], t->blocks[MT_LEAK_REACHABLE]);
    if (g)
        munmap(g, mapped);
    return lost[MT_LEAK_DEFINITE] + lost[MT_LEAK_INDIRECT];
}
