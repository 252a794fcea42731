/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The files the profiler makes from its sites: MEMTRACE_FOLDED's folded
 * stacks (at exit and, from site.c's exact snapshot, at the peak) and
 * MEMTRACE_PPROF's profiles (pprof_out.c names and writes them). Under
 * mt_prof_report_lock, inside memtrace. */
#include "profile/prof_internal.h"

#include "base/os.h"
#include "symbolize/symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ folded */

/* Appends the folded line of the stack of DEPTH FRAMES and BYTES to O,
 * symbolized when the symbolizer can be had. */
static void put_folded(mt_out *o, const uintptr_t *frames, unsigned depth, uint64_t bytes)
{
    bool locked = mt_sym_self_lock();
    if (locked)
        mt_prof_heap_check();
    mt_sym_state *dwfl = locked ? mt_sym_self() : NULL;
    mt_fmt_folded_line(o, dwfl, frames, depth, bytes);
    if (locked)
        mt_sym_self_unlock();
}

struct folded_peak {
    mt_out *o;
    uint64_t sum; /* bytes written */
};

static void put_folded_peak(mt_stack_id id, const uintptr_t *frames, unsigned depth, uint64_t bytes,
                            uint64_t blocks, void *ctx)
{
    (void)id;
    (void)blocks;
    struct folded_peak *f = ctx;
    put_folded(f->o, frames, depth, bytes);
    f->sum += bytes;
}

const char *mt_prof_write_folded(const char *path, uint64_t *peak_sum)
{
    int fd = mt_prof_open_file(path, O_WRONLY | O_CREAT | O_TRUNC);
    if (fd < 0)
        return mt_prof_is_link(path) ? "a symbolic link; not followed" : strerror(errno);
    mt_out o;
    mt_out_init(&o, fd);
    if (peak_sum) {
        struct folded_peak f = { &o, 0 };
        mt_site_peak_foreach(put_folded_peak, &f);
        *peak_sum = f.sum;
    } else {
        for (size_t i = 0; i < mt_prof_nsites; i++) {
            const struct mt_prof_site *s = &mt_prof_sites[i];
            uint64_t bytes = mt_prof_live_bytes(&s->now);
            if (bytes)
                put_folded(&o, s->frames, s->depth, bytes);
        }
    }
    mt_out_flush(&o);
    if (close(fd) != 0 && !o.error)
        o.error = errno;
    return o.error ? strerror(o.error) : NULL;
}

/* ------------------------------------------------------------ pprof */

struct peak_profile {
    mt_pprof *p;
};

/* mt_site_peak_fn: one site of the peak profile, its live bytes and blocks
 * at the moment of the peak (the same values as the .folded.peak file). */
static void add_peak_site(mt_stack_id id, const uintptr_t *frames, unsigned depth, uint64_t bytes,
                          uint64_t blocks, void *ctx)
{
    struct peak_profile *pp = ctx;
    mt_pprof_values v = { 0, 0, blocks, bytes };
    if (pp->p && !mt_pprof_add(pp->p, id, frames, depth, NULL, &v)) {
        mt_pprof_free(pp->p);
        pp->p = NULL;
    }
}

/* The first of the N groups G (sorted by stack) of stack ID, and in *END
 * the one past its last. */
static size_t groups_of(const mt_pprof_live_group *g, size_t n, mt_stack_id id, size_t *end)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g[mid].stack < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    *end = lo;
    while (*end < n && g[*end].stack == id)
        ++*end;
    return lo;
}

/* Site S's samples: its allocation counts and the in-use values no label
 * claims in one sample keyed by its stack, and its in-use values by tag
 * scope or thread (the live table's groups G[FIRST..END), labelled as the
 * tracer's in-use profile) each in a sample of its own. The groups are
 * used only when they fit within the site's live values (nothing was
 * freed between the walk and the table's read), so that every total is
 * the site counters' as before. False when out of memory. */
static bool add_site_samples(mt_pprof *p, const struct mt_prof_site *s,
                             const mt_pprof_live_group *g, size_t first, size_t end)
{
    mt_pprof_values v = { s->now.alloc_blocks, s->now.alloc_bytes, mt_prof_live_blocks(&s->now),
                          mt_prof_live_bytes(&s->now) };
    uint64_t blocks = 0, bytes = 0;
    for (size_t i = first; i < end; i++) {
        blocks += g[i].blocks;
        bytes += g[i].bytes;
    }
    bool split = first < end && blocks <= v.inuse_objects && bytes <= v.inuse_bytes;
    if (split) {
        v.inuse_objects -= blocks;
        v.inuse_bytes -= bytes;
    }
    if ((v.alloc_objects || v.inuse_objects) &&
        !mt_pprof_add(p, s->id, s->frames, s->depth, NULL, &v))
        return false;
    for (size_t i = first; split && i < end; i++)
        if (!mt_pprof_add_live_group(p, &g[i], s->frames, s->depth))
            return false;
    return true;
}

/* At exit and per report: the four sample types from the sites' counters
 * at the last walk, the in-use values labelled by tag scope and thread
 * (add_site_samples). At the peak: in use only (inuse_objects,
 * inuse_space), each site's value at the moment of the peak
 * (mt_site_peak_foreach), unlabelled (what each thread held then is not
 * kept); what was allocated by then is not kept. */
void mt_prof_write_pprof(enum mt_pprof_when when, mt_out *say)
{
    if (when == MT_PPROF_AT_PEAK) {
        struct peak_profile pp = { mt_pprof_out_new(false) };
        mt_site_peak_foreach(add_peak_site, &pp);
        mt_pprof_out_write(pp.p, when, mt_prof_report_number, say,
                           (int64_t)(mt_os_now_ns() - mt_prof_start_ns));
        return;
    }
    mt_pprof *p = mt_pprof_out_new(true);
    size_t ngroups = 0, mapped = 0;
    mt_pprof_live_group *groups = p ? mt_pprof_live_groups(&ngroups, &mapped) : NULL;
    for (size_t i = 0; p && i < mt_prof_nsites; i++) {
        const struct mt_prof_site *s = &mt_prof_sites[i];
        size_t end, first = groups_of(groups, ngroups, s->id, &end);
        if (!add_site_samples(p, s, groups, first, end)) {
            mt_pprof_free(p);
            p = NULL;
        }
    }
    mt_pprof_live_groups_free(groups, mapped);
    mt_pprof_out_write(p, when, mt_prof_report_number, say,
                       (int64_t)(mt_os_now_ns() - mt_prof_start_ns));
}
