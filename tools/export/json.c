/* `memtrace export --json`: the timeline JSON that `memtrace view` reads
 * (the contract: /work/wt/briefs/json.md, kept in doc/design.adoc's
 * recording section). Every number an integer, times in ns from the
 * run's start; frames innermost first, one per row of an inline chain. */
#include "rec.h"

#include <inttypes.h>
#include <string.h>

static void str(FILE *f, const char *s)
{
    if (!s) {
        fputs("null", f);
        return;
    }
    putc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            putc(*p, f);
    }
    putc('"', f);
}

static void series(FILE *f, const uint64_t *v, size_t n)
{
    putc('[', f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, i ? ",%" PRIu64 : "%" PRIu64, v[i]);
    putc(']', f);
}

static void frame(FILE *f, const rec_file *r, uint64_t addr, const rec_row *row, bool *first)
{
    const rec_module *m = rec_module_of(r, addr);
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
    putc('}', f);
    *first = false;
}

static void site(FILE *f, const rec_file *r, const rec_timeline *t, const rec_site *s)
{
    fprintf(f, "{\"id\":%" PRIu32 ",\"frames\":[", s->id);
    const rec_stack *st = rec_stack_of(r, s->id);
    bool first = true;
    for (unsigned i = 0; st && i < st->depth; i++) {
        const rec_symbol *sym = rec_symbol_of(r, st->frames[i]);
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

bool export_json(const rec_file *r, const rec_timeline *t, FILE *f)
{
    fputs("{\"memtrace_timeline\":1,\"command\":", f);
    str(f, r->command ? r->command : "");
    fprintf(f, ",\"pid\":%" PRIu64 ",\"start_unix_ns\":%" PRIu64 ",\"duration_ns\":%" PRIu64
               ",\"truncated\":%s,\n\"times_ns\":",
            r->pid, r->start_unix_ns, r->duration_ns, r->truncated ? "true" : "false");
    series(f, t->times, t->nsamples);
    fputs(",\n\"total\":{\"bytes\":", f);
    series(f, t->bytes, t->nsamples);
    fputs(",\"blocks\":", f);
    series(f, t->blocks, t->nsamples);
    fputs(",\"allocations\":", f);
    series(f, t->allocs, t->nsamples);
    fprintf(f, "},\n\"peak\":{\"time_ns\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"blocks\":%" PRIu64 "},\n",
            t->peak_time, t->peak_bytes, t->peak_blocks);
    fprintf(f,
            "\"totals\":{\"allocations\":%" PRIu64 ",\"frees\":%" PRIu64
            ",\"allocated_bytes\":%" PRIu64 ",\"leaked_bytes\":%" PRIu64 ",\"leaked_blocks\":%" PRIu64
            ",\"temporary\":%" PRIu64 "},\n\"sites\":[",
            t->allocations, t->frees, t->allocated_bytes, t->leaked_bytes, t->leaked_blocks,
            t->temporary);
    for (size_t i = 0; i < t->nsites; i++) {
        fputs(i ? ",\n" : "\n", f);
        site(f, r, t, &t->sites[i]);
    }
    fputs("]}\n", f);
    return !ferror(f);
}
