/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The `check` request (heap_check.h). What is read:
 * - each live record's redzone, [ptr + size, ptr + size + redzone_size),
 *   against redzone_byte (descriptor.h); a block on a guard page has
 *   none, the rest of its page (guard_pool's words) is checked instead;
 * - each quarantined block (the rings' slots): its first `filled` bytes
 *   against freed_byte, its redzone against redzone_byte;
 * - on glibc's heap (no other allocator's library mapped, and the blocks'
 *   own chunk headers mostly glibc's; else this part is skipped), the size word of
 *   the chunk after each live or quarantined block, and each live block's
 *   own: a size word no chunk can have is damage that the block before it
 *   wrote, past its end and its redzone. That block is named from the live
 *   records, the quarantine or, when glibc has it back, the freed history.
 * Damage is gathered first and written after, as every tables answer;
 * memory that cannot be read is counted, never guessed. */
#include "heap_check.h"

#include "base/common.h"
#include "capture/quarantine.h"
#include "report/error_record.h"
#include "report/format.h"
#include "scan/pattern.h"
#include "store/live_table.h"

#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* At most this many damaged blocks are reported; the others counted. */
#define DAMAGED_MAX 256
/* A quarantine ring's slots, and rings, read at most. */
#define SLOTS_MAX ((uint64_t)1 << 20)
#define RINGS_MAX 65536
/* glibc: a chunk's size word is the chunk's bytes (a multiple of 16, at
 * least 32) with three flag bits; an in-use chunk's data starts 16 bytes
 * after the chunk, its size word 8 bytes before the data. */
#define CHUNK_FLAGS 7u
#define CHUNK_MMAPPED 2u
#define CHUNK_MIN 32u
#define CHUNK_SIZE_MAX ((uint64_t)1 << 40)
/* The guard pages' page size (x86-64's). */
#define GUARD_PAGE ((uint64_t)4096)

/* A block as the check sees it: a live record or a quarantined one. */
typedef struct {
    uint64_t ptr, size, alloc_seq, free_seq, filled;
    uint32_t alloc_stack, free_stack, alloc_thread, free_thread;
    bool freed;
} block;

typedef struct {
    block b;
    int kind;
    int64_t offset;
    uint64_t bytes;
    bool at_least;
    uint64_t header_at, header; /* a glibc size word found damaged (at 0: none) */
    char reported[48];          /* "": not reported by the program; else where it was */
    bool seen;                  /* found damaged now (else only from a report's record) */
} damage;

typedef struct {
    mt_tables *t;
    uint64_t rz, rz_byte, freed_byte, pool_lo, pool_len;
    block *held; /* the quarantined blocks */
    size_t nheld, held_cap;
    damage *found;
    size_t nfound;
    uint64_t more, unreadable, live;
    bool glibc;
} checker;

static bool in_pool(const checker *c, uint64_t p)
{
    return p - c->pool_lo < c->pool_len;
}

/* The first and end offsets of the bytes of [ADDR, ADDR + LEN) that are
 * not BYTE (the library's check, scan/pattern.h, on each piece read); 0
 * none, 1 found, -1 unreadable. */
static int pattern(checker *c, uint64_t addr, uint64_t len, unsigned char byte, uint64_t *first,
                   uint64_t *end)
{
    bool any = false;
    for (uint64_t at = 0; at < len;) {
        size_t n = len - at < MT_TABLES_READ_MAX ? (size_t)(len - at) : MT_TABLES_READ_MAX;
        const unsigned char *p = mt_tables_read_at(c->t, addr + at, n);
        if (!p)
            return -1;
        size_t f, e;
        if (mt_pattern_damage(p, n, byte, &f, &e)) {
            if (!any)
                *first = at + f;
            any = true;
            *end = at + e;
        }
        at += n;
    }
    return any;
}

static void note(checker *c, const damage *d)
{
    for (size_t i = 0; i < c->nfound; i++) {
        if (c->found[i].b.ptr == d->b.ptr && c->found[i].b.freed == d->b.freed) {
            if (d->header_at && !c->found[i].header_at) { /* one report a block */
                c->found[i].header_at = d->header_at;
                c->found[i].header = d->header;
            }
            return;
        }
    }
    if (c->nfound == DAMAGED_MAX) {
        c->more++;
        return;
    }
    c->found[c->nfound] = *d;
    c->found[c->nfound++].seen = true;
}

/* The bytes of live guard-page block B's page before it (none for a
 * block at its page's start): an underflow that reached no guard page. As
 * the library's report: the distance of the farthest byte written. */
static void check_guard_head(checker *c, const block *b)
{
    uint64_t page = b->ptr & ~(GUARD_PAGE - 1), len = b->ptr - page, first, end;
    int r = len ? pattern(c, page, len, (unsigned char)c->rz_byte, &first, &end) : 0;
    if (r < 0)
        c->unreadable++;
    if (r > 0) {
        damage d = { .b = *b, .kind = MT_HEAP_UNDERFLOW, .bytes = len - first };
        d.offset = -(int64_t)d.bytes;
        note(c, &d);
    }
}

/* B's redzone, and for a quarantined block its fill. */
static void check_patterns(checker *c, const block *b)
{
    uint64_t first, end;
    damage d = { .b = *b, .bytes = 0 };
    if (b->freed && b->filled) {
        int r = pattern(c, b->ptr, b->filled, (unsigned char)c->freed_byte, &first, &end);
        if (r < 0)
            c->unreadable++;
        if (r > 0) {
            d.kind = MT_HEAP_WRITE_AFTER_FREE;
            d.offset = (int64_t)first;
            d.bytes = end - first;
            note(c, &d);
            return;
        }
    }
    uint64_t len = c->rz;
    if (in_pool(c, b->ptr)) {
        /* A block on a guard page has no redzone: the rest of its page,
         * filled with the redzone byte, stands for one (its page is
         * inaccessible once freed), after the block and, for one placed
         * against the next guard page, before it, as the library checks
         * both at the free (tracer.c's check_guard_page). */
        if (b->freed)
            return;
        check_guard_head(c, b);
        len = (b->ptr & ~(GUARD_PAGE - 1)) + GUARD_PAGE - (b->ptr + b->size);
    }
    if (!len)
        return;
    int r = pattern(c, b->ptr + b->size, len, (unsigned char)c->rz_byte, &first, &end);
    if (r < 0)
        c->unreadable++;
    if (r > 0) {
        d.kind = b->freed ? MT_HEAP_WRITE_AFTER_FREE : MT_HEAP_OVERFLOW;
        d.offset = (int64_t)(b->size + first);
        d.bytes = end - first;
        d.at_least = end == len;
        note(c, &d);
    }
}

/* ------------------------------------------------------------ the quarantine */

static bool read_ring(checker *c, uint64_t ring)
{
    const struct memtrace_state *s = &c->t->d;
    uint64_t cap, head, tail;
    if (!mt_tables_read_u64(c->t, ring + s->quarantine_ring_cap, &cap) ||
        !mt_tables_read_u64(c->t, ring + s->quarantine_ring_head, &head) ||
        !mt_tables_read_u64(c->t, ring + s->quarantine_ring_tail, &tail))
        return mt_tables_fail(c->t,
                              "memtrace_state looks corrupted (quarantine ring at %#" PRIx64
                              " unreadable)",
                              ring);
    if (cap == 0 || cap > SLOTS_MAX || head - tail > cap || s->quarantine_slot_size < 64 ||
        s->quarantine_slot_size > 4096)
        return mt_tables_fail(c->t,
                              "memtrace_state looks corrupted (quarantine ring at %#" PRIx64
                              ": %" PRIu64 " slots, %" PRIu64 " held)",
                              ring, cap, head - tail);
    for (uint64_t i = tail; i != head; i++) {
        uint64_t at = ring + s->quarantine_ring_slots + (i % cap) * s->quarantine_slot_size;
        const unsigned char *p = mt_tables_read_at(c->t, at, s->quarantine_slot_size);
        if (!p) {
            c->unreadable++;
            continue;
        }
        block b = { .freed = true };
        memcpy(&b.ptr, p + s->quarantine_slot_ptr, 8);
        memcpy(&b.size, p + s->quarantine_slot_size_field, 8);
        memcpy(&b.alloc_seq, p + s->quarantine_slot_alloc_seq, 8);
        memcpy(&b.free_seq, p + s->quarantine_slot_free_seq, 8);
        memcpy(&b.filled, p + s->quarantine_slot_filled, 8);
        memcpy(&b.alloc_stack, p + s->quarantine_slot_alloc_stack, 4);
        memcpy(&b.free_stack, p + s->quarantine_slot_free_stack, 4);
        memcpy(&b.alloc_thread, p + s->quarantine_slot_alloc_thread, 4);
        memcpy(&b.free_thread, p + s->quarantine_slot_free_thread, 4);
        if (b.filled > b.size || b.size > CHUNK_SIZE_MAX)
            return mt_tables_fail(c->t,
                                  "memtrace_state looks corrupted (a quarantined block at "
                                  "%#" PRIx64 " of %" PRIu64 " bytes)",
                                  b.ptr, b.size);
        if (c->nheld == c->held_cap) {
            c->held_cap = c->held_cap ? 2 * c->held_cap : 1024;
            block *n = realloc(c->held, c->held_cap * sizeof *n);
            if (!n)
                return mt_tables_fail(c->t, "no memory for %zu quarantined blocks", c->held_cap);
            c->held = n;
        }
        /* NOLINTNEXTLINE(clang-analyzer-core.NullDereference): HELD grew above when NHELD reached HELD_CAP */
        c->held[c->nheld++] = b;
    }
    return true;
}

static bool read_quarantine(checker *c)
{
    const struct memtrace_state *s = &c->t->d;
    uint64_t ring;
    if (!s->quarantine_rings)
        return true;
    if (!mt_tables_read_u64(c->t, s->quarantine_rings, &ring))
        return mt_tables_fail(c->t,
                              "memtrace_state looks corrupted (quarantine list at %#" PRIx64
                              " unreadable)",
                              s->quarantine_rings);
    for (unsigned n = 0; ring; n++) {
        if (n == RINGS_MAX)
            return mt_tables_fail(c->t,
                                  "memtrace_state looks corrupted (more than %u "
                                  "quarantine rings)",
                                  RINGS_MAX);
        if (!read_ring(c, ring))
            return false;
        if (!mt_tables_read_u64(c->t, ring + s->quarantine_ring_next, &ring))
            return mt_tables_fail(c->t, "memtrace_state looks corrupted (quarantine ring list "
                                        "unreadable)");
    }
    return true;
}

/* ------------------------------------------------------------ glibc's headers */

/* The size word of the in-use chunk of B, if it can be glibc's. */
static bool own_header(checker *c, const block *b, uint64_t *v)
{
    if (in_pool(c, b->ptr) || !mt_tables_read_u64(c->t, b->ptr - 8, v))
        return false;
    uint64_t s = *v & ~(uint64_t)CHUNK_FLAGS, need = b->size + c->rz + 8;
    if (*v & CHUNK_MMAPPED)
        return s % 4096 == 0 && s >= need;
    return s % 16 == 0 && s >= CHUNK_MIN && s >= need && s - need < ((uint64_t)1 << 20);
}

static int other_allocator(Dwfl_Module *m, void **ud, const char *name, Dwarf_Addr base, void *arg)
{
    (void)ud, (void)base;
    static const char *const others[] = { "jemalloc", "tcmalloc", "mimalloc",
                                          "hoard",    "snmalloc", "rpmalloc" };
    const char *slash = name ? strrchr(name, '/') : NULL;
    const char *file = slash ? slash + 1 : name;
    for (size_t i = 0; file && i < sizeof others / sizeof *others; i++) {
        if (strstr(file, others[i])) {
            *(bool *)arg = true;
            return DWARF_CB_ABORT;
        }
    }
    (void)m;
    return DWARF_CB_OK;
}

/* Whether the heap is glibc's: no other allocator's library is mapped, and
 * (of 8 or more) half the live blocks outside the pool at least have a size
 * word glibc would have written (a damaged header is the case looked for:
 * it cannot take a vote of one). */
static bool glibc_heap(checker *c, mt_sym_state *sym)
{
    bool other = false;
    if (sym && mt_sym_dwfl(sym))
        dwfl_getmodules(mt_sym_dwfl(sym), other_allocator, &other, 0);
    if (other)
        return false;
    uint64_t looked = 0, like = 0, v;
    for (size_t i = 0; i < c->t->nsorted && looked < 4096; i++) {
        const mt_tables_entry *e = &c->t->sorted[i];
        if (in_pool(c, e->ptr) || e->kind == MT_KIND_POOL)
            continue;
        block b = { .ptr = e->ptr, .size = e->size };
        looked++;
        like += own_header(c, &b, &v);
    }
    return looked < 8 || like * 2 >= looked;
}

/* The live record starting at P, or NULL. */
static const mt_tables_entry *live_at(checker *c, uint64_t p)
{
    size_t lo = 0, hi = c->t->nsorted;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->t->sorted[mid].ptr < p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->t->nsorted && c->t->sorted[lo].ptr == p ? &c->t->sorted[lo] : NULL;
}

static block of_entry(const mt_tables_entry *e)
{
    return (block){ .ptr = e->ptr,
                    .size = e->size,
                    .alloc_seq = e->seq,
                    .alloc_stack = e->stack,
                    .alloc_thread = e->thread };
}

/* The block that ends right before the chunk whose size word is at AT
 * (the one with the greatest start below it, live, quarantined or in the
 * freed history, within 1 MiB), into *B. */
static bool block_before(checker *c, uint64_t at, block *b)
{
    uint64_t best = 0;
    for (size_t i = 0; i < c->t->nsorted && c->t->sorted[i].ptr < at; i++)
        if (c->t->sorted[i].ptr > best)
            best = c->t->sorted[i].ptr, *b = of_entry(&c->t->sorted[i]);
    for (size_t i = 0; i < c->nheld; i++)
        if (c->held[i].ptr < at && c->held[i].ptr > best)
            best = c->held[i].ptr, *b = c->held[i];
    const mt_tables_ring_slot *slots;
    size_t n;
    const mt_tables_ring_slot *newest = NULL;
    if (mt_tables_ring(c->t, &slots, &n)) {
        for (size_t i = 0; i < n; i++) /* newest first: the first at an address wins */
            if (slots[i].ptr < at && slots[i].ptr > best)
                best = slots[i].ptr, newest = &slots[i];
    }
    if (newest) {
        mt_tables_freed r;
        if (!mt_tables_freed_record(c->t, newest, &r))
            return false;
        *b = (block){ .ptr = r.ptr,
                      .size = r.size,
                      .alloc_seq = r.alloc_seq,
                      .free_seq = r.free_seq,
                      .alloc_stack = r.alloc_stack,
                      .free_stack = r.free_stack,
                      .alloc_thread = r.alloc_thread,
                      .free_thread = r.free_thread,
                      .freed = true };
    }
    return best && at - best < ((uint64_t)1 << 20);
}

/* The size word at AT, damaged, was written past the end of the block
 * before it. */
static void header_damaged(checker *c, uint64_t at, uint64_t v, const block *known)
{
    block b;
    if (known)
        b = *known;
    else if (!block_before(c, at, &b))
        return;
    damage d = { .b = b,
                 .kind = MT_HEAP_OVERFLOW,
                 .offset = (int64_t)(at - b.ptr),
                 .bytes = 8,
                 .header_at = at,
                 .header = v };
    if (at < b.ptr + b.size)
        return; /* inside the block: not an overflow of it */
    note(c, &d);
}

/* B's own chunk, and the chunk after it. A size word that is not one
 * glibc could have written for the size memtrace asked (B's and its
 * redzone) is B's underflow, and is never followed to a next chunk. */
static void check_headers(checker *c, const block *b, bool live)
{
    uint64_t v, prev, next;
    if (in_pool(c, b->ptr) || !mt_tables_read_u64(c->t, b->ptr - 8, &v) ||
        !mt_tables_read_u64(c->t, b->ptr - 16, &prev))
        return;
    unsigned under = mt_glibc_size_damage(v, prev, b->ptr, b->size + c->rz);
    /* The whole word written, its low byte (flags, size's low bits) and
     * its high one (0 in every size): a run from below, written past the
     * end of the block before (named as such, when one is known), more
     * likely than an underflow of 8 bytes or more. */
    uint64_t asked = b->size + c->rz, nb = asked + 23 < 32 ? 32 : (asked + 23) & ~(uint64_t)15;
    bool low = true; /* the low byte is no candidate size's */
    for (uint64_t cand = nb; cand <= nb + 32; cand += 16)
        low &= ((v ^ cand) & 0xf0) != 0;
    if (under == 1 && low) {
        block before;
        if (live && block_before(c, b->ptr - 8, &before) &&
            b->ptr - 8 >= before.ptr + before.size) {
            header_damaged(c, b->ptr - 8, v, &before);
            return;
        }
    }
    if (under) {
        damage d = { .b = *b,
                     .kind = MT_HEAP_UNDERFLOW,
                     .offset = -(int64_t)under,
                     .bytes = under,
                     .header_at = b->ptr - 8,
                     .header = v };
        note(c, &d);
        return;
    }
    if (!own_header(c, b, &v))
        return;
    if (v & CHUNK_MMAPPED)
        return;
    uint64_t at = b->ptr - 16 + (v & ~(uint64_t)CHUNK_FLAGS) + 8;
    if (!mt_tables_read_u64(c->t, at, &next))
        return;
    uint64_t s = next & ~(uint64_t)CHUNK_FLAGS;
    const mt_tables_entry *q = live_at(c, at + 8);
    if (q && !in_pool(c, q->ptr))
        return; /* a live block's header: its own check names the damage */
    bool bad = s < CHUNK_MIN || s % 16 != 0 || s >= CHUNK_SIZE_MAX ||
               (q && !in_pool(c, q->ptr) && s < q->size + c->rz + 8);
    if (bad)
        header_damaged(c, at, next, b);
}

/* ------------------------------------------------------------ the reports' records */

/* The records of the last reports the library kept (error_record.h),
 * oldest first, into R (MT_ERROR_RECORDS at most); how many. A library
 * without them, or of another layout, has none; a slot being rewritten
 * (its number not the one expected) is skipped. */
static size_t read_records(mt_tables *t, mt_error_record *r)
{
    const struct memtrace_state *s = &t->d;
    uint64_t count;
    if (!s->error_records || !s->error_record_count ||
        s->error_record_size != sizeof(mt_error_record) || s->error_records_max == 0 ||
        s->error_records_max > 4096 || !mt_tables_read_u64(t, s->error_record_count, &count))
        return 0;
    size_t n = 0;
    uint64_t max = s->error_records_max < MT_ERROR_RECORDS ? s->error_records_max
                                                           : MT_ERROR_RECORDS;
    for (uint64_t k = count > max ? count - max + 1 : 1; k && k <= count; k++) {
        uint64_t at = s->error_records + ((k - 1) % s->error_records_max) * sizeof *r;
        const void *p = mt_tables_read_at(t, at, sizeof *r);
        if (!p)
            continue;
        memcpy(&r[n], p, sizeof *r);
        if (r[n].number == k) {
            r[n].where[sizeof r[n].where - 1] = 0;
            r[n].call[sizeof r[n].call - 1] = 0;
            r[n].alloc[sizeof r[n].alloc - 1] = 0;
            n++;
        }
    }
    return n;
}

/* The damaged blocks the program reported already: a block found damaged
 * now that a report named is marked so; one a report named that is not
 * found now (memtrace mends a redzone once it reported it, a block it
 * aborted for left the tables) is listed from the report's facts. */
static void add_reported(checker *c)
{
    static mt_error_record r[MT_ERROR_RECORDS];
    size_t n = read_records(c->t, r);
    for (size_t k = n; k-- > 0;) { /* newest first: its facts win */
        if (r[k].kind >= MT_ERROR_BAD_FREE || !r[k].ptr)
            continue;
        damage *same = NULL;
        for (size_t i = 0; i < c->nfound && !same; i++)
            if (c->found[i].b.ptr == r[k].ptr)
                same = &c->found[i];
        if (!same) {
            if (c->nfound == DAMAGED_MAX) {
                c->more++;
                continue;
            }
            same = &c->found[c->nfound++];
            *same = (damage){
                .b = { .ptr = r[k].ptr,
                       .size = r[k].size,
                       .alloc_seq = r[k].alloc_seq,
                       .free_seq = r[k].free_seq,
                       .alloc_stack = r[k].alloc_stack,
                       .free_stack = r[k].free_stack,
                       .alloc_thread = r[k].alloc_thread,
                       .free_thread = r[k].free_thread,
                       .freed = r[k].freed != 0 },
                .kind = (int)r[k].kind,
                .offset = r[k].offset,
                .bytes = r[k].bytes,
                .at_least = r[k].at_least != 0,
            };
            /* Out of the tables but still damaged: the block the library
             * aborted for (its record left the table, glibc never had it). */
            uint64_t first, end;
            same->seen = r[k].kind == MT_HEAP_OVERFLOW && c->rz && r[k].size <= CHUNK_SIZE_MAX &&
                         pattern(c, r[k].ptr + r[k].size, c->rz, (unsigned char)c->rz_byte, &first,
                                 &end) > 0;
        }
        if (!same->reported[0])
            snprintf(same->reported, sizeof same->reported, "%s", r[k].where[0] ? r[k].where : "?");
    }
}

/* ------------------------------------------------------------ the answer */

static void put_stack(void *ctx, mt_out *out, const uintptr_t *frames, unsigned depth)
{
    mt_fmt_stack(out, ctx, false, frames, depth);
}

static bool report_of(mt_tables *t, const damage *d, mt_fmt_heap_error_report *f, char *where,
                      size_t where_size)
{
    *f = (mt_fmt_heap_error_report){
        .kind = d->kind,
        .access = MT_HEAP_ACCESS_UNSEEN,
        .ptr = d->b.ptr,
        .size = d->b.size,
        .offset = d->offset,
        .bytes = d->bytes,
        .at_least = d->at_least,
        .freed = d->b.freed,
        .alloc_seq = d->b.alloc_seq,
        .free_seq = d->b.free_seq,
        .alloc_thread = { d->b.alloc_thread, NULL },
        .free_thread = { d->b.free_thread, NULL },
        .where = where,
    };
    char mark[96] = "";
    if (d->reported[0])
        snprintf(mark, sizeof mark, "%sreported before, detected in %s%s",
                 d->header_at ? "; " : " (", d->reported, d->seen ? "" : "; not found damaged now");
    if (d->header_at)
        snprintf(where, where_size,
                 "memtrace check (glibc's chunk header at %#" PRIx64 ", %s the block, holds "
                 "%#" PRIx64 "%s)",
                 d->header_at, d->header_at < d->b.ptr ? "before" : "after", d->header, mark);
    else
        snprintf(where, where_size, "memtrace check%s%s", mark, mark[0] ? ")" : "");
    return mt_tables_thread_name(t, d->b.alloc_thread, &f->alloc_thread.name) &&
           mt_tables_stack(t, d->b.alloc_stack, &f->alloc_stack.frames, &f->alloc_stack.depth) &&
           (!d->b.freed ||
            (mt_tables_thread_name(t, d->b.free_thread, &f->free_thread.name) &&
             mt_tables_stack(t, d->b.free_stack, &f->free_stack.frames, &f->free_stack.depth)));
}

static bool gather(checker *c, mt_sym_state *sym)
{
    const struct memtrace_state *s = &c->t->d;
    bool inside, locked;
    mt_tables_entry below, above;
    if (!mt_tables_around(c->t, 0, &below, &above, &inside, &locked)) /* sorts the records */
        return false;
    c->rz = s->redzone_size;
    c->rz_byte = s->redzone_byte;
    c->freed_byte = s->freed_byte;
    if (c->rz > MT_TABLES_READ_MAX)
        return mt_tables_fail(c->t,
                              "memtrace_state looks corrupted (redzones of %" PRIu64 " bytes)",
                              c->rz);
    if (s->guard_pool && (!mt_tables_read_u64(c->t, s->guard_pool, &c->pool_lo) ||
                          !mt_tables_read_u64(c->t, s->guard_pool_size, &c->pool_len)))
        return mt_tables_fail(c->t, "memtrace_state looks corrupted (guard pool words "
                                    "unreadable)");
    if (!read_quarantine(c))
        return false;
    c->glibc = glibc_heap(c, sym);
    c->live = c->t->nsorted;
    for (size_t i = 0; i < c->t->nsorted; i++) {
        if (c->t->sorted[i].kind == MT_KIND_POOL)
            continue; /* the program's own pool's: no redzone, no header */
        block b = of_entry(&c->t->sorted[i]);
        check_patterns(c, &b);
        if (c->glibc)
            check_headers(c, &b, true);
    }
    for (size_t i = 0; i < c->nheld; i++) {
        check_patterns(c, &c->held[i]);
        if (c->glibc)
            check_headers(c, &c->held[i], false);
    }
    add_reported(c);
    return !c->t->failed;
}

void mt_heap_check_request(mt_tables *t, mt_sym_state *sym, mt_out *out)
{
    static damage found[DAMAGED_MAX];
    checker c = { .t = t, .found = found };
    bool ok = gather(&c, sym);
    mt_fmt_heap_error_report *f = ok ? calloc(c.nfound ? c.nfound : 1, sizeof *f) : NULL;
    char(*where)[256] = ok ? calloc(c.nfound ? c.nfound : 1, sizeof *where) : NULL;
    for (size_t i = 0; ok && f && where && i < c.nfound; i++)
        ok = report_of(t, &found[i], &f[i], where[i], sizeof where[i]);
    if (!ok || !f || !where) {
        mt_out_printf(out, "memtrace: %s\n", f && where ? mt_tables_error(t) : "out of memory");
        mt_out_write(out, "\0@@ error\n", 10);
    } else {
        for (size_t i = 0; i < c.nfound; i++)
            mt_fmt_heap_error(out, &f[i], put_stack, sym);
        uint64_t damaged = c.nfound + c.more, reported = 0;
        for (size_t i = 0; i < c.nfound; i++)
            reported += found[i].reported[0] != 0;
        char before[64] = "";
        if (reported)
            snprintf(before, sizeof before, " (%" PRIu64 " reported before)", reported);
        mt_out_printf(out,
                      "memtrace: check: %" PRIu64 " damaged %s%s; %" PRIu64 " live %s and %zu "
                      "quarantined %s checked\n",
                      damaged, damaged == 1 ? "block" : "blocks", before, c.live,
                      c.live == 1 ? "block" : "blocks", c.nheld, c.nheld == 1 ? "block" : "blocks");
        if (c.more)
            mt_out_printf(out, "memtrace: check: %" PRIu64 " damaged blocks not listed\n", c.more);
        if (c.unreadable)
            mt_out_printf(out,
                          "memtrace: check: %" PRIu64 " blocks could not be read (not in "
                          "the core file?)\n",
                          c.unreadable);
        mt_out_write(out, "\0@@\n", 4);
    }
    free(f);
    free(where);
    free(c.held);
}

void mt_last_error_request(mt_tables *t, mt_sym_state *sym, mt_out *out)
{
    static mt_error_record r[MT_ERROR_RECORDS];
    size_t n = read_records(t, r);
    if (t->failed) {
        mt_out_printf(out, "memtrace: %s\n", mt_tables_error(t));
        mt_out_write(out, "\0@@ error\n", 10);
        return;
    }
    if (n == 0) {
        mt_out_printf(out, "memtrace: last-error: no error reported%s\n",
                      t->d.error_records ? "" : " (or a library that keeps none)");
        mt_out_write(out, "\0@@\n", 4);
        return;
    }
    const mt_error_record *e = &r[n - 1];
    mt_fmt_thread alloc_thread = { e->alloc_thread, NULL }, free_thread = { e->free_thread, NULL },
                  thread = { e->thread, NULL };
    mt_fmt_stack_ref alloc_stack = { 0 }, free_stack = { 0 };
    bool ok = mt_tables_thread_name(t, e->alloc_thread, &alloc_thread.name) &&
              mt_tables_thread_name(t, e->thread, &thread.name) &&
              mt_tables_stack(t, e->alloc_stack, &alloc_stack.frames, &alloc_stack.depth) &&
              (!e->free_stack ||
               (mt_tables_thread_name(t, e->free_thread, &free_thread.name) &&
                mt_tables_stack(t, e->free_stack, &free_stack.frames, &free_stack.depth)));
    if (!ok) {
        mt_out_printf(out, "memtrace: %s\n", mt_tables_error(t));
        mt_out_write(out, "\0@@ error\n", 10);
        return;
    }
    mt_out_printf(out, "memtrace: last-error: error %" PRIu64 " of the process:\n", e->number);
    mt_fmt_stack_ref here = { (const uintptr_t *)e->frames, e->depth };
    if (e->kind >= MT_ERROR_BAD_FREE) {
        mt_fmt_bad_free_report b = {
            .what = (int)(e->kind - MT_ERROR_BAD_FREE),
            .call = e->call,
            .alloc = e->alloc,
            .addr = e->addr,
            .ptr = e->ptr,
            .size = e->size,
            .alloc_seq = e->alloc_seq,
            .free_seq = e->free_seq,
            .thread = thread,
            .alloc_thread = alloc_thread,
            .free_thread = free_thread,
            .stack = here,
            .alloc_stack = alloc_stack,
            .free_stack = free_stack,
        };
        mt_fmt_bad_free(out, &b, put_stack, sym);
    } else {
        mt_fmt_heap_error_report f = {
            .kind = (int)e->kind,
            .access = (int)e->access,
            .ptr = e->ptr,
            .size = e->size,
            .offset = e->offset,
            .bytes = e->bytes,
            .at_least = e->at_least != 0,
            .freed = e->freed != 0,
            .alloc_seq = e->alloc_seq,
            .free_seq = e->free_seq,
            .alloc_thread = alloc_thread,
            .free_thread = free_thread,
            .thread = thread,
            .alloc_stack = alloc_stack,
            .free_stack = free_stack,
            .stack = here,
            .where = e->where,
        };
        mt_fmt_heap_error(out, &f, put_stack, sym);
    }
    mt_out_write(out, "\0@@\n", 4);
}
