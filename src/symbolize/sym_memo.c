/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What a symbolizer state keeps (struct mt_sym_state, sym_internal.h):
 * its frame cache, the memos the other files of src/symbolize/ keep their
 * indexes in, and dropping them all. Every file that keeps something in the
 * state calls here; this file calls none of them. */
#include "symbolize/sym_internal.h"

#include "base/common.h"

#include <stdlib.h>

/* ------------------------------------------------------------ caches */

static void memo_clear(struct memo *m)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->slot[i].value)
            (m->free_value ? m->free_value : free)(m->slot[i].value);
    free(m->slot);
    *m = (struct memo){ 0 };
}

void sym_clear_caches(struct mt_sym_state *st)
{
    struct memo *memos[] = { &st->cu_indexes, &st->fn_children, &st->cu_maps,   &st->file_names,
                             &st->tail_fns,   &st->tail_chains, &st->call_sites };
    for (size_t i = 0; i < sizeof memos / sizeof memos[0]; i++)
        memo_clear(memos[i]);
    free(st->cu_scratch);
    st->cu_scratch = NULL;
    free(st->call_site_scratch);
    st->call_site_scratch = NULL;
    for (size_t i = 0; i < st->cache_cap; i++)
        free(st->cache[i].rows);
    free(st->cache);
    st->cache = NULL;
    st->cache_count = st->cache_cap = 0;
}

void sym_end_dwfl(struct mt_sym_state *st, Dwfl *dwfl)
{
    /* Every Dwfl's end drops the caches: the function indexes are keyed by
     * addresses inside its debug data, which a later Dwfl's may reuse. */
    sym_clear_caches(st);
    if (dwfl == st->dwfl)
        st->hashed = false;
    dwfl_getmodules(dwfl, sym_drop_symtab, NULL, 0);
    dwfl_end(dwfl);
}

static size_t cache_slot(uintptr_t ret, size_t cap)
{
    return (size_t)((ret * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

const struct frames_entry *sym_cache_find(const struct mt_sym_state *st, uintptr_t ret)
{
    for (size_t i = st->cache_cap ? cache_slot(ret, st->cache_cap) : 0;
         st->cache_cap && st->cache[i].ret; i = (i + 1) & (st->cache_cap - 1))
        if (st->cache[i].ret == ret)
            return &st->cache[i];
    return NULL;
}

void sym_cache_add(struct mt_sym_state *st, uintptr_t ret, mt_frame *rows, unsigned n)
{
    if ((st->cache_count + 1) * 2 > st->cache_cap) {
        size_t cap = st->cache_cap ? st->cache_cap * 2 : 1024;
        struct frames_entry *t = calloc(cap, sizeof *t);
        if (!t) {
            free(rows);
            return;
        }
        for (size_t i = 0; i < st->cache_cap; i++) {
            if (!st->cache[i].ret)
                continue;
            size_t j = cache_slot(st->cache[i].ret, cap);
            while (t[j].ret)
                j = (j + 1) & (cap - 1);
            t[j] = st->cache[i];
        }
        free(st->cache);
        st->cache = t;
        st->cache_cap = cap;
    }
    size_t i = cache_slot(ret, st->cache_cap);
    while (st->cache[i].ret)
        i = (i + 1) & (st->cache_cap - 1);
    st->cache[i] = (struct frames_entry){ ret, n, rows };
    st->cache_count++;
    MT_ASSERT(st->cache_count * 2 <= st->cache_cap && n > 0);
}

/* ------------------------------------------------------------ memos */

static size_t memo_hash(uintptr_t a, uintptr_t b, size_t cap)
{
    return (size_t)(((a ^ (b * 0xff51afd7ed558ccdull)) * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

void *sym_memo_find(const struct memo *m, uintptr_t a, uintptr_t b)
{
    for (size_t i = m->cap ? memo_hash(a, b, m->cap) : 0; m->cap && m->slot[i].value;
         i = (i + 1) & (m->cap - 1))
        if (m->slot[i].a == a && m->slot[i].b == b)
            return m->slot[i].value;
    return NULL;
}

bool sym_memo_add(struct memo *m, uintptr_t a, uintptr_t b, void *value, void (*free_value)(void *))
{
    MT_ASSERT(m->count == 0 || m->free_value == free_value);
    m->free_value = free_value;
    if ((m->count + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 256;
        struct memo_slot *s = calloc(cap, sizeof *s);
        if (!s)
            return false;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->slot[i].value)
                continue;
            size_t j = memo_hash(m->slot[i].a, m->slot[i].b, cap);
            while (s[j].value)
                j = (j + 1) & (cap - 1);
            s[j] = m->slot[i];
        }
        free(m->slot);
        m->slot = s;
        m->cap = cap;
    }
    size_t i = memo_hash(a, b, m->cap);
    while (m->slot[i].value)
        i = (i + 1) & (m->cap - 1);
    m->slot[i] = (struct memo_slot){ a, b, value };
    m->count++;
    MT_ASSERT(m->count * 2 <= m->cap);
    return true;
}
