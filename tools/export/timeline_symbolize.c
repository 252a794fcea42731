/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The frames a timeline holds no symbols for (it was cut short: kill -9, a
 * full disk, so the end never symbolized them), symbolized afterwards from
 * the modules' files, as heaptrack does at analysis time: each module its
 * own offline Dwfl (a library unloaded and another loaded at its addresses
 * are two modules), read only if one of its frames needs it, and taken only
 * if the file at its path has the build ID the timeline wrote. The rows
 * come from memtrace's own symbolizer (src/symbolize), as the library's
 * would have. This runs out of the traced process, so libdwfl's standard
 * search is used, debuginfod included when DEBUGINFOD_URLS is set (design
 * notes, trap 13). A module that cannot be used gets one line; its frames
 * stay module+offset. */
#include "timeline.h"

#include "symbolize/symbolize.h"

#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    bool tried;
    mt_sym_state *st; /* NULL: the module cannot be symbolized */
} mod_sym;

/* M's symbolizer, made the first time it is asked for; NULL (said once)
 * when its file is gone or is another build. */
static mt_sym_state *module_state(const tl_file *r, const tl_module *m, mod_sym *ms)
{
    if (ms->tried)
        return ms->st;
    ms->tried = true;
    static bool read_debug_dir;
    if (!read_debug_dir) { /* MEMTRACE_DEBUG_DIR, as memtrace-symbolize reads it */
        read_debug_dir = true;
        mt_sym_read_debug_dir();
    }
    const char *why;
    Dwfl *dwfl = mt_sym_offline_module(m->path, m->path, m->bias, m->build_id, &why);
    if (!dwfl) {
        fprintf(stderr, "memtrace export: %s: %s; its frames in %s are module+offset\n", m->path,
                why, r->path);
        return NULL;
    }
    if (!(ms->st = mt_sym_new(dwfl)))
        die_oom();
    return ms->st;
}

static char *dup_or_null(const char *s)
{
    char *d = s ? strdup(s) : NULL;
    if (s && !d)
        die_oom();
    return d;
}

static void put_rows(const mt_frame *rows, unsigned n, void *ctx)
{
    tl_symbol *s = ctx;
    if (n > 32)
        n = 32;
    s->rows = tl_xrealloc(NULL, n * sizeof *s->rows);
    s->nrows = n;
    for (unsigned i = 0; i < n; i++)
        s->rows[i] = (tl_row){ dup_or_null(rows[i].function), dup_or_null(rows[i].file),
                               rows[i].file ? (uint64_t)rows[i].line : 0 };
}

static int by_addr(const void *a, const void *b)
{
    const tl_symbol *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int by_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void tl_symbolize(tl_file *r)
{
    /* Every distinct frame address, sorted. */
    size_t n = 0;
    for (size_t i = 0; i < r->nstacks; i++)
        n += r->stacks[i].depth;
    uint64_t *addrs = tl_xrealloc(NULL, (n ? n : 1) * sizeof *addrs);
    n = 0;
    for (size_t i = 0; i < r->nstacks; i++)
        for (unsigned k = 0; k < r->stacks[i].depth; k++)
            addrs[n++] = r->stacks[i].frames[k];
    qsort(addrs, n, sizeof *addrs, by_u64);
    mod_sym *ms = NULL;
    size_t nsyms = r->nsyms; /* the timeline's own, sorted by tl_read */
    for (size_t i = 0; i < n; i++) {
        uint64_t addr = addrs[i];
        tl_symbol key = { .addr = addr };
        if ((i && addrs[i - 1] == addr) || bsearch(&key, r->syms, nsyms, sizeof key, by_addr))
            continue;
        const tl_module *m = tl_module_of(r, addr);
        if (!m)
            continue;
        if (!ms && !(ms = calloc(r->nmods, sizeof *ms)))
            die_oom();
        mt_sym_state *st = module_state(r, m, &ms[m - r->mods]);
        if (!st)
            continue;
        tl_symbol s = { .addr = addr };
        mt_sym_frames(st, false, (uintptr_t)addr, put_rows, &s);
        if (!s.nrows)
            continue;
        if (r->nsyms == r->capsyms) {
            r->capsyms = r->capsyms ? 2 * r->capsyms : 1024;
            r->syms = tl_xrealloc(r->syms, r->capsyms * sizeof *r->syms);
        }
        r->syms[r->nsyms++] = s;
    }
    if (r->nsyms != nsyms)
        qsort(r->syms, r->nsyms, sizeof *r->syms, by_addr);
    if (ms)
        for (size_t i = 0; i < r->nmods; i++)
            mt_sym_free(ms[i].st);
    free(ms);
    free(addrs);
}
