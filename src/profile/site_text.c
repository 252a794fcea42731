/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The sites' stacks as text, symbolized in the process (symbolize.h) and
 * written by the formatter (mt_fmt_stack_frame), kept per site while the
 * kept texts stay small. Under mt_prof_report_lock, inside memtrace. */
#include "profile/prof_internal.h"

#include "base/common.h"
#include "base/config.h"
#include "report/format.h"
#include "store/internal_heap.h"
#include "symbolize/symbolize.h"

#include <malloc.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Stack texts kept in the sites' text total at most SITE_TEXT_MAX bytes (as
 * the internal heap counts them), so that a million sites do not fill the
 * internal heap with texts; past that they are made anew each time. */
#define SITE_TEXT_MAX ((size_t)64 << 20)
static size_t site_text_kept;

/* With less internal-heap headroom than a sixteenth of the heap (256 MiB
 * of the full 4 GiB) the symbolizer stops using libdw, which would take
 * what is left: frames are module+offset from then on, said once. */
void mt_prof_heap_check(void)
{
    if (mt_iheap_headroom() < mt_iheap_capacity() / 16)
        mt_sym_stop_libdw("memtrace's internal heap is nearly full");
}

/* The symbolized text of S's stack in a new block of the internal heap;
 * NULL when the symbolizer is busy or unusable, or memory is short. */
static char *symbolize_stack(const struct mt_prof_site *s)
{
    if (s->depth == 0 || !mt_sym_self_lock())
        return NULL;
    mt_prof_heap_check();
    mt_sym_state *dwfl = mt_sym_self();
    bool ok = dwfl != NULL;
    size_t len = 0, cap = 0;
    char *text = NULL;
    for (unsigned i = 0, n = 0; ok && i < s->depth; i++) {
        mt_prof_heap_check();
        /* One frame at a time: a frame's text fits the buffer; a whole
         * stack may not. */
        mt_out o;
        mt_out_init(&o, -1);
        n = mt_fmt_stack_frame(&o, dwfl, true, n, s->frames, i);
        size_t need = len + o.len + 1;
        if (need > cap) {
            cap = need * 2;
            char *t = realloc(text, cap);
            if (!t) {
                ok = false;
                break;
            }
            text = t;
        }
        /* NOLINTNEXTLINE(clang-analyzer-core.NonNullParamChecker): the first frame finds NEED > CAP and allocates TEXT */
        memcpy(text + len, o.buf, o.len);
        len += o.len;
        text[len] = '\0';
    }
    mt_sym_self_unlock();
    if (!ok) {
        free(text);
        return NULL;
    }
    return text;
}

/* No memory for the text (or the symbolizer is busy): formatted into RAW,
 * which needs none, one frame at a time while they fit; the frames libdw
 * cannot give for want of memory are module+offset. */
static const char *raw_text(const struct mt_prof_site *s, char *raw, size_t raw_size)
{
    bool locked = s->depth && mt_sym_self_lock();
    mt_sym_state *dwfl = locked ? mt_sym_self() : NULL;
    size_t len = 0;
    for (unsigned i = 0, n = 0; i < s->depth; i++) {
        mt_out o;
        mt_out_init(&o, -1);
        if (dwfl)
            n = mt_fmt_stack_frame(&o, dwfl, false, n, s->frames, i);
        else
            mt_fmt_raw_stack(&o, s->frames + i, 1);
        if (len + o.len >= raw_size)
            break;
        memcpy(raw + len, o.buf, o.len);
        len += o.len;
    }
    if (locked)
        mt_sym_self_unlock();
    raw[len] = '\0';
    return raw;
}

const char *mt_prof_site_text(struct mt_prof_site *s, char **made, char *raw, size_t raw_size)
{
    *made = NULL;
    if (s->text)
        return s->text;
    char *text = symbolize_stack(s);
    if (!text)
        return raw_text(s, raw, raw_size);
    size_t size = malloc_usable_size(text);
    if (site_text_kept + size <= SITE_TEXT_MAX) {
        site_text_kept += size;
        s->text = text;
    } else {
        *made = text;
    }
    return text;
}

/* ------------------------------------------------------------ warming */

/* Every stack stored before it has been offered to mt_sym_warm. */
static mt_stack_cursor warmed;

static bool warm_stack(mt_stack_id id, const uintptr_t *frames, unsigned depth, void *ctx)
{
    (void)id;
    mt_sym_state *st = ctx;
    mt_prof_heap_check();
    mt_sym_warm(st, frames, depth);
    return true;
}

bool mt_prof_warms(void)
{
    /* Sampled only: the always-on profiler, whose exit is what a fleet
     * waits for, and whose stacks are few. Tracing every block, the exit
     * report's cost is small beside the run's, and a short run (most
     * tests) stays as it was. Later: nothing is symbolized in the
     * process. */
    return mt_sample_rate && mt_cfg.symbolize != MT_SYMBOLIZE_LATER;
}

void mt_prof_warm(void)
{
    if (!mt_prof_warms())
        return;
    if (!mt_lock_try(&mt_prof_report_lock))
        return; /* a report is being made: next time */
    if (!mt_prof_exiting && mt_sym_self_lock()) {
        mt_sym_state *st = mt_sym_self();
        if (st)
            mt_stack_foreach_new(&warmed, warm_stack, st);
        mt_sym_self_unlock();
    }
    mt_prof_unlock();
}
