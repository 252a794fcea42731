/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The tables of a process that runs (tables.h, "Reading a process that
 * runs"): memtrace top reads them without stopping the process, so any
 * read may meet a writer half-way. Nothing read is handed out unless it
 * is a state the table was in: a live shard's slots are read twice, with
 * its lock free and its slots pointer and record count the same before
 * and after, the two copies equal, as many records as the count, and each
 * record reachable by the library's own probe from its home slot (no
 * empty slot and no other copy of its address on the way: what a
 * backward shift caught half-way breaks); a freed-history slot is taken
 * when its two copies are equal and its stamp is the push's that finished
 * there. A shard that changes under every try is left to the caller to
 * skip: the view never shows it. */
#include "tables.h"

#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CORRUPT "memtrace_state looks corrupted ("
#define D(name) (t->d.name)
#define FAIL(...) mt_tables_fail(t, __VA_ARGS__)
#define MAX_LIVE_CAP ((uint64_t)1 << 32) /* slots a shard may have here */

/* LEN bytes at ADDR into DST, in pieces the reader takes. */
static bool copy_range(mt_tables *t, char *dst, uint64_t addr, uint64_t len)
{
    for (uint64_t done = 0; done < len;) {
        uint64_t piece = len - done < MT_TABLES_READ_MAX ? len - done : MT_TABLES_READ_MAX;
        const void *p = mt_tables_read_at(t, addr + done, (size_t)piece);
        if (!p)
            return false;
        memcpy(dst + done, p, (size_t)piece);
        done += piece;
    }
    return true;
}

static bool room(char **buf, size_t *cap, size_t need)
{
    if (*cap >= need)
        return true;
    char *b = realloc(*buf, need);
    if (!b)
        return false;
    *buf = b;
    *cap = need;
    return true;
}

struct shard_head {
    uint32_t lock;
    uint64_t count, slots;
    uint64_t side, side_n; /* the side records (descriptor.h) */
};

static bool read_head(mt_tables *t, size_t n, struct shard_head *h)
{
    const char *raw =
        mt_tables_read_at(t, D(live_shards) + n * D(live_shard_size), D(live_shard_size));
    if (!raw)
        return FAIL(CORRUPT "live shards at %#" PRIx64 " unreadable)", D(live_shards));
    memcpy(&h->lock, raw + D(live_lock_offset), 4);
    memcpy(&h->count, raw + D(live_count_offset), 8);
    memcpy(&h->slots, raw + D(live_slots_offset), 8);
    memcpy(&h->side, raw + D(live_side_offset), 8);
    memcpy(&h->side_n, raw + D(live_side_count_offset), 8);
    if (!h->side)
        h->side_n = 0;
    return true;
}

/* The home slot of address P in a mapping of CAP slots (descriptor.h). */
static uint64_t home_of(const mt_tables *t, uint64_t p, uint64_t cap)
{
    uint64_t h = (p >> D(live_hash_shift)) * D(live_hash_multiplier);
    unsigned bits = (unsigned)(D(live_region_shift) ? D(live_group_bits) : D(live_shard_bits));
    uint64_t above = bits < 64 ? h << bits : 0;
    if (D(live_cap_offset))
        return (uint64_t)(((unsigned __int128)above * cap) >> 64);
    return cap > 1 ? above >> (64 - __builtin_ctzll(cap)) : 0;
}

/* Whether the record in slot J of RAW (CAP slots, its address P) is where
 * the library's probe finds it: no empty slot and no other copy of P
 * between its home slot and J. */
static bool in_probe_order(const mt_tables *t, const char *raw, uint64_t cap, uint64_t j,
                           uint64_t p)
{
    uint64_t es = D(live_slot_size), q;
    for (uint64_t i = home_of(t, p, cap); i != j; i = i + 1 == cap ? 0 : i + 1) {
        q = mt_tables_slot_ptr(t, raw + i * es);
        if (q == 0 || q == p)
            return false;
    }
    return true;
}

static void pause_briefly(unsigned attempt)
{
    if (attempt < 2) {
        sched_yield();
        return;
    }
    struct timespec ts = { 0, 200000L * attempt }; /* 0.4 ms, 0.6 ms, ... */
    nanosleep(&ts, NULL);
}

/* Whether every record of RAW (CAP slots) has no empty slot between its
 * home slot and its slot: one pass, each record's home checked against
 * the start of its run of full slots. Duplicates are not looked for: the
 * caller checks the count. */
static bool runs_in_order(const mt_tables *t, const char *raw, uint64_t cap)
{
    uint64_t es = D(live_slot_size), p, empty = cap;
    for (uint64_t i = 0; i < cap && empty == cap; i++) {
        p = mt_tables_slot_ptr(t, raw + i * es);
        if (!p)
            empty = i;
    }
    if (empty == cap)
        return false; /* a full table: no mapping the library keeps */
    uint64_t last_empty = empty;
    for (uint64_t k = 1; k < cap; k++) {
        uint64_t j = empty + k < cap ? empty + k : empty + k - cap;
        p = mt_tables_slot_ptr(t, raw + j * es);
        if (!p) {
            last_empty = j;
            continue;
        }
        uint64_t h = home_of(t, p, cap);
        uint64_t to_home = h >= last_empty ? h - last_empty : h + cap - last_empty;
        uint64_t to_slot = j >= last_empty ? j - last_empty : j + cap - last_empty;
        if (to_home == 0 || to_home > to_slot)
            return false;
    }
    return true;
}

/* Decodes into L the records of the two copies of CAP slots that are the
 * same in both and in probe order in each (EXACT: the caller found the
 * copies equal and in probe order, and checks the count); their number.
 * Then the SIDE side records that follow the slots in both copies, those
 * the same in both (not counted in the number returned). */
static uint64_t keep_records(mt_tables *t, mt_tables_live *l, uint64_t cap, uint64_t side,
                             bool exact)
{
    uint64_t es = D(live_slot_size);
    l->n = 0;
    for (uint64_t i = 0; i < cap; i++) {
        const char *r = l->raw[0] + i * es;
        uint64_t p = mt_tables_slot_ptr(t, r);
        if (!p || (!exact && (memcmp(r, l->raw[1] + i * es, (size_t)es) != 0 ||
                              !in_probe_order(t, l->raw[0], cap, i, p) ||
                              !in_probe_order(t, l->raw[1], cap, i, p))))
            continue;
        mt_tables_decode_slot(t, r, &l->e[l->n++]);
    }
    uint64_t n = l->n, rs = D(entry_size);
    for (uint64_t i = 0; i < side; i++) {
        const char *r = l->raw[0] + cap * es + i * rs;
        uint64_t p;
        memcpy(&p, r + D(entry_ptr), 8);
        if (p && memcmp(r, l->raw[1] + cap * es + i * rs, (size_t)rs) == 0)
            mt_tables_decode_entry(t, r, &l->e[l->n++]);
    }
    return n;
}

int mt_tables_live_shard(mt_tables *t, size_t n, unsigned tries, mt_tables_live *l)
{
    uint64_t es = D(live_slot_size), rs = D(entry_size);
    bool counts = D(live_cap_offset) != 0;
    bool read_any = false;                /* a read between two free locks */
    uint64_t last_cap = 0, last_side = 0; /* of the last such read */
    l->n = 0;
    for (unsigned attempt = 0; attempt < tries; attempt++) {
        if (attempt)
            pause_briefly(attempt);
        struct shard_head a = { 0 }, b = { 0 };
        if (!read_head(t, n, &a))
            return -1;
        if (a.lock)
            continue;
        if (!a.slots && a.count)
            continue;
        uint64_t word = 0, cap = 0;
        if (a.slots) {
            const void *w =
                mt_tables_read_at(t,
                                  a.slots + (counts ? D(live_cap_offset) : D(live_log2cap_offset)),
                                  8);
            if (!w)
                continue; /* a retired mapping may be gone by now */
            memcpy(&word, w, 8);
            if (word == 0)
                continue; /* retired: its pages read as zeros */
            if (!counts && word >= 40)
                return FAIL(CORRUPT "live shard %zu: log2 capacity %" PRIu64 ")", n, word), -1;
            cap = counts ? word : (uint64_t)1 << word;
        }
        if (cap > MAX_LIVE_CAP || a.count > cap || a.side_n > MAX_LIVE_CAP)
            return FAIL(CORRUPT "live shard %zu: capacity %" PRIu64 ", %" PRIu64
                                " records, %" PRIu64 " side records)",
                        n, cap, a.count, a.side_n),
                   -1;
        size_t main_bytes = (size_t)(cap * es), bytes = main_bytes + (size_t)(a.side_n * rs);
        if (!room(&l->raw[0], &l->raw_cap[0], bytes) || !room(&l->raw[1], &l->raw_cap[1], bytes))
            return FAIL("no memory for a live shard of %" PRIu64 " slots", cap), -1;
        if (l->cap < cap + a.side_n) {
            mt_tables_entry *e = realloc(l->e, (cap + a.side_n) * sizeof *e);
            if (!e)
                return FAIL("no memory for the live table's records"), -1;
            l->e = e;
            l->cap = cap + a.side_n;
        }
        uint64_t base = a.slots + D(live_entries_offset);
        uint64_t side = a.side + D(live_side_entries_offset);
        if (cap && (!copy_range(t, l->raw[0], base, main_bytes) ||
                    !copy_range(t, l->raw[1], base, main_bytes)))
            continue;
        if (a.side_n && (!copy_range(t, l->raw[0] + main_bytes, side, bytes - main_bytes) ||
                         !copy_range(t, l->raw[1] + main_bytes, side, bytes - main_bytes)))
            continue;
        if (!read_head(t, n, &b))
            return -1;
        if (b.lock || b.slots != a.slots || b.side != a.side)
            continue;
        read_any = true;
        last_cap = cap;
        last_side = a.side_n < b.side_n ? a.side_n : b.side_n;
        /* Exact: nothing changed from the first read of the head to the
         * last, as far as a reader can tell. */
        if (b.count == a.count && b.side_n == a.side_n &&
            (!bytes || memcmp(l->raw[0], l->raw[1], bytes) == 0) &&
            (!cap || runs_in_order(t, l->raw[0], cap)) &&
            keep_records(t, l, cap, a.side_n, true) == a.count)
            return 1;
    }
    if (!read_any)
        return 0;
    /* Changing under every read: the records both copies of the last
     * read agree on, each where a probe finds it; those in flux are left
     * out. */
    keep_records(t, l, last_cap, last_side, false);
    return 2;
}

int mt_tables_live_ring(mt_tables *t, mt_tables_live *l, mt_tables_live_freed **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    uint64_t cap = D(freed_capacity), rs = D(freed_record_size);
    if (!D(freed_ring) || !cap)
        return 1;
    /* Push numbers handed out so far: only their slots can be trusted. */
    uint64_t pushed = 0;
    uint64_t at = D(freed_blocks) ? D(freed_blocks) : D(freed_pushed);
    if (at) {
        const void *p = mt_tables_read_at(t, at, 8);
        if (!p)
            return FAIL(CORRUPT "freed-history count at %#" PRIx64 " unreadable)", at), -1;
        memcpy(&pushed, p, 8);
        if (D(freed_blocks))
            pushed = pushed > UINT64_MAX / D(freed_block) ? UINT64_MAX : pushed * D(freed_block);
    } else {
        pushed = UINT64_MAX; /* an older library: any stamp that fits its slot */
    }
    uint64_t per = MT_TABLES_READ_MAX / rs;
    size_t chunk = (size_t)(per * rs);
    if (!room(&l->raw[0], &l->raw_cap[0], chunk) || !room(&l->raw[1], &l->raw_cap[1], chunk))
        return FAIL("no memory for the freed history"), -1;
    for (uint64_t first = 0; first < cap; first += per) {
        uint64_t k = cap - first < per ? cap - first : per;
        uint64_t addr = D(freed_ring) + first * rs;
        if (!copy_range(t, l->raw[0], addr, k * rs) || !copy_range(t, l->raw[1], addr, k * rs))
            return FAIL(CORRUPT "freed history at %#" PRIx64 " unreadable)", D(freed_ring)), -1;
        for (uint64_t j = 0; j < k; j++) {
            const char *r = l->raw[0] + j * rs;
            uint64_t stamp;
            memcpy(&stamp, r + D(freed_stamp), 8);
            /* The stamp of a push that finished in this slot (top bit:
             * being written), and the same bytes in both copies. */
            if (!stamp || stamp >> 63 || stamp > pushed || (stamp - 1) % cap != first + j ||
                memcmp(r, l->raw[1] + j * rs, (size_t)rs) != 0)
                continue;
            if (*n == l->fcap) {
                size_t c = l->fcap ? 2 * l->fcap : 4096;
                mt_tables_live_freed *f = realloc(l->f, c * sizeof *f);
                if (!f)
                    return FAIL("no memory for the freed history"), -1;
                l->f = f;
                l->fcap = c;
            }
            mt_tables_live_freed *f = &l->f[(*n)++];
            f->stamp = stamp;
            memcpy(&f->size, r + D(freed_size), 8);
            memcpy(&f->alloc_seq, r + D(freed_alloc_seq), 8);
            memcpy(&f->free_seq, r + D(freed_free_seq), 8);
            memcpy(&f->alloc_stack, r + D(freed_alloc_stack), 4);
            memcpy(&f->alloc_thread, r + D(freed_alloc_thread), 4);
            f->alloc_thread &= t->thread_mask;
            f->when = 0;
            if (D(freed_when))
                memcpy(&f->when, r + D(freed_when), 8);
        }
    }
    *out = l->f;
    return 1;
}

int mt_tables_live_seq_next(mt_tables *t, mt_tables_live *l, uint64_t **next, size_t *n)
{
    uint64_t counter;
    uint32_t highest;
    if (!mt_tables_read_u64(t, D(seq_counter), &counter) ||
        !mt_tables_read_u32(t, D(threads_highest), &highest))
        return FAIL(CORRUPT "allocation counter at %#" PRIx64 " unreadable)", D(seq_counter)), -1;
    if (!D(threads) || highest > D(threads_max))
        highest = D(threads) ? (uint32_t)D(threads_max) : 0;
    if (l->ncap < (size_t)highest + 1) {
        uint64_t *v = realloc(l->next, ((size_t)highest + 1) * sizeof *v);
        if (!v)
            return FAIL("no memory for the thread registry"), -1;
        l->next = v;
        l->ncap = (size_t)highest + 1;
    }
    l->next[0] = counter;
    uint64_t es = D(threads_entry_size), per = MT_TABLES_READ_MAX / es;
    for (uint64_t k = 0; k < highest;) {
        uint64_t c = highest - k < per ? highest - k : per;
        const char *raw = mt_tables_read_at(t, D(threads) + k * es, c * es);
        if (!raw)
            return FAIL(CORRUPT "thread registry at %#" PRIx64 " unreadable)", D(threads)), -1;
        for (uint64_t j = 0; j < c; j++) {
            uint64_t nx = counter, end = 0;
            if (D(seq_discarded)) {
                memcpy(&nx, raw + j * es + D(threads_seq_next), 8);
                memcpy(&end, raw + j * es + D(threads_seq_end), 8);
            }
            /* Outside a batch the thread takes its next one above the
             * counter. */
            l->next[k + j + 1] = end > nx && end - nx <= D(seq_batch) ? nx : counter;
        }
        k += c;
    }
    *next = l->next;
    *n = (size_t)highest + 1;
    return 1;
}

void mt_tables_live_free(mt_tables_live *l)
{
    free(l->e);
    free(l->f);
    free(l->raw[0]);
    free(l->raw[1]);
    free(l->next);
    memset(l, 0, sizeof *l);
}
