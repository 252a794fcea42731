/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `memtrace export --json`: the timeline JSON that `memtrace view` reads
 * (the contract: doc/design.adoc's timeline section). Every number an integer, times in ns from the
 * run's start; frames innermost first, one per row of an inline chain. */
#include "timeline.h"

#include "base/json_str.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void str(FILE *f, const char *s)
{
    if (!s) {
        fputs("null", f);
        return;
    }
    putc('"', f);
    const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s);
    char buf[MT_JSON_CHAR_MAX];
    while (p < end)
        /* cppcheck-suppress legacyUninitvar ; mt_json_char writes BUF before it is read */
        fwrite(buf, 1, mt_json_char(&p, end, buf), f);
    putc('"', f);
}

static void series(FILE *f, const uint64_t *v, size_t n)
{
    putc('[', f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, i ? ",%" PRIu64 : "%" PRIu64, v[i]);
    putc(']', f);
}

static void frame(FILE *f, const tl_file *r, uint64_t addr, const tl_row *row, bool *first)
{
    const tl_module *m = tl_module_of(r, addr);
    fprintf(f, "%s{\"address\":\"0x%" PRIx64 "\",\"function\":", *first ? "" : ",", addr);
    str(f, row ? row->function : NULL);
    fputs(",\"file\":", f);
    str(f, row ? row->file : NULL);
    if (row && row->line)
        fprintf(f, ",\"line\":%" PRIu64, row->line);
    else
        fputs(",\"line\":null", f);
    fputs(",\"module\":", f);
    str(f, m ? m->path : NULL);
    /* The address in its module's file (as addr2line takes it): the same in
     * every run of one build, where the address moves with ASLR; what the
     * page names an unsymbolized frame by, and matches two runs by. */
    if (m)
        fprintf(f, ",\"offset\":\"0x%" PRIx64 "\"", addr - m->bias);
    putc('}', f);
    *first = false;
}

static void site(FILE *f, const tl_file *r, const tl_timeline *t, const tl_site *s)
{
    fprintf(f, "{\"id\":%" PRIu32 ",\"frames\":[", s->id);
    const tl_stack *st = tl_stack_of(r, s->id);
    bool first = true;
    for (unsigned i = 0; st && i < st->depth; i++) {
        const tl_symbol *sym = tl_symbol_of(r, st->frames[i]);
        if (!sym || !sym->nrows)
            frame(f, r, st->frames[i], NULL, &first);
        for (unsigned k = 0; sym && k < sym->nrows; k++)
            frame(f, r, st->frames[i], &sym->rows[k], &first);
    }
    fprintf(f,
            "],\"allocations\":%" PRIu64 ",\"allocated_bytes\":%" PRIu64 ",\"peak_bytes\":%" PRIu64
            ",\"leaked_bytes\":%" PRIu64 ",\"leaked_blocks\":%" PRIu64 ",\"temporary\":%" PRIu64,
            s->allocations, s->allocated_bytes, s->peak_bytes, s->leaked_bytes, s->leaked_blocks,
            s->temporary);
    if (s->bytes) {
        fputs(",\"bytes\":", f);
        series(f, s->bytes, t->nsamples);
    }
    putc('}', f);
}

/* The sites written: the first TL_SITES_PER_RANK by each ranking the
 * page shows (peak bytes, leaked, allocated, temporary), not all: a large
 * program's thousands of deep stacks would make the file hundreds of MB. */
typedef uint64_t rank_key(const tl_site *s);
static uint64_t by_peak_key(const tl_site *s)
{
    return s->peak_bytes;
}
static uint64_t by_leak_key(const tl_site *s)
{
    return s->leaked_bytes;
}
static uint64_t by_alloc_key(const tl_site *s)
{
    return s->allocated_bytes;
}
static uint64_t by_temp_key(const tl_site *s)
{
    return s->temporary;
}

static const tl_site *sort_sites;
static rank_key *sort_key;

static int by_key(const void *a, const void *b)
{
    uint64_t x = sort_key(&sort_sites[*(const size_t *)a]),
             y = sort_key(&sort_sites[*(const size_t *)b]);
    if (x != y)
        return x > y ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static bool *chosen_sites(const tl_timeline *t)
{
    static rank_key *const keys[] = { by_peak_key, by_leak_key, by_alloc_key, by_temp_key };
    bool *chosen = calloc(t->nsites + 1, sizeof *chosen);
    size_t *order = tl_xrealloc(NULL, (t->nsites + 1) * sizeof *order);
    if (!chosen)
        die_oom();
    sort_sites = t->sites;
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        for (size_t i = 0; i < t->nsites; i++)
            order[i] = i;
        sort_key = keys[k];
        qsort(order, t->nsites, sizeof *order, by_key);
        for (size_t i = 0; i < t->nsites && i < TL_SITES_PER_RANK; i++)
            if (keys[k](&t->sites[order[i]]) || k == 0)
                chosen[order[i]] = true;
    }
    free(order);
    return chosen;
}

bool export_json(const tl_file *r, const tl_timeline *t, FILE *f)
{
    fputs("{\"memtrace_timeline\":1,\"command\":", f);
    str(f, r->command ? r->command : "");
    fprintf(f,
            ",\"pid\":%" PRIu64 ",\"start_unix_ns\":%" PRIu64 ",\"duration_ns\":%" PRIu64
            ",\"truncated\":%s,\"sample_rate\":%" PRIu64 ",\n\"times_ns\":",
            r->pid, r->start_unix_ns, r->duration_ns, r->truncated ? "true" : "false",
            r->sample_rate);
    series(f, t->times, t->nsamples);
    fputs(",\n\"total\":{\"bytes\":", f);
    series(f, t->bytes, t->nsamples);
    fputs(",\"blocks\":", f);
    series(f, t->blocks, t->nsamples);
    fputs(",\"allocations\":", f);
    series(f, t->allocs, t->nsamples);
    fprintf(f,
            "},\n\"peak\":{\"time_ns\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"blocks\":%" PRIu64
            "},\n",
            t->peak_time, t->peak_bytes, t->peak_blocks);
    fprintf(f,
            "\"totals\":{\"allocations\":%" PRIu64 ",\"frees\":%" PRIu64
            ",\"allocated_bytes\":%" PRIu64 ",\"leaked_bytes\":%" PRIu64
            ",\"leaked_blocks\":%" PRIu64 ",\"temporary\":%" PRIu64
            "},\n\"sites_total\":%zu,\"sites\":[",
            t->allocations, t->frees, t->allocated_bytes, t->leaked_bytes, t->leaked_blocks,
            t->temporary, t->nsites);
    bool *chosen = chosen_sites(t), first = true;
    for (size_t i = 0; i < t->nsites; i++) {
        if (!chosen[i])
            continue;
        fputs(first ? "\n" : ",\n", f);
        first = false;
        site(f, r, t, &t->sites[i]);
    }
    free(chosen);
    fputs("]}\n", f);
    return !ferror(f);
}
