/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The profiler build's site totals, the exact peak and the per-site
 * snapshot at the peak (see site.h). Built into libmemtrace-profiler.so
 * only. */
#include "store/site.h"

#include "base/atomic.h"
#include "base/lock.h"
#include "base/os.h"
#include "base/reentry.h"

#include <pthread.h>
#include <sys/mman.h>

mt_atomic(uint64_t) mt_site_live_total;
mt_atomic(uint64_t) mt_site_peak_total;
mt_atomic(uint64_t) mt_site_peak_ns;
mt_atomic(uint64_t) mt_site_peak_epoch = 1;
MT_TLS mt_temp_state mt_site_latest;
MT_TLS mt_site_table *mt_site_mine;
/* Zero, in .bss: 256 KiB of chunk pointers of which a run reads the first
 * few; initialized data would be read from the file, every page around a
 * read mapped with it. Its owner stays 0 ("free"), which nothing reads:
 * claim only takes tables from mt_site_tables, which it is not on. */
mt_site_table mt_site_shared;
mt_atomic(mt_site_table *) mt_site_tables;

/* ------------------------------------------------------------ tables */

/* The thread's exit destructor ran: its changes go to the shared table. */
static MT_TLS bool mine_gone;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static bool exit_key_made;

static void make_exit_key(void);

/* Not mt_os_map: failing to map must not stop counting (the shared table
 * takes the change). Pages are touched only as entries are used. */
static void *map_zeroed(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* The thread ends: its table is free for the next thread to start, counts
 * and all (they stay summed by every read). Its later changes (later
 * destructors) go to the shared table. */
static void on_thread_exit(void *table)
{
    mt_site_table *t = table;
    mine_gone = true;
    mt_site_mine = NULL;
    mt_atomic_store_release(&t->owner, 0);
}

static void make_exit_key(void)
{
    exit_key_made = pthread_key_create(&exit_key, on_thread_exit) == 0;
}

/* A free table taken over, or a new one; NULL if none can be mapped. */
static mt_site_table *claim(void)
{
    int tid = mt_lock_token();
    mt_site_table *t;
    for (t = mt_atomic_load_acquire(&mt_site_tables); t; t = t->next) {
        int expected = 0;
        if (mt_atomic_load_relaxed(&t->owner) == 0 &&
            mt_atomic_cas_acq_rel(&t->owner, &expected, tid))
            break;
    }
    if (!t) {
        t = map_zeroed(sizeof *t);
        if (!t)
            return NULL;
        mt_atomic_store_relaxed(&t->owner, tid);
        mt_site_table *head = mt_atomic_load_relaxed(&mt_site_tables);
        do
            t->next = head;
        while (!mt_atomic_cas_weak_release(&mt_site_tables, &head, t));
    }
    /* pthread_setspecific may allocate (keys past the first 32): from the
     * internal heap. Without a key the table stays this thread's. */
    int was = mt_enter();
    pthread_once(&exit_key_once, make_exit_key);
    if (exit_key_made)
        pthread_setspecific(exit_key, t);
    mt_leave(was);
    return t;
}

/* A signal handler on this thread may run in the middle (note_freed counts
 * outside mt_busy): it then claims a table of its own, which this call
 * replaces (that one stays owned, and summed), or maps the same chunk,
 * which the compare-and-swap publishes once. */
mt_site_counters *mt_site_own_slow(uint32_t n)
{
    if (mine_gone || n == UINT32_MAX)
        return NULL;
    mt_site_table *t = mt_site_mine;
    if (!t) {
        t = claim();
        if (!t) {
            mine_gone = true;
            return NULL;
        }
        mt_site_mine = t;
    }
    mt_atomic(mt_site_counters *) *slot = &t->chunks[n >> MT_SITE_CHUNK_BITS];
    mt_site_counters *chunk = mt_atomic_load_acquire(slot);
    if (!chunk) {
        size_t bytes = (MT_SITE_CHUNK_MASK + (size_t)1) * sizeof *chunk;
        mt_site_counters *fresh = map_zeroed(bytes);
        if (!fresh)
            return NULL;
        chunk = NULL;
        if (mt_atomic_cas_acq_rel(slot, &chunk, fresh))
            chunk = fresh;
        else
            munmap(fresh, bytes);
    }
    return &chunk[n & MT_SITE_CHUNK_MASK];
}

/* The shared table's entry N, mapped if need be; NULL if it cannot be. */
static mt_site_counters *shared_entry(uint32_t n, bool make)
{
    mt_atomic(mt_site_counters *) *slot = &mt_site_shared.chunks[n >> MT_SITE_CHUNK_BITS];
    mt_site_counters *chunk = mt_atomic_load_acquire(slot);
    if (!chunk && make) {
        size_t bytes = (MT_SITE_CHUNK_MASK + (size_t)1) * sizeof *chunk;
        mt_site_counters *fresh = map_zeroed(bytes);
        if (!fresh)
            return NULL;
        if (mt_atomic_cas_acq_rel(slot, &chunk, fresh))
            chunk = fresh;
        else
            munmap(fresh, bytes);
    }
    return chunk ? &chunk[n & MT_SITE_CHUNK_MASK] : NULL;
}

MT_COLD void mt_site_shared_add(uint32_t n, uint64_t bytes, uint64_t blocks, bool freed, bool temp)
{
    mt_site_counters *c = shared_entry(n, true);
    if (!c)
        return; /* no memory at all: the change is not counted */
    mt_site_touch(c);
    if (temp)
        mt_atomic_add_relaxed(&c->temp_blocks, 1);
    mt_atomic_add_relaxed(freed ? &c->freed_bytes : &c->alloc_bytes, bytes);
    mt_atomic_add_relaxed(freed ? &c->freed_blocks : &c->alloc_blocks, blocks);
}

/* Hot path, out of line: LIVE passed the peak. The epoch is bumped after
 * the peak is raised, by the thread that raised it, before it changes any
 * site again.
 *
 * Single-threaded, the snapshot is exact: the allocation that raised the
 * peak has already counted in its site, no site changes between that and
 * the bump, and every later change to a site saves the site's value first.
 * With other threads, a change that read the old epoch just before the
 * bump and lands in its site just after it is not saved: that site's
 * snapshot then includes the change. So each site's snapshot is its value
 * at the peak give or take the operations on it that were in flight in
 * other threads at that moment (as the peak total itself is: the live total
 * is counted apart from the sites), and a raise of the peak that races
 * with a greater one may leave its epoch after the greater one's (the
 * snapshot is then of the smaller raise's moment). */
MT_COLD void mt_site_new_peak(uint64_t live)
{
    uint64_t p = mt_atomic_load_relaxed(&mt_site_peak_total);
    while (live > p) {
        if (mt_atomic_cas_weak_relaxed(&mt_site_peak_total, &p, live)) {
            mt_atomic_add_relaxed(&mt_site_peak_epoch, 1);
            mt_atomic_store_relaxed(&mt_site_peak_ns, mt_os_now_ns());
            return;
        }
    }
}

/* The epoch a forked child restarted the peak at (0 in the process the
 * program started as): a claim of an older epoch in a child was left half
 * done by a thread gone with the fork, and would keep every later save off
 * the site. */
static mt_atomic(uint64_t) restart_epoch;

/* Also: the tables of the threads that did not come along are free for
 * the child's threads (their counts stay). */
void mt_site_restart_peak(uint64_t now)
{
    for (mt_site_table *t = mt_atomic_load_acquire(&mt_site_tables); t; t = t->next)
        if (t != mt_site_mine)
            mt_atomic_store_relaxed(&t->owner, 0);
    mt_atomic_store_relaxed(&mt_site_peak_total, mt_atomic_load_relaxed(&mt_site_live_total));
    uint64_t epoch = mt_atomic_add_relaxed(&mt_site_peak_epoch, 1) + 1;
    mt_atomic_store_relaxed(&restart_epoch, epoch);
    mt_atomic_store_relaxed(&mt_site_peak_ns, now);
}

MT_NOINLINE void mt_site_temporary(mt_stack_id id)
{
    uint32_t n = mt_stack_site_number(id);
    if (n == UINT32_MAX)
        return;
    mt_site_counters *c = mt_site_own(n);
    if (c)
        mt_site_local_add(&c->temp_blocks, 1);
    else if ((c = shared_entry(n, true)) != NULL)
        mt_atomic_add_relaxed(&c->temp_blocks, 1);
}

static uint64_t live_of(uint64_t alloc, uint64_t freed)
{
    return alloc > freed ? alloc - freed : 0;
}

/* Hot path, out of line: the first change to C since the peak of EPOCH.
 * The counts are read first, then the site is claimed for EPOCH
 * (compare-and-swap from the tag this thread found stale), then they are
 * stored before the tag (release): a reader that sees the tag sees them.
 * Only the claim's winner stores: a thread that decided to save on a stale
 * tag but lost the race (or came after the save and the changes that
 * followed it) must not overwrite the snapshot with a later value; every
 * change by another thread comes after its own failed claim or after it
 * saw the claim, so after the winner's read. An older epoch's save in
 * progress (a tag with MT_SITE_PEAK_SAVING below EPOCH) is not claimed
 * over, its stores would land on this one's: this change then counts in
 * the snapshot, as one in flight at the peak does; but one from before a
 * fork, in the child, is (see restart_epoch). */
MT_COLD void mt_site_save_peak(mt_site_counters *c, uint64_t epoch)
{
    uint64_t tag = mt_atomic_load_relaxed(&c->peak_epoch);
    uint64_t of = tag & ~MT_SITE_PEAK_SAVING;
    if (of >= epoch)
        return; /* claimed or saved already */
    if ((tag & MT_SITE_PEAK_SAVING) && of >= mt_atomic_load_relaxed(&restart_epoch))
        return; /* an older save in progress, not an orphan of a fork */
    uint64_t fb = mt_atomic_load_relaxed(&c->freed_bytes);
    uint64_t fn = mt_atomic_load_relaxed(&c->freed_blocks);
    uint64_t ab = mt_atomic_load_relaxed(&c->alloc_bytes);
    uint64_t an = mt_atomic_load_relaxed(&c->alloc_blocks);
    /* acq_rel: the reads above stay before the claim. */
    if (!mt_atomic_cas_acq_rel(&c->peak_epoch, &tag, epoch | MT_SITE_PEAK_SAVING))
        return;
    mt_atomic_store_relaxed(&c->peak_bytes, live_of(ab, fb));
    mt_atomic_store_relaxed(&c->peak_blocks, live_of(an, fn));
    mt_atomic_store_release(&c->peak_epoch, epoch);
}

MT_COLD void mt_site_own_save(mt_site_counters *c, uint64_t epoch)
{
    uint64_t fb = mt_atomic_load_relaxed(&c->freed_bytes);
    uint64_t fn = mt_atomic_load_relaxed(&c->freed_blocks);
    mt_atomic_store_relaxed(&c->peak_bytes, live_of(mt_atomic_load_relaxed(&c->alloc_bytes), fb));
    mt_atomic_store_relaxed(&c->peak_blocks, live_of(mt_atomic_load_relaxed(&c->alloc_blocks), fn));
    mt_atomic_store_release(&c->peak_epoch, epoch);
}

void mt_site_peak_of(const mt_site_counters *c, uint64_t *bytes, uint64_t *blocks)
{
    uint64_t epoch = mt_atomic_load_relaxed(&mt_site_peak_epoch);
    /* Pairs with the release in mt_site_save_peak. */
    if (mt_atomic_load_acquire(&c->peak_epoch) == epoch) {
        *bytes = mt_atomic_load_relaxed(&c->peak_bytes);
        *blocks = mt_atomic_load_relaxed(&c->peak_blocks);
        return;
    }
    uint64_t fb = mt_atomic_load_relaxed(&c->freed_bytes);
    uint64_t fn = mt_atomic_load_relaxed(&c->freed_blocks);
    *bytes = live_of(mt_atomic_load_relaxed(&c->alloc_bytes), fb);
    *blocks = live_of(mt_atomic_load_relaxed(&c->alloc_blocks), fn);
}

struct peak_walk {
    mt_site_peak_fn *fn;
    void *ctx;
};

/* Entry N of table T, NULL if T never counted it. */
static const mt_site_counters *entry_of(const mt_site_table *t, uint32_t n)
{
    const mt_site_counters *chunk = mt_atomic_load_acquire(&t->chunks[n >> MT_SITE_CHUNK_BITS]);
    return chunk ? &chunk[n & MT_SITE_CHUNK_MASK] : NULL;
}

/* Every table: the shared one, then every thread's, newest first. */
/* NOLINTBEGIN(bugprone-macro-parentheses): T names the loop's variable */
#define EACH_TABLE(t)                                 \
    for (const mt_site_table *t = &mt_site_shared; t; \
         t = t == &mt_site_shared ? mt_atomic_load_acquire(&mt_site_tables) : t->next)
/* NOLINTEND(bugprone-macro-parentheses) */

/* A table counts each of a site's words apart, so the sums are read in two
 * passes: every table's frees, then (after a full fence) every table's
 * allocations; a block freed by one thread after the first pass has its
 * allocation, which came before the free, seen by the second, whatever
 * thread made it. */
bool mt_site_read(mt_stack_id id, mt_site_counters *out)
{
    uint32_t n = mt_stack_site_number(id);
    if (n == UINT32_MAX) {
        *out = (mt_site_counters){ 0 };
        return false;
    }
    mt_site_read_number(n, out);
    return true;
}

void mt_site_read_number(uint32_t n, mt_site_counters *out)
{
    *out = (mt_site_counters){ 0 };
    EACH_TABLE(t)
    {
        const mt_site_counters *c = entry_of(t, n);
        if (!c)
            continue;
        out->temp_blocks += mt_atomic_load_relaxed(&c->temp_blocks);
        out->freed_bytes += mt_atomic_load_relaxed(&c->freed_bytes);
        out->freed_blocks += mt_atomic_load_relaxed(&c->freed_blocks);
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    EACH_TABLE(t)
    {
        const mt_site_counters *c = entry_of(t, n);
        if (!c)
            continue;
        out->alloc_bytes += mt_atomic_load_relaxed(&c->alloc_bytes);
        out->alloc_blocks += mt_atomic_load_relaxed(&c->alloc_blocks);
        uint64_t bytes, blocks;
        mt_site_peak_of(c, &bytes, &blocks);
        out->peak_bytes += bytes;
        out->peak_blocks += blocks;
    }
}

static void peak_one(mt_stack_id id, const uintptr_t *frames, unsigned depth, void *ctx)
{
    struct peak_walk *w = ctx;
    mt_site_counters c;
    if (mt_site_read(id, &c) && c.peak_bytes)
        w->fn(id, frames, depth, c.peak_bytes, c.peak_blocks, w->ctx);
}

void mt_site_peak_foreach(mt_site_peak_fn *fn, void *ctx)
{
    struct peak_walk w = { fn, ctx };
    mt_stack_foreach(peak_one, &w);
}
