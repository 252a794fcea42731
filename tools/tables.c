/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The reader of memtrace's tables out of process (tables.h). The layout
 * rules are the descriptor's (src/runtime/descriptor.h); the bounds below
 * are far above what the library publishes (src/runtime/descriptor.c) and
 * low enough that no damaged value makes this program read or hold more
 * than a few MiB at once, or loop for long, before it says so; those of
 * memtrace_state's words are checked by tables_layout.c. */
#include "tables.h"

#include "base/common.h"
#include "store/freed_history.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LOG2CAP 40u /* a shard's capacity */
#define MAX_CAP ((uint64_t)1 << MAX_LOG2CAP)
#define PROBE_BATCH 64u /* slots read at once by a hash probe */

#define CORRUPT "memtrace_state looks corrupted ("
#define D(name) (t->d.name)
#define FAIL(...) mt_tables_fail(t, __VA_ARGS__) /* T: the tables at hand */

struct mt_tables_shard {
    bool locked;
    uint64_t slots;           /* the slots mapping; 0: none yet */
    bool slots_checked;       /* BASE and CAP are known */
    uint64_t base;            /* the first entry */
    uint64_t cap;             /* slots in the mapping */
    uint64_t side, side_n;    /* the side records' mapping (0: none) and number */
    mt_tables_entry *entries; /* its records, once decoded */
    size_t n;
    bool decoded;
};

struct mt_tables_stack_slot {
    uint32_t id; /* 0: an empty cache slot */
    unsigned depth;
    uintptr_t *frames;
};

bool mt_tables_fail(mt_tables *t, const char *fmt, ...)
{
    if (!t->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(t->why, sizeof t->why, fmt, ap);
        va_end(ap);
        t->failed = true;
    }
    return false;
}

const void *mt_tables_read_at(mt_tables *t, uint64_t addr, size_t len)
{
    if (len > MT_TABLES_READ_MAX || (len && addr > UINT64_MAX - (len - 1)))
        return NULL;
    return t->read(t->ctx, (uintptr_t)addr, len);
}

bool mt_tables_read_u64(mt_tables *t, uint64_t addr, uint64_t *v)
{
    const void *p = mt_tables_read_at(t, addr, 8);
    if (p)
        memcpy(v, p, 8);
    return p != NULL;
}

bool mt_tables_read_u32(mt_tables *t, uint64_t addr, uint32_t *v)
{
    const void *p = mt_tables_read_at(t, addr, 4);
    if (p)
        memcpy(v, p, 4);
    return p != NULL;
}

/* A counter the descriptor points at (SIZE 4 or 8 bytes). */
static bool counter(mt_tables *t, uint64_t addr, size_t size, const char *what, uint64_t *v)
{
    const void *p = mt_tables_read_at(t, addr, size);
    if (!p)
        return FAIL(CORRUPT "%s at %#" PRIx64 " unreadable)", what, addr);
    uint32_t v32;
    if (size == 4)
        memcpy(&v32, p, 4), *v = v32;
    else
        memcpy(v, p, 8);
    return true;
}

void mt_tables_close(mt_tables *t)
{
    for (size_t i = 0; t->shards && i < t->d.live_shard_count; i++)
        free(t->shards[i].entries);
    free(t->shards);
    free(t->sorted);
    free(t->ring);
    for (size_t i = 0; i < t->stacks_cap; i++)
        free(t->stacks[i].frames);
    free(t->stacks);
    for (size_t i = 0; i < t->names_cap; i++)
        free(t->names[i]);
    free(t->names);
    mt_tables_read_fn *read = t->read;
    void *ctx = t->ctx;
    bool failed = t->failed;
    char why[sizeof t->why];
    memcpy(why, t->why, sizeof why);
    memset(t, 0, sizeof *t);
    t->read = read, t->ctx = ctx, t->failed = failed;
    memcpy(t->why, why, sizeof why);
}

bool mt_tables_open(mt_tables *t, uintptr_t addr, mt_tables_read_fn *read, void *ctx)
{
    mt_tables_close(t);
    t->read = read;
    t->ctx = ctx;
    t->addr = addr;
    mt_tables_clear_error(t);
    if (!mt_tables_read_layout(t)) {
        memset(&t->d, 0, sizeof t->d);
        return false;
    }
    /* The thread word's low bits are the thread number, the rest how the
     * block was allocated (0: an older library, the word is the thread). */
    uint64_t bits = t->d.entry_thread_bits ? t->d.entry_thread_bits : 32;
    t->thread_mask = (uint32_t)(((uint64_t)1 << bits) - 1);
    t->open = true;
    return true;
}

const char *mt_tables_error(const mt_tables *t)
{
    return t->failed ? t->why : "";
}

void mt_tables_clear_error(mt_tables *t)
{
    t->failed = false;
    t->why[0] = '\0';
}

/* ------------------------------------------------------------ live table */

size_t mt_tables_shard_count(const mt_tables *t)
{
    return t->open ? t->d.live_shard_count : 0;
}

static bool read_shards(mt_tables *t)
{
    if (t->shards)
        return true;
    uint64_t n = D(live_shard_count), sz = D(live_shard_size);
    mt_tables_shard *s = calloc(n, sizeof *s);
    if (!s)
        return FAIL("no memory for %" PRIu64 " shards", n);
    for (uint64_t i = 0; i < n; i++) {
        const char *raw = mt_tables_read_at(t, D(live_shards) + i * sz, sz);
        if (!raw) {
            free(s);
            return FAIL(CORRUPT "live shards at %#" PRIx64 " unreadable)", D(live_shards));
        }
        uint32_t lock;
        memcpy(&lock, raw + D(live_lock_offset), 4);
        memcpy(&s[i].slots, raw + D(live_slots_offset), 8);
        memcpy(&s[i].side, raw + D(live_side_offset), 8);
        memcpy(&s[i].side_n, raw + D(live_side_count_offset), 8);
        if (!s[i].side)
            s[i].side_n = 0;
        s[i].locked = lock != 0;
    }
    t->shards = s;
    return true;
}

/* Checks shard N's slots mapping: published whole (src/store/live_table.c),
 * so even a locked shard's must be readable. */
static bool check_slots(mt_tables *t, size_t n)
{
    if (!read_shards(t))
        return false;
    mt_tables_shard *s = &t->shards[n];
    if (s->slots_checked || !s->slots)
        return true;
    /* A library with live_cap_offset publishes the capacity itself, an
     * older one its log2. */
    uint64_t word, cap;
    bool counts = D(live_cap_offset) != 0;
    if (!mt_tables_read_u64(t, s->slots + (counts ? D(live_cap_offset) : D(live_log2cap_offset)),
                            &word))
        return FAIL(CORRUPT "live shard %zu: slots at %#" PRIx64 " unreadable)", n, s->slots);
    if (counts && (word == 0 || word > MAX_CAP))
        return FAIL(CORRUPT "live shard %zu: capacity %" PRIu64 ", not 1 to %" PRIu64 ")", n, word,
                    MAX_CAP);
    if (!counts && word > MAX_LOG2CAP)
        return FAIL(CORRUPT "live shard %zu: log2 capacity %" PRIu64 ", more than %u)", n, word,
                    MAX_LOG2CAP);
    cap = counts ? word : (uint64_t)1 << word;
    uint64_t base = s->slots + D(live_entries_offset), bytes = D(live_slot_size) * cap;
    if (base < s->slots || base > UINT64_MAX - bytes + 1 ||
        !mt_tables_read_at(t, base + bytes - 8, 8))
        return FAIL(CORRUPT "live shard %zu: %" PRIu64 " slots at %#" PRIx64 " not all readable)",
                    n, cap, base);
    s->base = base;
    s->cap = cap;
    s->slots_checked = true;
    return true;
}

bool mt_tables_shard_slots(mt_tables *t, size_t n, uintptr_t *base, uint64_t *count, bool *locked)
{
    if (!check_slots(t, n))
        return false;
    const mt_tables_shard *s = &t->shards[n];
    *locked = s->locked;
    *base = s->slots ? s->base : 0;
    *count = s->slots ? s->cap : 0;
    return true;
}

uint64_t mt_tables_slot_ptr(const mt_tables *t, const char *raw)
{
    uint64_t w0;
    memcpy(&w0, raw, 8);
    return w0 & (((uint64_t)1 << t->d.live_slot_ptr_bits) - 1);
}

/* The kind above the thread number in thread word W, the number in *W. */
static uint32_t split_thread(const mt_tables *t, uint32_t *w)
{
    uint32_t kind = t->thread_mask == UINT32_MAX ? 0 : *w >> __builtin_popcount(t->thread_mask);
    *w &= t->thread_mask;
    return kind;
}

void mt_tables_decode_slot(const mt_tables *t, const char *raw, mt_tables_entry *e)
{
    uint64_t w0, w2;
    unsigned pb = (unsigned)t->d.live_slot_ptr_bits, low = (unsigned)t->d.live_slot_size_low;
    memcpy(&w0, raw, 8);
    memcpy(&e->seq, raw + 8, 8);
    memcpy(&w2, raw + 16, 8);
    e->ptr = w0 & (((uint64_t)1 << pb) - 1);
    e->size = (w0 >> pb) << low | (low ? w2 >> (64 - low) : 0);
    e->tag = 0;
    if (t->d.entry_seq_bits && t->d.entry_seq_bits < 64) { /* the tag node id above */
        e->tag = (uint32_t)(e->seq >> t->d.entry_seq_bits);
        e->seq &= ((uint64_t)1 << t->d.entry_seq_bits) - 1;
    }
    e->stack = (uint32_t)w2;
    e->thread = (uint32_t)(w2 >> 32) & (low ? ((uint32_t)1 << (32 - low)) - 1 : UINT32_MAX);
    e->kind = split_thread(t, &e->thread);
}

/* Shard N's side records, decoded and appended to the shard's records
 * (check_slots first). */
static bool add_side(mt_tables *t, size_t n)
{
    mt_tables_shard *s = &t->shards[n];
    if (!s->side_n)
        return true;
    uint64_t es = D(entry_size);
    if (s->side_n > MAX_CAP || s->side_n > (UINT64_MAX - s->side) / es)
        return FAIL(CORRUPT "live shard %zu: %" PRIu64 " side records)", n, s->side_n);
    mt_tables_entry *e = realloc(s->entries, (s->n + s->side_n) * sizeof *e);
    if (!e)
        return FAIL("no memory for the live table's records");
    s->entries = e;
    uint64_t per_read = MT_TABLES_READ_MAX / es;
    for (uint64_t first = 0; first < s->side_n; first += per_read) {
        uint64_t k = s->side_n - first < per_read ? s->side_n - first : per_read;
        const char *raw =
            mt_tables_read_at(t, s->side + D(live_side_entries_offset) + first * es, k * es);
        if (!raw)
            return FAIL(CORRUPT "live shard %zu: side records at %#" PRIx64 " unreadable)", n,
                        s->side);
        for (uint64_t i = 0; i < k; i++) {
            uint64_t ptr;
            memcpy(&ptr, raw + i * es + D(entry_ptr), 8);
            if (ptr)
                mt_tables_decode_entry(t, raw + i * es, &s->entries[s->n++]);
        }
    }
    return true;
}

void mt_tables_decode_entry(const mt_tables *t, const char *raw, mt_tables_entry *e)
{
    memcpy(&e->ptr, raw + t->d.entry_ptr, 8);
    memcpy(&e->size, raw + t->d.entry_size_field, 8);
    memcpy(&e->seq, raw + t->d.entry_seq, 8);
    e->tag = 0;
    if (t->d.entry_seq_bits && t->d.entry_seq_bits < 64) { /* the tag node id above */
        e->tag = (uint32_t)(e->seq >> t->d.entry_seq_bits);
        e->seq &= ((uint64_t)1 << t->d.entry_seq_bits) - 1;
    }
    memcpy(&e->stack, raw + t->d.entry_stack, 4);
    memcpy(&e->thread, raw + t->d.entry_thread, 4);
    e->kind = split_thread(t, &e->thread);
}

/* COUNT slots of shard N from slot FIRST, NULL with the reason set. */
static const char *read_slots(mt_tables *t, size_t n, uint64_t first, uint64_t count)
{
    const mt_tables_shard *s = &t->shards[n];
    const char *raw =
        mt_tables_read_at(t, s->base + first * D(live_slot_size), count * D(live_slot_size));
    if (!raw)
        FAIL(CORRUPT "live shard %zu: slots at %#" PRIx64 " unreadable)", n, s->base);
    return raw;
}

bool mt_tables_shard_entries(mt_tables *t, size_t n, const mt_tables_entry **entries, size_t *count)
{
    if (!check_slots(t, n))
        return false;
    mt_tables_shard *s = &t->shards[n];
    if (!s->decoded && s->slots) {
        uint64_t es = D(live_slot_size), cap = s->cap;
        uint64_t per_read = MT_TABLES_READ_MAX / es;
        size_t room = 0;
        for (uint64_t first = 0; first < cap; first += per_read) {
            uint64_t k = cap - first < per_read ? cap - first : per_read;
            const char *raw = read_slots(t, n, first, k);
            if (!raw)
                return false;
            for (uint64_t i = 0; i < k; i++) {
                if (!mt_tables_slot_ptr(t, raw + i * es))
                    continue;
                if (s->n == room) {
                    room = room ? 2 * room : 1024;
                    mt_tables_entry *e = realloc(s->entries, room * sizeof *e);
                    if (!e)
                        return FAIL("no memory for the live table's records");
                    s->entries = e;
                }
                mt_tables_decode_slot(t, raw + i * es, &s->entries[s->n++]);
            }
        }
    }
    if (!s->decoded && !add_side(t, n))
        return false;
    s->decoded = true;
    *entries = s->entries;
    *count = s->n;
    return true;
}

/* The side record of ADDR in shard N into *E: 1, 0 if none, -1 on a
 * failed read. */
static int find_side(mt_tables *t, size_t n, uintptr_t addr, mt_tables_entry *e)
{
    mt_tables_shard *s = &t->shards[n];
    uint64_t es = D(entry_size);
    if (s->side_n > MAX_CAP)
        return FAIL(CORRUPT "live shard %zu: %" PRIu64 " side records)", n, s->side_n), -1;
    for (uint64_t i = 0; i < s->side_n; i++) {
        const char *raw = mt_tables_read_at(t, s->side + D(live_side_entries_offset) + i * es, es);
        if (!raw)
            return FAIL(CORRUPT "live shard %zu: side records at %#" PRIx64 " unreadable)", n,
                        s->side),
                   -1;
        uint64_t p;
        memcpy(&p, raw + D(entry_ptr), 8);
        if (p == addr) {
            mt_tables_decode_entry(t, raw, e);
            return 1;
        }
    }
    return 0;
}

int mt_tables_find_exact(mt_tables *t, uintptr_t addr, mt_tables_entry *e, bool *locked)
{
    uint64_t h = (uint64_t)(addr >> D(live_hash_shift)) * D(live_hash_multiplier);
    /* BITS: the top bits of h that choose the shard (descriptor.h). */
    unsigned bits = (unsigned)D(live_shard_bits);
    size_t n = bits ? (size_t)(h >> (64 - bits)) : 0;
    if (D(live_region_shift)) {
        bits = (unsigned)D(live_group_bits);
        n = (size_t)(((addr >> D(live_region_shift)) << bits | (bits ? h >> (64 - bits) : 0)) &
                     (D(live_shard_count) - 1));
    }
    if (!check_slots(t, n))
        return -1;
    const mt_tables_shard *s = &t->shards[n];
    *locked = s->locked;
    if (!s->slots)
        return find_side(t, n, addr, e);
    uint64_t cap = s->cap, es = D(live_slot_size), above = bits < 64 ? h << bits : 0;
    uint64_t i = D(live_cap_offset) ? (uint64_t)(((unsigned __int128)above * cap) >> 64)
                 : cap > 1          ? above >> (64 - __builtin_ctzll(cap))
                                    : 0;
    for (uint64_t probed = 0; probed < cap;) {
        uint64_t batch = PROBE_BATCH;
        if (batch > cap - i)
            batch = cap - i;
        if (batch > cap - probed)
            batch = cap - probed;
        const char *raw = read_slots(t, n, i, batch);
        if (!raw)
            return -1;
        for (uint64_t k = 0; k < batch; k++) {
            uint64_t p = mt_tables_slot_ptr(t, raw + k * es);
            if (p == addr) {
                mt_tables_decode_slot(t, raw + k * es, e);
                return 1;
            }
            if (p == 0)
                return find_side(t, n, addr, e);
        }
        probed += batch;
        i = i + batch == cap ? 0 : i + batch;
    }
    return find_side(t, n, addr, e);
}

static int entry_cmp(const void *a, const void *b)
{
    const mt_tables_entry *x = a, *y = b;
    return x->ptr < y->ptr ? -1 : x->ptr > y->ptr;
}

bool mt_tables_around(mt_tables *t, uintptr_t addr, mt_tables_entry *below, mt_tables_entry *above,
                      bool *inside, bool *locked)
{
    size_t shards = mt_tables_shard_count(t);
    if (!t->sorted) {
        /* Sorted once per stop; each question is then a bisection. */
        size_t total = 0;
        for (size_t n = 0; n < shards; n++) {
            const mt_tables_entry *e;
            size_t k = 0;
            if (!mt_tables_shard_entries(t, n, &e, &k))
                return false;
            total += k;
        }
        mt_tables_entry *all = malloc((total ? total : 1) * sizeof *all);
        if (!all)
            return FAIL("no memory for %zu live records", total);
        size_t at = 0;
        for (size_t n = 0; n < shards; n++) {
            if (t->shards[n].n)
                memcpy(all + at, t->shards[n].entries, t->shards[n].n * sizeof *all);
            at += t->shards[n].n;
        }
        qsort(all, total, sizeof *all, entry_cmp);
        t->sorted = all;
        t->nsorted = total;
    }
    *locked = false;
    for (size_t n = 0; n < shards; n++)
        *locked |= t->shards[n].locked;
    size_t lo = 0, hi = t->nsorted; /* the first record starting above ADDR */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->sorted[mid].ptr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    static const mt_tables_entry none;
    *below = lo > 0 ? t->sorted[lo - 1] : none;
    *above = lo < t->nsorted ? t->sorted[lo] : none;
    *inside = below->ptr && mt_block_gap(addr, below->ptr, below->size) == UINT64_MAX;
    return true;
}

/* ------------------------------------------------------------ freed history */

/* Appends the trusted slots of pushes BEGIN to END - 1 to t->ring, newest
 * first; or, with NEWEST, only finds the newest stamp in them (an older
 * library does not say how many were pushed) into *NEWEST. */
static bool ring_pieces(mt_tables *t, uint64_t begin, uint64_t end, uint64_t *newest, size_t *room)
{
    uint64_t cap = D(freed_capacity), rs = D(freed_record_size);
    uint64_t per_read = MT_TABLES_READ_MAX / rs;
    for (uint64_t hi = end; hi > begin;) {
        /* Pushes lo..hi-1 lie in consecutive slots: one lap of the ring. */
        uint64_t lo = (hi - 1) - (hi - 1) % cap;
        if (lo < begin)
            lo = begin;
        if (hi - lo > per_read)
            lo = hi - per_read;
        const char *raw = mt_tables_read_at(t, D(freed_ring) + (lo % cap) * rs, (hi - lo) * rs);
        if (!raw)
            return FAIL(CORRUPT "freed history at %#" PRIx64 " unreadable)", D(freed_ring));
        for (uint64_t j = hi - lo; j-- > 0;) {
            const char *r = raw + j * rs;
            uint64_t stamp;
            memcpy(&stamp, r + D(freed_stamp), 8);
            if (newest) {
                if (stamp > *newest && (stamp - 1) % cap == (lo + j) % cap)
                    *newest = stamp;
                continue;
            }
            /* A slot is trusted only with the stamp of the push that
             * finished there (freed_history.h). */
            if (stamp != lo + j + 1)
                continue;
            if (t->nring == *room) {
                *room = *room ? 2 * *room : 256;
                mt_tables_ring_slot *s = realloc(t->ring, *room * sizeof *s);
                if (!s)
                    return FAIL("no memory for the freed history");
                t->ring = s;
            }
            mt_tables_ring_slot *s = &t->ring[t->nring++];
            s->stamp = stamp;
            memcpy(&s->ptr, r + D(freed_ptr), 8);
            memcpy(&s->size, r + D(freed_size), 8);
            s->when = 0; /* an older library's: by stamp alone */
            if (D(freed_when))
                memcpy(&s->when, r + D(freed_when), 8);
        }
        hi = lo;
    }
    return true;
}

/* Newest first: by the clock stamp, then by push number. */
static int newest_first(const void *a, const void *b)
{
    const mt_tables_ring_slot *x = a, *y = b;
    if (x->when != y->when)
        return x->when > y->when ? -1 : 1;
    return x->stamp > y->stamp ? -1 : x->stamp < y->stamp;
}

bool mt_tables_ring(mt_tables *t, const mt_tables_ring_slot **slots, size_t *n)
{
    if (!t->ring_read && D(freed_ring) && D(freed_capacity)) {
        uint64_t cap = D(freed_capacity), pushed = 0;
        size_t room = 0;
        if (D(freed_blocks)) {
            if (!counter(t, D(freed_blocks), 8, "freed-history block count", &pushed))
                return false;
            /* Blocks of push numbers (checked: 1 <= freed_block <= cap). */
            if (pushed > UINT64_MAX / D(freed_block))
                return FAIL(CORRUPT "freed-history block count %" PRIu64 " too large)", pushed);
            pushed *= D(freed_block);
        } else if (D(freed_pushed)) {
            if (!counter(t, D(freed_pushed), 8, "freed-history push count", &pushed))
                return false;
        } else if (!ring_pieces(t, 0, cap, &pushed, &room)) {
            return false;
        }
        t->nring = 0;
        if (!ring_pieces(t, pushed > cap ? pushed - cap : 0, pushed, NULL, &room))
            return false;
        if (t->nring > 1)
            qsort(t->ring, t->nring, sizeof *t->ring, newest_first);
    }
    t->ring_read = true;
    *slots = t->ring;
    *n = t->nring;
    return true;
}

bool mt_tables_freed_record(mt_tables *t, const mt_tables_ring_slot *s, mt_tables_freed *r)
{
    uint64_t rs = D(freed_record_size);
    uint64_t slot = (s->stamp - 1) % D(freed_capacity);
    const char *raw = mt_tables_read_at(t, D(freed_ring) + slot * rs, rs);
    if (!raw)
        return FAIL(CORRUPT "freed history at %#" PRIx64 " unreadable)", D(freed_ring));
    r->ptr = s->ptr;
    r->size = s->size;
    memcpy(&r->alloc_seq, raw + D(freed_alloc_seq), 8);
    memcpy(&r->free_seq, raw + D(freed_free_seq), 8);
    memcpy(&r->alloc_stack, raw + D(freed_alloc_stack), 4);
    memcpy(&r->free_stack, raw + D(freed_free_stack), 4);
    memcpy(&r->alloc_thread, raw + D(freed_alloc_thread), 4);
    memcpy(&r->free_thread, raw + D(freed_free_thread), 4);
    return true;
}

/* ------------------------------------------------------------ stacks */

/* Stack ID's record header into *HEADER and its chunk into *CHUNK: 1 read,
 * 0 no record can be there (*CHUNK 0: no chunk), -1 unreadable (the reason
 * set). */
static int stack_header(mt_tables *t, uint32_t id, uint64_t *chunk, uint64_t *header)
{
    uint64_t bits = D(stack_chunk_bits), c = id >> bits, w = id & (((uint64_t)1 << bits) - 1);
    *chunk = 0;
    if (!id || c >= D(stack_max_chunks))
        return 0;
    if (!mt_tables_read_u64(t, D(stack_chunks) + 8 * c, chunk))
        return FAIL(CORRUPT "stack chunk table at %#" PRIx64 " unreadable)", D(stack_chunks)), -1;
    if (!*chunk)
        return 0;
    if (!mt_tables_read_u64(t, *chunk + 8 * w, header))
        return FAIL(CORRUPT "stack chunk %" PRIu64 " at %#" PRIx64 " unreadable)", c, *chunk), -1;
    return 1;
}

/* The depth of a record with HEADER at word W, or -1 if none can be there. */
static int stack_depth(const mt_tables *t, uint64_t w, uint64_t header)
{
    uint64_t depth = header & t->d.stack_depth_mask;
    if (!(header & t->d.stack_present_bit) || depth > MT_MAX_DEPTH ||
        w + t->d.stack_frames_offset + depth > (uint64_t)1 << t->d.stack_chunk_bits)
        return -1;
    return (int)depth;
}

static mt_tables_stack_slot *stack_slot(mt_tables *t, uint32_t id)
{
    if (2 * (t->nstacks + 1) > t->stacks_cap) {
        size_t cap = t->stacks_cap ? 2 * t->stacks_cap : 1024;
        mt_tables_stack_slot *s = calloc(cap, sizeof *s);
        if (!s)
            return NULL;
        for (size_t i = 0; i < t->stacks_cap; i++) {
            if (!t->stacks[i].id)
                continue;
            size_t j = (size_t)(t->stacks[i].id * 2654435761u) & (cap - 1);
            while (s[j].id)
                j = (j + 1) & (cap - 1);
            s[j] = t->stacks[i];
        }
        free(t->stacks);
        t->stacks = s;
        t->stacks_cap = cap;
    }
    size_t j = (size_t)(id * 2654435761u) & (t->stacks_cap - 1);
    while (t->stacks[j].id && t->stacks[j].id != id)
        j = (j + 1) & (t->stacks_cap - 1);
    return &t->stacks[j];
}

bool mt_tables_stack(mt_tables *t, uint32_t id, const uintptr_t **frames, unsigned *depth)
{
    static const uintptr_t none[1];
    *frames = none;
    *depth = 0;
    if (!id)
        return true;
    mt_tables_stack_slot *s = stack_slot(t, id);
    if (!s)
        return FAIL("no memory for stacks");
    if (s->id == id) {
        *frames = s->frames ? s->frames : none;
        *depth = s->depth;
        return true;
    }
    uint64_t chunk, header, w = id & (((uint64_t)1 << D(stack_chunk_bits)) - 1);
    int got = stack_header(t, id, &chunk, &header);
    if (got < 0)
        return false;
    int d = got ? stack_depth(t, w, header) : -1;
    uintptr_t *f = NULL;
    if (d > 0) {
        uint64_t at = chunk + 8 * (w + D(stack_frames_offset));
        const void *p = mt_tables_read_at(t, at, 8 * (size_t)d);
        if (!p)
            return FAIL(CORRUPT "stack chunk %" PRIu64 " at %#" PRIx64 " unreadable)",
                        (uint64_t)id >> D(stack_chunk_bits), chunk);
        /* NOLINTNEXTLINE(clang-analyzer-optin.portability.UnixAPI): D > 0 here */
        if (!(f = malloc(8 * (size_t)d)))
            return FAIL("no memory for stacks");
        memcpy(f, p, 8 * (size_t)d);
    }
    *s = (mt_tables_stack_slot){ id, d > 0 ? (unsigned)d : 0, f };
    t->nstacks++;
    *frames = f ? f : none;
    *depth = s->depth;
    return true;
}

bool mt_tables_stack_impossible(mt_tables *t, uint32_t id)
{
    uint64_t chunk, header, w = id & (((uint64_t)1 << D(stack_chunk_bits)) - 1);
    bool failed = t->failed;
    int got = stack_header(t, id, &chunk, &header);
    if (got < 0) {
        t->failed = failed; /* proves nothing; not a failure of the caller's */
        return false;
    }
    if (got == 0)
        return id && (id >> D(stack_chunk_bits) >= D(stack_max_chunks) || !chunk);
    return stack_depth(t, w, header) < 0;
}

/* ------------------------------------------------------------ threads, counters */

bool mt_tables_thread_name(mt_tables *t, uint32_t number, const char **name)
{
    *name = NULL;
    if (!D(threads) || number == 0 || number > D(threads_max))
        return true;
    if (!t->names) {
        t->names = calloc(D(threads_max) + 1, sizeof *t->names);
        if (!t->names)
            return FAIL("no memory for thread names");
        t->names_cap = D(threads_max) + 1;
    }
    if (!t->names[number]) {
        const char *raw =
            mt_tables_read_at(t,
                              D(threads) + (number - 1) * D(threads_entry_size) + D(threads_name),
                              D(threads_name_size));
        if (!raw)
            return FAIL(CORRUPT "thread registry at %#" PRIx64 " unreadable)", D(threads));
        size_t len = strnlen(raw, D(threads_name_size));
        char *s = malloc(len + 1);
        if (!s)
            return FAIL("no memory for thread names");
        memcpy(s, raw, len);
        s[len] = '\0';
        t->names[number] = s;
    }
    *name = t->names[number][0] ? t->names[number] : NULL;
    return true;
}

/* The allocation numbers threads 1 to HIGHEST hold in their batches and
 * have not handed out, into *UNUSED (see descriptor.h). */
static bool seq_unused(mt_tables *t, uint64_t highest, uint64_t *unused)
{
    uint64_t es = D(threads_entry_size), per_read = MT_TABLES_READ_MAX / es;
    if (!D(threads) || highest > D(threads_max))
        highest = D(threads) ? D(threads_max) : 0;
    for (uint64_t n = 0; n < highest;) {
        uint64_t k = highest - n < per_read ? highest - n : per_read;
        const char *raw = mt_tables_read_at(t, D(threads) + n * es, k * es);
        if (!raw)
            return FAIL(CORRUPT "thread registry at %#" PRIx64 " unreadable)", D(threads));
        for (uint64_t j = 0; j < k; j++) {
            uint64_t next, end;
            memcpy(&next, raw + j * es + D(threads_seq_next), 8);
            memcpy(&end, raw + j * es + D(threads_seq_end), 8);
            if (end > next && end - next <= D(seq_batch))
                *unused += end - next;
        }
        n += k;
    }
    return true;
}

bool mt_tables_counts(mt_tables *t, uint64_t *stacks, uint64_t *threads, uint64_t *allocations)
{
    uint64_t seq = 0;
    if (!counter(t, D(stack_count), 4, "stack count", stacks) ||
        !counter(t, D(seq_counter), 8, "allocation counter", &seq) ||
        !counter(t, D(threads_highest), 4, "thread count", threads))
        return false;
    *allocations = seq ? seq - 1 : 0;
    if (!D(seq_discarded)) /* one number at a time: all handed out */
        return true;
    uint64_t given_up = 0, unused = 0;
    if (!counter(t, D(seq_discarded), 8, "allocation numbers given up", &given_up) ||
        !seq_unused(t, *threads, &unused))
        return false;
    *allocations = given_up + unused <= *allocations ? *allocations - given_up - unused : 0;
    return true;
}

bool mt_tables_unwind_fallbacks(mt_tables *t, uint64_t *v, bool *has)
{
    *has = D(unwind_fallbacks) != 0;
    *v = 0;
    return !*has || counter(t, D(unwind_fallbacks), 8, "unwind fallback count", v);
}

bool mt_tables_recording(mt_tables *t, uint64_t words[4], bool *has)
{
    *has = D(recording) != 0;
    if (!*has)
        return true;
    const void *p = mt_tables_read_at(t, D(recording), 32);
    if (!p)
        return FAIL(CORRUPT "recording state at %#" PRIx64 " unreadable)", D(recording));
    memcpy(words, p, 32);
    return true;
}
