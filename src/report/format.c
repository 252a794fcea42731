/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The formatter (see format.h). Pieces are written with one mt_out_printf
 * each (a raw frame's numbers aside: put_raw), as they always were: a
 * piece longer than MT_LINE_MAX - 1 bytes (a
 * huge C++ name) is cut the same way wherever it is printed. Every name
 * that is not memtrace's own (functions, files, modules, threads, the
 * user's patterns) goes out through mt_out_text, its control bytes
 * escaped as "\xHH": a report line stays one line, and nothing in it acts
 * on the terminal. */
#include "report/format.h"
#include "scan/leak_scan.h"

#include "base/common.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ stacks */

/* A raw row (MEMTRACE_SYMBOLIZE=later) as its frame's text, after
 * "  #N " or a folded line's ';': "0xPC (PATH+0xOFF) (BuildId: HEX)", PC
 * = RET - 1 the byte OFFSET names in PATH, as ASan writes frames with
 * symbolize=0; " (BuildId: HEX)" only when the module has one. What
 * `memtrace symbolize` (tools/text_symbolize.c) reads back. */
/* Written without mt_out_printf (a vsnprintf of a thousand instructions a
 * call, five a frame): the frames of an exit report under `later` are
 * most of its cost. The same text as "0x%lx" and "%s" would make, a build
 * ID of 256 characters or more (none is) going the printf way, cut as any
 * piece is. */
static void put_hex(mt_out *out, unsigned long v)
{
    static const char digits[] = "0123456789abcdef";
    char buf[2 + 2 * sizeof v], *end = buf + sizeof buf, *s = end;
    do {
        *--s = digits[v & 15];
        v >>= 4;
    } while (v);
    *--s = 'x';
    *--s = '0';
    mt_out_write(out, s, (size_t)(end - s));
}

static void put_dec(mt_out *out, unsigned v)
{
    char buf[3 * sizeof v], *end = buf + sizeof buf, *s = end;
    do {
        *--s = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    mt_out_write(out, s, (size_t)(end - s));
}

static void put_raw(mt_out *out, const mt_frame *f)
{
    put_hex(out, (unsigned long)f->ret - 1);
    mt_out_write(out, " (", 2);
    mt_out_text(out, f->module);
    mt_out_write(out, "+", 1);
    put_hex(out, (unsigned long)f->offset);
    mt_out_write(out, ")", 1);
    if (f->build_id) {
        size_t n = strlen(f->build_id);
        if (n < 256) {
            mt_out_write(out, " (BuildId: ", 11);
            mt_out_write(out, f->build_id, n);
            mt_out_write(out, ")", 1);
        } else {
            mt_out_printf(out, " (BuildId: %s)", f->build_id);
        }
    }
}

/* TAIL: the frame is one a tail call left off the stack, rebuilt. */
static void put_rows(mt_out *out, unsigned n, const mt_frame *rows, unsigned count, bool tail)
{
    if (count == 1 && rows[0].raw && rows[0].module) {
        mt_out_write(out, "  #", 3);
        put_dec(out, n);
        mt_out_write(out, " ", 1);
        put_raw(out, &rows[0]);
        if (rows[0].unloaded)
            mt_out_write(out, " (library unloaded since)", 25);
        mt_out_write(out, "\n", 1);
        return;
    }
    if (count == 1 && !rows[0].module) {
        mt_out_printf(out, "  #%u 0x%lx in a module that is no longer mapped\n", n,
                      (unsigned long)rows[0].ret);
        return;
    }
    for (unsigned i = 0; i < count; i++) {
        const mt_frame *f = &rows[i];
        if (i == 0)
            mt_out_printf(out, "  #%u ", n);
        else
            mt_out_printf(out, "     inlined into ");
        if (f->function)
            mt_out_text(out, f->function);
        else if (f->from_symtab && !f->file)
            /* Beside MODULE+OFFSET, the address of the same byte: the
             * call's last (ret - 1), which OFFSET names in the file. */
            mt_out_printf(out, "0x%lx", (unsigned long)f->ret - 1);
        else
            mt_out_printf(out, "0x%lx", (unsigned long)f->ret);
        if (f->file) {
            mt_out_write(out, " at ", 4);
            mt_out_text(out, f->file);
            if (f->column > 0)
                mt_out_printf(out, ":%d:%d", f->line, f->column);
            else
                mt_out_printf(out, ":%d", f->line);
        } else if (f->from_symtab) {
            mt_out_write(out, " in ", 4);
            mt_out_text(out, f->module);
            mt_out_printf(out, "+0x%lx", (unsigned long)f->offset);
        }
        mt_out_printf(out, "%s%s\n", i == 0 && f->unloaded ? " (library unloaded since)" : "",
                      i == 0 && tail ? " (tail call)" : "");
    }
}

void mt_fmt_frame(mt_out *out, unsigned n, const mt_frame *rows, unsigned count)
{
    put_rows(out, n, rows, count, false);
}

struct frame_ctx {
    mt_out *out;
    unsigned n;
    bool tail;
};

static void put_frame(const mt_frame *rows, unsigned count, void *arg)
{
    struct frame_ctx *c = arg;
    put_rows(c->out, c->n, rows, count, c->tail);
}

static void ignore_rows(const mt_frame *rows, unsigned count, void *arg)
{
    (void)rows, (void)count, (void)arg;
}

/* The tail-call frames between FRAMES[I] and the frame inward of it (for
 * frame 0, the allocation function): innermost first, their count. */
static unsigned tail_frames(mt_sym_state *dwfl, const uintptr_t *frames, unsigned i,
                            uintptr_t tail[MT_SYM_TAIL_MAX])
{
    return mt_sym_tail_calls(dwfl, frames[i], i ? frames[i - 1] : 0, tail, MT_SYM_TAIL_MAX);
}

unsigned mt_fmt_stack_frame(mt_out *out, mt_sym_state *dwfl, bool refresh, unsigned n,
                            const uintptr_t *frames, unsigned i)
{
    /* The frame's own rows first: they re-read the modules if need be. */
    mt_sym_frames(dwfl, refresh, frames[i], ignore_rows, NULL);
    uintptr_t tail[MT_SYM_TAIL_MAX];
    unsigned ntail = tail_frames(dwfl, frames, i, tail);
    struct frame_ctx c = { out, n, true };
    for (unsigned k = 0; k < ntail; k++, c.n++)
        mt_sym_frames(dwfl, false, tail[k], put_frame, &c);
    c = (struct frame_ctx){ out, c.n, false };
    mt_sym_frames(dwfl, false, frames[i], put_frame, &c);
    return c.n + 1;
}

void mt_fmt_stack(mt_out *out, mt_sym_state *dwfl, bool refresh, const uintptr_t *frames,
                  unsigned depth)
{
    for (unsigned i = 0, n = 0; i < depth; i++)
        n = mt_fmt_stack_frame(out, dwfl, refresh, n, frames, i);
}

void mt_fmt_raw_stack(mt_out *out, const uintptr_t *frames, unsigned depth)
{
    for (unsigned i = 0; i < depth; i++)
        mt_out_printf(out, "  #%u 0x%lx\n", i, (unsigned long)frames[i]);
}

/* The length of NAME's first run of plain ASCII (no ';', control or
 * byte >= 0x80): all of it for nearly every name. */
static size_t plain_len(const char *name)
{
    const unsigned char *p = (const unsigned char *)name;
    while (*p >= 0x20 && *p < 0x7f && *p != ';')
        p++;
    return (size_t)(p - (const unsigned char *)name);
}

/* S escaped as reports are (mt_text_escape) into BUF of CAP bytes, each
 * ';' (the folded format's frame separator) written ':'; its length. */
static size_t folded_text(char *buf, size_t cap, const char *s)
{
    size_t len = mt_text_escape(buf, cap, s);
    for (size_t k = 0; k < len; k++)
        if (buf[k] == ';')
            buf[k] = ':';
    return len;
}

static void put_folded(const mt_frame *rows, unsigned count, void *arg)
{
    mt_out *out = arg;
    for (unsigned i = count; i-- > 0;) {
        char buf[1024];
        const char *name = rows[i].function;
        size_t len;
        if (rows[i].raw && rows[i].module && !strchr(rows[i].module, ';')) {
            put_raw(out, &rows[i]);
            continue;
        } else if (name) {
            len = plain_len(name);
            if (name[len] || len > sizeof buf - 1) { /* rare: escaped as reports are */
                len = folded_text(buf, sizeof buf, name);
                name = buf;
            }
        } else if (rows[i].module) {
            len = folded_text(buf, sizeof buf - 20, rows[i].module);
            int w = snprintf(buf + len, sizeof buf - len, "+0x%lx", (unsigned long)rows[i].offset);
            len += w < 0 ? 0 : (size_t)w < sizeof buf - len ? (size_t)w : sizeof buf - len - 1;
            name = buf;
        } else {
            len = (size_t)snprintf(buf, sizeof buf, "0x%lx", (unsigned long)rows[i].ret);
            name = buf;
        }
        mt_out_write(out, name, len);
        if (i)
            mt_out_write(out, ";", 1);
    }
}

void mt_fmt_folded_frame(mt_out *out, mt_sym_state *dwfl, bool refresh, const uintptr_t *frames,
                         unsigned i)
{
    mt_sym_frames(dwfl, refresh, frames[i], put_folded, out);
    uintptr_t tail[MT_SYM_TAIL_MAX];
    for (unsigned k = tail_frames(dwfl, frames, i, tail); k-- > 0;) {
        mt_out_write(out, ";", 1);
        mt_sym_frames(dwfl, false, tail[k], put_folded, out);
    }
}

/* ------------------------------------------------------------ answers */

static void put_thread(mt_out *out, const mt_fmt_thread *t)
{
    if (t->name) {
        mt_out_printf(out, "thread %u \"", t->number);
        mt_out_text(out, t->name);
        mt_out_write(out, "\"", 1);
    } else
        mt_out_printf(out, "thread %u", t->number);
}

void mt_fmt_block_stack(mt_out *out, mt_stack_writer *put_stack, void *ctx,
                        const mt_fmt_stack_ref *s)
{
    if (s->depth == 0)
        mt_out_printf(out, "  (no stack was recorded for this block)\n");
    else
        put_stack(ctx, out, s->frames, s->depth);
}

static void answer_stack(mt_answer *a, const mt_fmt_stack_ref *s)
{
    mt_fmt_block_stack(a->out, a->put_stack, a->stack_ctx, s);
}

/* "start of a N-byte block" or "K bytes inside a N-byte block at START". */
static void put_position(mt_out *out, uintptr_t addr, uintptr_t start, uint64_t size)
{
    if (addr == start)
        mt_out_printf(out, "start of a %lu-byte block", (unsigned long)size);
    else
        mt_out_printf(out, "%lu bytes inside a %lu-byte block at %#lx",
                      (unsigned long)(addr - start), (unsigned long)size, (unsigned long)start);
}

/* "K bytes after the end of a N-byte block at START" or "K bytes before a
 * N-byte block at START", for a block that does not hold ADDR. */
static void put_near_position(mt_out *out, uintptr_t addr, uintptr_t start, uint64_t size)
{
    MT_ASSERT(mt_block_gap(addr, start, size) != UINT64_MAX);
    if (addr > start)
        mt_out_printf(out, "%lu bytes after the end of a %lu-byte block at %#lx",
                      (unsigned long)(addr - start - size), (unsigned long)size,
                      (unsigned long)start);
    else
        mt_out_printf(out, "%lu bytes before a %lu-byte block at %#lx",
                      (unsigned long)(start - addr), (unsigned long)size, (unsigned long)start);
}

bool mt_answer_begin(mt_answer *a, mt_out *out, uintptr_t addr, mt_stack_writer *put_stack,
                     void *stack_ctx)
{
    *a = (mt_answer){ .out = out,
                      .addr = addr,
                      .put_stack = put_stack,
                      .stack_ctx = stack_ctx,
                      .history = MT_HISTORY_DEFAULT };
    if (addr != 0)
        return true;
    mt_out_printf(out, "memtrace: 0x0: a null pointer, not a heap block\n");
    return false;
}

void mt_answer_lookup(mt_answer *a, const mt_fmt_live *e, bool unlocked)
{
    MT_ASSERT(a->addr != 0 && !a->live && a->nfreed == 0); /* once, before the freed */
    a->unlocked = unlocked;
    if (!e)
        return;
    a->live = true;
    mt_out *out = a->out;
    mt_out_printf(out, "memtrace: %#lx: ", (unsigned long)a->addr);
    put_position(out, a->addr, e->ptr, e->size);
    mt_out_printf(out, " allocated by ");
    put_thread(out, &e->thread);
    mt_out_printf(out, " (allocation #%lu)\n", (unsigned long)e->seq);
    if (unlocked)
        mt_out_printf(out, "  (read without the table lock: a stopped thread was "
                           "changing it; the record may be stale)\n");
    answer_stack(a, &e->stack);
}

/* Freed block N: where the address lies against it, when it was
 * allocated and freed, by whom, both stacks. */
static void put_freed(mt_answer *a, unsigned n, const mt_fmt_freed *r, bool near)
{
    mt_out *out = a->out;
    mt_out_printf(out, "  freed block %u: ", n);
    if (near)
        put_near_position(out, a->addr, r->ptr, r->size);
    else
        put_position(out, a->addr, r->ptr, r->size);
    mt_out_printf(out, " (allocation #%lu, freed after allocation #%lu)\n",
                  (unsigned long)r->alloc_seq, (unsigned long)r->free_seq);
    mt_out_printf(out, "  freed by ");
    put_thread(out, &r->free_thread);
    mt_out_printf(out, " at:\n");
    answer_stack(a, &r->free_stack);
    mt_out_printf(out, "  allocated by ");
    put_thread(out, &r->alloc_thread);
    mt_out_printf(out, " at:\n");
    answer_stack(a, &r->alloc_stack);
}

void mt_answer_freed(mt_answer *a, const mt_fmt_freed *r)
{
    MT_ASSERT(a->nnear == 0); /* the covering records come first */
    mt_out *out = a->out;
    if (a->live && a->nfreed - a->nhidden >= a->history) {
        a->nfreed++;
        a->nhidden++;
        return;
    }
    if (a->nfreed++ == 0) {
        if (a->live)
            mt_out_printf(out, "  live again: freed blocks that covered this address "
                               "before, newest first:\n");
        else
            mt_out_printf(out,
                          "memtrace: %#lx: not a live heap block; freed blocks "
                          "that covered it, newest first:\n",
                          (unsigned long)a->addr);
        if (!a->live && a->unlocked)
            mt_out_printf(out, "  (a table shard was read without its lock: a stopped "
                               "thread was changing it)\n");
    }
    put_freed(a, a->nfreed, r, false);
}

/* Whether a block of SIZE bytes at START is one the answer shows as near:
 * nothing covers the address and the block lies within the bound. Writes
 * the answer's first line before the first such block. */
static bool take_near(mt_answer *a, uintptr_t start, uint64_t size)
{
    if (a->live || a->nfreed || mt_block_gap(a->addr, start, size) > MT_NEAR_BYTES)
        return false;
    if (a->nnear++ == 0) {
        mt_out_printf(a->out,
                      "memtrace: %#lx: not a live heap block; the nearest live blocks "
                      "and the newest freed ones within %u bytes:\n",
                      (unsigned long)a->addr, MT_NEAR_BYTES);
        if (a->unlocked)
            mt_out_printf(a->out, "  (a table shard was read without its lock: a stopped "
                                  "thread was changing it)\n");
    }
    return true;
}

static void put_near_live(mt_answer *a, const mt_fmt_live *e)
{
    if (!e || !take_near(a, e->ptr, e->size))
        return;
    mt_out_printf(a->out, "  ");
    put_near_position(a->out, a->addr, e->ptr, e->size);
    mt_out_printf(a->out, " allocated by ");
    put_thread(a->out, &e->thread);
    mt_out_printf(a->out, " (allocation #%lu)\n", (unsigned long)e->seq);
    answer_stack(a, &e->stack);
}

void mt_answer_near(mt_answer *a, const mt_fmt_live *below, const mt_fmt_live *above)
{
    MT_ASSERT(a->nnear == 0); /* once, before the freed ones */
    put_near_live(a, below);
    put_near_live(a, above);
}

void mt_answer_near_freed(mt_answer *a, const mt_fmt_freed *r)
{
    if (a->nnear_freed >= MT_NEAR_FREED_MAX || !take_near(a, r->ptr, r->size))
        return;
    put_freed(a, ++a->nnear_freed, r, true);
}

bool mt_answer_end(mt_answer *a)
{
    if (a->nhidden)
        mt_out_printf(a->out,
                      "  %u earlier freed blocks at this address not shown; "
                      "MEMTRACE_HISTORY=all or `memtrace --all EXPR` in gdb shows them\n",
                      a->nhidden);
    if (a->live || a->nfreed || a->nnear)
        return true;
    if (a->sampled) {
        mt_out_printf(a->out,
                      "memtrace: %#lx: no sampled block; sampling is on (MEMTRACE_SAMPLE=%lu): "
                      "it may be an unsampled heap block, whose stack is not kept\n",
                      (unsigned long)a->addr, (unsigned long)a->sampled);
        return false;
    }
    mt_out_printf(a->out, "memtrace: %#lx: not a live heap block known to memtrace%s\n",
                  (unsigned long)a->addr,
                  a->unlocked ? " (a table shard was read without its lock: a "
                                "stopped thread was changing it)"
                              : "");
    return false;
}

void mt_fmt_where_line(mt_out *out, const mt_fmt_where *w)
{
    switch (w->kind) {
    case MT_WHERE_SYMBOL:
        mt_out_printf(out, "  %lu bytes inside %s %s", (unsigned long)w->offset,
                      w->function ? "function" : "data symbol", w->symbol);
        if (w->section && w->section[0])
            mt_out_printf(out, ", in section %s of %s\n", w->section, w->module);
        else
            mt_out_printf(out, ", in %s\n", w->module);
        break;
    case MT_WHERE_STACK:
        mt_out_printf(out, "  on thread %u's stack (LWP %u)", w->number, (unsigned)w->tid);
        if (w->below_sp)
            mt_out_printf(out, ", below its stack pointer: no frame uses it now\n");
        else if (w->frame >= 0)
            mt_out_printf(out, ", in frame #%d %s\n", w->frame,
                          w->frame_function ? w->frame_function : "??");
        else
            mt_out_printf(out, "\n");
        break;
    case MT_WHERE_TLS:
        mt_out_printf(out, "  in thread %u's thread-local storage (LWP %u)\n", w->number,
                      (unsigned)w->tid);
        break;
    case MT_WHERE_MAPPING:
        if (w->file)
            mt_out_printf(out, "  in a mapping of %s, at file offset %#lx\n", w->path,
                          (unsigned long)w->offset);
        else if (w->path && w->path[0])
            mt_out_printf(out, "  in the %s mapping %#lx-%#lx, in no heap block memtrace knows\n",
                          w->path, (unsigned long)w->lo, (unsigned long)w->hi);
        else
            mt_out_printf(out, "  in an anonymous mapping %#lx-%#lx\n", (unsigned long)w->lo,
                          (unsigned long)w->hi);
        break;
    default: mt_out_printf(out, "  in no mapping of the process\n");
    }
}

/* ------------------------------------------------------------ recording */

/* SEC, seconds since 1970, as "YYYY-MM-DD HH:MM:SS UTC", computed here:
 * gmtime_r takes glibc's time-zone lock, which a stopped thread may hold
 * while print_trace is called from gdb. Days to civil date: H. Hinnant's
 * days_from_civil inverse (proleptic Gregorian). */
static void put_utc(mt_out *out, uint64_t sec)
{
    int64_t days = (int64_t)(sec / 86400);
    unsigned rem = (unsigned)(sec % 86400);
    int64_t z = days + 719468;
    int64_t era = z / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    unsigned d = doy - (153 * mp + 2) / 5 + 1;
    unsigned m = mp < 10 ? mp + 3 : mp - 9;
    int64_t y = (int64_t)yoe + era * 400 + (m <= 2);
    mt_out_printf(out, "%04ld-%02u-%02u %02u:%02u:%02u UTC", (long)y, m, d, rem / 3600,
                  rem / 60 % 60, rem % 60);
}

void mt_fmt_recording(mt_out *out, const mt_fmt_recording_state *r)
{
    if (!r->ever_off)
        return;
    if (r->attached && r->on) {
        mt_out_printf(out,
                      "memtrace: attached to a running process; recording since allocation #%lu (",
                      (unsigned long)r->seq);
        put_utc(out, r->sec);
        mt_out_printf(out,
                      "); blocks allocated before the attach or while recording was off are unknown\n");
    } else if (r->attached && r->detached) {
        mt_out_printf(out, "memtrace: detached since ");
        put_utc(out, r->sec);
        mt_out_printf(out, " (after allocation #%lu); blocks allocated since are unknown\n",
                      (unsigned long)(r->seq ? r->seq - 1 : 0));
    } else if (r->on) {
        mt_out_printf(out, "memtrace: recording since allocation #%lu (", (unsigned long)r->seq);
        put_utc(out, r->sec);
        mt_out_printf(out, "); blocks allocated while it was off are unknown\n");
    } else {
        mt_out_printf(out, "memtrace: recording off since ");
        put_utc(out, r->sec);
        mt_out_printf(out, " (after allocation #%lu); blocks allocated since are unknown\n",
                      (unsigned long)(r->seq ? r->seq - 1 : 0));
    }
}

/* ------------------------------------------------------------ bad frees */

void mt_fmt_bad_free(mt_out *out, const mt_fmt_bad_free_report *b, mt_stack_writer *put_stack,
                     void *ctx)
{
    unsigned long start = (unsigned long)b->ptr, size = (unsigned long)b->size;
    switch (b->what) {
    case MT_BAD_FREE_DOUBLE:
        mt_out_printf(out, "memtrace: double free of a %lu-byte block at %#lx\n", size, start);
        break;
    case MT_BAD_FREE_INSIDE:
        mt_out_printf(out, "memtrace: %s of an address %lu bytes inside a %lu-byte block at %#lx\n",
                      b->call, (unsigned long)(b->addr - b->ptr), size, start);
        break;
    case MT_BAD_FREE_WILD:
        mt_out_printf(out, "memtrace: %s of %#lx, which no block memtrace knows starts at\n",
                      b->call, start);
        break;
    default:
        mt_out_printf(out, "memtrace: %s of a %lu-byte block allocated by %s at %#lx\n", b->call,
                      size, b->alloc, start);
        break;
    }
    mt_out_printf(out, "  %s by ", b->call);
    put_thread(out, &b->thread);
    mt_out_printf(out, " at:\n");
    mt_fmt_block_stack(out, put_stack, ctx, &b->stack);
    if (b->what == MT_BAD_FREE_DOUBLE) {
        mt_out_printf(out, "  freed before by ");
        put_thread(out, &b->free_thread);
        mt_out_printf(out, " (after allocation #%lu) at:\n", (unsigned long)b->free_seq);
        mt_fmt_block_stack(out, put_stack, ctx, &b->free_stack);
    }
    if (b->what == MT_BAD_FREE_WILD)
        return;
    mt_out_printf(out, "  allocated by ");
    put_thread(out, &b->alloc_thread);
    mt_out_printf(out, " (allocation #%lu) at:\n", (unsigned long)b->alloc_seq);
    mt_fmt_block_stack(out, put_stack, ctx, &b->alloc_stack);
}

/* ------------------------------------------------------------ heap errors */

static const char *heap_kind_name(int kind)
{
    switch (kind) {
    case MT_HEAP_OVERFLOW: return "heap-buffer-overflow";
    case MT_HEAP_UNDERFLOW: return "heap-buffer-underflow";
    case MT_HEAP_WRITE_AFTER_FREE: return "write-after-free";
    default: return "use-after-free";
    }
}

void mt_fmt_heap_error(mt_out *out, const mt_fmt_heap_error_report *e, mt_stack_writer *put_stack,
                       void *ctx)
{
    unsigned long size = (unsigned long)e->size, start = (unsigned long)e->ptr;
    unsigned long n = (unsigned long)e->bytes;
    mt_out_printf(out, "memtrace: %s%s: %s%lu byte%s ", heap_kind_name(e->kind),
                  e->access == MT_HEAP_READ    ? " read"
                  : e->access == MT_HEAP_WRITE ? " write"
                                               : "",
                  e->at_least ? "at least " : "", n, n == 1 ? "" : "s");
    if (e->kind == MT_HEAP_UNDERFLOW)
        mt_out_printf(out, "before the start of a %lu-byte block at %#lx\n", size, start);
    else if (e->kind == MT_HEAP_OVERFLOW && (uint64_t)e->offset == e->size)
        mt_out_printf(out, "past the end of a %lu-byte block at %#lx\n", size, start);
    else if (e->kind == MT_HEAP_OVERFLOW) {
        unsigned long past = (unsigned long)((uint64_t)e->offset - e->size);
        mt_out_printf(out, "at offset %ld, %lu byte%s past the end of a %lu-byte block at %#lx\n",
                      (long)e->offset, past, past == 1 ? "" : "s", size, start);
    } else
        mt_out_printf(out, "at offset %ld of a freed %lu-byte block at %#lx\n", (long)e->offset,
                      size, start);
    mt_out_printf(out, "  allocated by ");
    put_thread(out, &e->alloc_thread);
    mt_out_printf(out, " (allocation #%lu) at:\n", (unsigned long)e->alloc_seq);
    mt_fmt_block_stack(out, put_stack, ctx, &e->alloc_stack);
    if (e->freed) {
        mt_out_printf(out, "  freed by ");
        put_thread(out, &e->free_thread);
        mt_out_printf(out, " (after allocation #%lu) at:\n", (unsigned long)e->free_seq);
        mt_fmt_block_stack(out, put_stack, ctx, &e->free_stack);
    }
    mt_out_printf(out, "  detected in %s", e->where);
    if (e->thread.number) {
        mt_out_printf(out, " by ");
        put_thread(out, &e->thread);
    }
    if (e->stack.depth) {
        mt_out_printf(out, " at:\n");
        put_stack(ctx, out, e->stack.frames, e->stack.depth);
    } else {
        mt_out_printf(out, "\n");
    }
}

/* ------------------------------------------------------------ leaks */

void mt_fmt_leak_begin(mt_out *out, int pid, uint64_t blocks, uint64_t roots, double seconds)
{
    mt_out_printf(out,
                  "memtrace: leak check, pid %d: %lu live blocks, %lu root regions, "
                  "scanned in %.3f s\n",
                  pid, (unsigned long)blocks, (unsigned long)roots, seconds);
}

void mt_fmt_leak_group(mt_out *out, int class, uint64_t bytes, uint64_t blocks, uint64_t held_bytes,
                       uint64_t held_blocks, mt_stack_writer *put_stack, void *ctx,
                       const mt_fmt_stack_ref *s)
{
    if (class == MT_LEAK_DEFINITE)
        mt_out_printf(out,
                      "memtrace: %lu (%lu direct, %lu indirect) bytes in %lu blocks are "
                      "definitely lost (with %lu indirectly lost blocks), allocated at:\n",
                      (unsigned long)(bytes + held_bytes), (unsigned long)bytes,
                      (unsigned long)held_bytes, (unsigned long)blocks, (unsigned long)held_blocks);
    else
        mt_out_printf(out, "memtrace: %lu bytes in %lu blocks are %s lost, allocated at:\n",
                      (unsigned long)bytes, (unsigned long)blocks,
                      class == MT_LEAK_INDIRECT ? "indirectly" : "possibly");
    mt_fmt_block_stack(out, put_stack, ctx, s);
}

void mt_fmt_leak_more(mt_out *out, uint64_t groups)
{
    mt_out_printf(out, "memtrace: leaks: %lu more lost %s not listed\n", (unsigned long)groups,
                  groups == 1 ? "group" : "groups");
}

void mt_fmt_leak_thread_note(mt_out *out, uint32_t tid, const char *what)
{
    mt_out_printf(out,
                  "memtrace: leaks: thread %u did not stop for the scan: %s; "
                  "blocks it alone holds may be counted lost\n",
                  (unsigned)tid, what);
}

void mt_fmt_leak_unreadable(mt_out *out, uint64_t root_bytes, uint64_t blocks)
{
    mt_out_printf(out,
                  "memtrace: leaks: %lu bytes of roots and %lu blocks could not be read "
                  "and were not scanned; blocks they alone hold may be counted lost\n",
                  (unsigned long)root_bytes, (unsigned long)blocks);
}

void mt_fmt_leak_damaged(mt_out *out, uint64_t count, uintptr_t first)
{
    mt_out_printf(out,
                  "memtrace: leaks: %lu damaged %s in the live table (the first for %#lx) "
                  "ignored: a block outside the mappings, overlapping another or with an "
                  "impossible stack; blocks %s alone held may be counted lost\n",
                  (unsigned long)count, count == 1 ? "entry" : "entries", (unsigned long)first,
                  count == 1 ? "it" : "they");
}

void mt_fmt_leak_incomplete(mt_out *out, const char *what)
{
    mt_out_printf(out, "memtrace: leaks: %s; blocks held only from there may be counted lost\n",
                  what);
}

void mt_fmt_leak_suppressed(mt_out *out, const char *pattern, uint64_t bytes, uint64_t blocks)
{
    mt_out_printf(out, "memtrace: leaks: suppressed by leak:");
    mt_out_text(out, pattern);
    mt_out_printf(out, ": %lu bytes in %lu blocks\n", (unsigned long)bytes, (unsigned long)blocks);
}

void mt_fmt_leak_summary(mt_out *out, uint64_t definite_bytes, uint64_t definite_blocks,
                         uint64_t indirect_bytes, uint64_t indirect_blocks, uint64_t possible_bytes,
                         uint64_t possible_blocks, uint64_t reachable_bytes,
                         uint64_t reachable_blocks)
{
    mt_out_printf(out,
                  "memtrace: leaks: %lu bytes definitely lost in %lu blocks, %lu bytes "
                  "indirectly lost in %lu blocks, %lu bytes possibly lost in %lu blocks, "
                  "%lu bytes still reachable in %lu blocks\n",
                  (unsigned long)definite_bytes, (unsigned long)definite_blocks,
                  (unsigned long)indirect_bytes, (unsigned long)indirect_blocks,
                  (unsigned long)possible_bytes, (unsigned long)possible_blocks,
                  (unsigned long)reachable_bytes, (unsigned long)reachable_blocks);
}

/* ------------------------------------------------------------ refs */

static const char *class_name(int class)
{
    return class == MT_LEAK_DEFINITE   ? "definitely lost"
           : class == MT_LEAK_INDIRECT ? "indirectly lost"
           : class == MT_LEAK_POSSIBLE ? "possibly lost"
                                       : "still reachable";
}

void mt_fmt_refs_begin(mt_out *out, uintptr_t ptr, uint64_t size, uint64_t offset, int class)
{
    mt_out_printf(out,
                  "memtrace: refs: the live block at %#lx (%lu bytes, %s; the address "
                  "asked about is at offset %lu) is pointed into from:\n",
                  (unsigned long)ptr, (unsigned long)size, class_name(class),
                  (unsigned long)offset);
}

void mt_fmt_ref_place(mt_out *out, const char *what, uintptr_t at, uint64_t to)
{
    mt_out_printf(out, "  %#lx: ", (unsigned long)at);
    mt_out_text(out, what);
    mt_out_printf(out, ", to offset %lu\n", (unsigned long)to);
}

void mt_fmt_ref_register(mt_out *out, uint32_t thread, uint32_t tid, const char *reg, uint64_t to)
{
    mt_out_printf(out, "  register %s of thread %u (LWP %u), to offset %lu\n", reg,
                  (unsigned)thread, (unsigned)tid, (unsigned long)to);
}

void mt_fmt_ref_block(mt_out *out, uintptr_t ptr, uint64_t size, uint64_t offset, uint64_t to,
                      int class, mt_stack_writer *put_stack, void *ctx, const mt_fmt_stack_ref *s)
{
    mt_out_printf(out,
                  "  %#lx: heap block %#lx (%lu bytes, %s) at offset %lu, to offset %lu; "
                  "that block was allocated at:\n",
                  (unsigned long)(ptr + offset), (unsigned long)ptr, (unsigned long)size,
                  class_name(class), (unsigned long)offset, (unsigned long)to);
    mt_fmt_block_stack(out, put_stack, ctx, s);
}

void mt_fmt_refs_end(mt_out *out, uint64_t places)
{
    mt_out_printf(out, "memtrace: refs: %lu %s\n", (unsigned long)places,
                  places == 1 ? "place"
                  : places    ? "places"
                              : "places (no root or block "
                                "the scan sees points into it)");
}
