/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Heap errors (heap_error.h): the report, memtrace_on_error(), the check
 * of every block and the exit status. A report is written on memtrace's
 * stderr (mt_err_fd) by format.c's mt_fmt_heap_error, the stacks
 * symbolized in the process (mt_describe_stack); the program then goes on
 * unless MEMTRACE_ON_ERROR=abort. */
#include "report/heap_error.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/config.h"
#include "base/lock.h"
#include "base/os.h"
#include "base/output.h"
#include "base/reentry.h"
#include "capture/capture.h"
#include "capture/guard.h"
#include "capture/quarantine.h"
#include "capture/state.h"
#include "report/describe.h"
#include "report/format.h"
#include "store/live_table.h"
#include "store/threads.h"

#define MEMTRACE_DEFINING /* the definitions: no weak declarations, no macros */
#include "../../include/memtrace.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static mt_atomic(uint64_t) errors;

const uint64_t *mt_heap_errors_counter(void)
{
    return (const uint64_t *)&errors;
}

void mt_heap_errors_fork_child(void)
{
    mt_atomic_store_relaxed(&errors, 0);
}

/* The ring of records (error_record.h): slot (N - 1) % MT_ERROR_RECORDS
 * holds error N's while N > written - MT_ERROR_RECORDS; a slot's number
 * is 0 while it is written. Writers take the lock (a report is no hot
 * path); a reader out of process reads without it and trusts a slot whose
 * number is the one it expects. */
static mt_error_record records[MT_ERROR_RECORDS];
static uint64_t records_written;
static mt_lock records_lock = MT_LOCK_INIT;

const void *mt_error_records(void)
{
    return records;
}

const uint64_t *mt_error_records_count(void)
{
    return &records_written;
}

void mt_error_record_keep(mt_error_record *r)
{
    if (!mt_lock_try_for(&records_lock, 1u << 20))
        return; /* a holder that never returns (a forked child's parent) */
    uint64_t n = records_written + 1;
    mt_error_record *slot = &records[(n - 1) % MT_ERROR_RECORDS];
    __atomic_store_n(&slot->number, 0, __ATOMIC_RELEASE);
    r->number = 0;
    *slot = *r;
    __atomic_store_n(&slot->number, n, __ATOMIC_RELEASE);
    __atomic_store_n(&records_written, n, __ATOMIC_RELEASE);
    mt_lock_release(&records_lock);
}

/* E's facts, with the stack it was detected at (FRAMES, DEPTH). */
static void keep_heap_error(const struct mt_heap_error *e, const uintptr_t *frames, unsigned depth)
{
    mt_error_record r = {
        .kind = (uint64_t)e->kind,
        .access = (uint64_t)e->access,
        .ptr = e->ptr,
        .size = e->size,
        .offset = e->offset,
        .bytes = e->bytes,
        .at_least = (uint64_t)e->at_least,
        .freed = (uint64_t)e->freed,
        .alloc_seq = e->alloc_seq,
        .free_seq = e->free_seq,
        .alloc_stack = e->alloc_stack,
        .free_stack = e->free_stack,
        .alloc_thread = e->alloc_thread,
        .free_thread = e->free_thread,
        .thread = mt_thread_number(),
        .depth = depth < MT_ERROR_FRAMES ? depth : MT_ERROR_FRAMES,
    };
    if (e->where)
        snprintf(r.where, sizeof r.where, "%s", e->where);
    for (unsigned i = 0; i < r.depth; i++)
        r.frames[i] = frames[i];
    mt_error_record_keep(&r);
}

MT_EXPORT MT_NOINLINE void memtrace_on_error(void)
{
    __asm__ volatile("" ::: "memory"); /* a call gdb can break on, never folded */
}

void mt_heap_error_report(const struct mt_heap_error *e)
{
    int was = mt_enter();
    uintptr_t frames[MT_MAX_DEPTH];
    const uintptr_t *stack = e->frames;
    unsigned depth = e->depth;
    if (!stack) {
        depth = mt_capture(frames, mt_cfg.depth);
        stack = frames;
    }
    mt_fmt_heap_error_report f = {
        .kind = e->kind,
        .access = e->access,
        .ptr = e->ptr,
        .size = e->size,
        .offset = e->offset,
        .bytes = e->bytes,
        .at_least = e->at_least,
        .freed = e->freed,
        .alloc_seq = e->alloc_seq,
        .free_seq = e->free_seq,
        .alloc_thread = mt_describe_thread(e->alloc_thread),
        .free_thread = mt_describe_thread(e->free_thread),
        .thread = mt_describe_thread(mt_thread_number()),
        .alloc_stack = mt_describe_stack_ref(e->alloc_stack),
        .free_stack = mt_describe_stack_ref(e->free_stack),
        .stack = { stack, depth },
        .where = e->where,
    };
    int fd = mt_err_fd();
    if (fd >= 0) {
        /* write is a cancellation point (see bad_free.c's report). */
        int cancel;
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
        mt_out out;
        mt_out_init(&out, fd);
        mt_fmt_heap_error(&out, &f, mt_describe_stack, NULL);
        mt_out_flush(&out);
        pthread_setcancelstate(cancel, NULL);
    }
    keep_heap_error(e, stack, depth);
    mt_leave(was);
    if (!e->caller_counts)
        mt_error_reported();
}

void mt_error_reported(void)
{
    mt_atomic_add_relaxed(&errors, 1);
    memtrace_on_error();
    if (mt_cfg.on_error == MT_ON_ERROR_ABORT)
        abort();
}

/* ------------------------------------------------------------ every block */

/* The damaged blocks one check found, reported after the walk (the walk
 * holds locks the report must not wait under); past DAMAGED_MAX they are
 * counted only. */
#define DAMAGED_MAX 64

typedef struct {
    unsigned n;
    unsigned long more;
    unsigned long unmapped; /* records whose redzone is in no writable mapping */
    uint64_t untraced;      /* records not newer than this may be stale: skipped */
    struct mt_heap_error e[DAMAGED_MAX];
} damaged;

/* The process's writable mappings, read once per check (the maps parser:
 * no heap), sorted as the kernel lists them: a record a wild write of the
 * program damaged (a huge size, a pointer into nothing) must not make the
 * check read where nothing is mapped (design.adoc, trap 15). */
#define MAPPINGS_MAX 16384
static struct {
    uintptr_t start[MAPPINGS_MAX], end[MAPPINGS_MAX];
    unsigned n;
    char buf[8192];
} maps;

static bool read_maps(void)
{
    int fd = mt_os_maps_open_self();
    if (fd < 0)
        return false;
    mt_os_maps m;
    mt_os_maps_fd(&m, fd, maps.buf, sizeof maps.buf);
    mt_os_mapping r;
    maps.n = 0;
    while (maps.n < MAPPINGS_MAX && mt_os_maps_next(&m, &r))
        if (r.perms[0] == 'r' && r.perms[1] == 'w') {
            maps.start[maps.n] = r.start;
            maps.end[maps.n++] = r.end;
        }
    close(fd);
    return !m.failed;
}

/* Whether [ADDR, ADDR + LEN) lies in one writable mapping. */
static bool mapped(uintptr_t addr, size_t len)
{
    if (addr + len < addr)
        return false;
    unsigned lo = 0, hi = maps.n;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (maps.end[mid] <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < maps.n && maps.start[lo] <= addr && addr + len <= maps.end[lo];
}

static void note(damaged *d, const struct mt_heap_error *e)
{
    if (d->n < DAMAGED_MAX)
        d->e[d->n++] = *e;
    else
        d->more++;
}

/* The bytes of guard slot G's page before its live block R (a right-
 * aligned block's: an underflow there faults on no page), as the free
 * checks them (tracer.c's check_guard_page): the farthest byte written
 * gives the distance. Said once, as a redzone: mended. */
static void check_guard_head(damaged *d, const mt_live_entry *r, const mt_guard_block *g)
{
    size_t first, end, len;
    if (!mt_guard_head(g, &first, &end, &len))
        return;
    note(d, &(struct mt_heap_error){
                .kind = MT_HEAP_UNDERFLOW,
                .ptr = r->ptr,
                .size = r->size,
                .offset = -(int64_t)(len - first),
                .bytes = len - first,
                .alloc_seq = r->seq,
                .alloc_stack = r->stack,
                .alloc_thread = mt_entry_thread(r),
            });
    mt_pattern_fill((unsigned char *)r->ptr - len, len, MT_REDZONE_BYTE);
}

static void check_live(const mt_live_entry *r, void *ctx)
{
    damaged *d = ctx;
    size_t first, end, rz = mt_cfg.redzone;
    if (r->seq <= d->untraced || mt_entry_kind(r) == MT_KIND_POOL)
        return; /* a block of the program's own pool has no redzone */
    size_t next_at = 0;
    unsigned damage = 0;
    if (mt_real_glibc && !mt_cfg.sample && mt_entry_kind(r) == MT_KIND_MALLOC &&
        !mt_guard_owns((const void *)r->ptr) && r->size <= PTRDIFF_MAX && mapped(r->ptr - 16, 16) &&
        ((damage = mt_glibc_header_damage(r->ptr, r->size + rz)) ||
         (mapped(r->ptr, (r->size + rz + 23) & ~(size_t)15) &&
          !mt_glibc_next_ok_in(r->ptr, &next_at, mapped)))) {
        /* Reported at each check and at the free (which keeps the block
         * from glibc): the header cannot be mended as a redzone is. */
        note(d, &(struct mt_heap_error){
                    .kind = damage ? MT_HEAP_UNDERFLOW : MT_HEAP_OVERFLOW,
                    .ptr = r->ptr,
                    .size = r->size,
                    .offset = damage ? -(int64_t)damage : (int64_t)next_at,
                    .bytes = damage ? damage : 8,
                    .alloc_seq = r->seq,
                    .alloc_stack = r->stack,
                    .alloc_thread = mt_entry_thread(r),
                });
        return;
    }
    if (!rz)
        return;
    if (mt_guard_owns((const void *)r->ptr)) {
        /* On a guard page: no redzone, the rest of its page instead. */
        const mt_guard_block *g = mt_guard_live((const void *)r->ptr);
        if (g)
            check_guard_head(d, r, g);
        if (!g || !mt_guard_slack(g, &first, &end, &rz))
            return;
    } else if (r->size > PTRDIFF_MAX || !mapped(r->ptr + r->size, rz)) {
        d->unmapped++;
        return;
    } else if (!mt_pattern_damage((const unsigned char *)r->ptr + r->size, rz, MT_REDZONE_BYTE,
                                  &first, &end)) {
        return;
    }
    note(d, &(struct mt_heap_error){
                .kind = MT_HEAP_OVERFLOW,
                .ptr = r->ptr,
                .size = r->size,
                .offset = (int64_t)(r->size + first),
                .bytes = end - first,
                .at_least = end == rz,
                .alloc_seq = r->seq,
                .alloc_stack = r->stack,
                .alloc_thread = mt_entry_thread(r),
            });
    /* Said once: the block's free or the next check must not find it
     * again. The shard's lock is held: the block is live. */
    memset((char *)r->ptr + r->size, MT_REDZONE_BYTE, rz);
}

static void check_held(const mt_quarantine_slot *s, size_t first, size_t end, void *ctx)
{
    struct mt_heap_error report = mt_quarantine_error(s, first, end, mt_cfg.redzone, NULL);
    note(ctx, &report);
}

static void check_held_header(const struct mt_heap_error *e, void *ctx)
{
    note(ctx, e);
}

/* The "detected in" stack of a check, as the program would see it:
 * without memtrace's own frames on top and, for the check at exit, without
 * exit's machinery (exit, its handlers, ld.so's destructors, memtrace's
 * __do_global_dtors_aux): the frames from the outermost call of exit
 * (a nested exit, as the leak check's, is inside it) are dropped, so the
 * top frame is the program's call of exit, or the return from main.
 * Returns the index of the first frame kept. Calls dladdr (outside
 * malloc: the checks run with mt_busy clear). */
static unsigned program_frames(const uintptr_t *frames, unsigned depth)
{
    Dl_info self, f;
    unsigned first = 0;
    if (!dladdr((void *)program_frames, &self))
        return 0;
    for (unsigned i = 0; i < depth; i++) {
        /* A return address may be one past its call's function. */
        if (!dladdr((void *)(frames[i] - 1), &f))
            continue;
        if (f.dli_saddr == (void *)exit)
            first = i + 1;
    }
    while (first < depth && dladdr((void *)(frames[first] - 1), &f) &&
           f.dli_fbase == self.dli_fbase)
        first++;
    return first < depth ? first : 0;
}

unsigned long mt_heap_check_all(const char *where)
{
    int phase = mt_atomic_load_acquire(&mt_phase);
    if (phase < MT_READY || mt_aside)
        return 0;
    /* One check at a time, with a bounded wait: a holder in a forked
     * child's parent never returns. */
    static damaged d;
    static mt_lock one = MT_LOCK_INIT;
    if (!mt_lock_try_for(&one, 1u << 24)) {
        mt_warn("%s: another heap check is running; not checked", where);
        return 0;
    }
    d.n = 0;
    d.more = 0;
    d.unmapped = 0;
    d.untraced = mt_atomic_load_relaxed(&mt_untraced_seq);
    unsigned skipped = 0;
    if (!read_maps()) {
        mt_warn("%s: the process's mappings cannot be read; the heap is not checked", where);
        mt_lock_release(&one);
        return 0;
    }
    skipped = mt_live_foreach_locked(check_live, &d);
    if (mt_quarantine_on)
        skipped += mt_quarantine_check(check_held, check_held_header, mapped, &d);
    uintptr_t frames[MT_MAX_DEPTH];
    int was = mt_enter();
    unsigned depth = mt_capture(frames, mt_cfg.depth);
    unsigned top = d.n ? program_frames(frames, depth) : 0;
    mt_leave(was);
    for (unsigned i = 0; i < d.n; i++) {
        d.e[i].where = where;
        d.e[i].frames = frames + top;
        d.e[i].depth = depth - top;
        mt_heap_error_report(&d.e[i]);
    }
    unsigned long found = d.n + d.more;
    if (d.more)
        mt_warn("%s: %lu more damaged blocks not reported", where, d.more);
    if (d.unmapped)
        mt_warn("%s: %lu records of the live table name memory that is not mapped (damaged?): "
                "not checked",
                where, d.unmapped);
    if (skipped)
        mt_warn("%s: %u parts of the tables were busy in other threads and not checked", where,
                skipped);
    if (d.more)
        mt_atomic_add_relaxed(&errors, d.more);
    mt_lock_release(&one);
    return found; /* NOLINT(clang-analyzer-core.StackAddressEscape): D's frames are read only above */
}

MT_EXPORT int memtrace_check(void)
{
    int (*owner)(void) = mt_owner("memtrace_check");
    if (owner)
        return owner();
    unsigned long n = mt_heap_check_all("memtrace_check");
    return n > 1000000 ? 1000000 : (int)n;
}

/* ------------------------------------------------------------ at exit */

static mt_atomic(pid_t) checked_by;

static void check_at_exit(void)
{
    pid_t pid = getpid();
    if (mt_atomic_exchange_acq_rel(&checked_by, pid) == pid)
        return; /* each process once; a forked child checks for itself */
    mt_heap_check_all("exit");
}

/* After any error report, heap error or bad free (mt_error_reported), an
 * exit handler told the status exit was called with (on_exit: exit(),
 * and main's return, which is exit's). A program that already fails keeps
 * its own status: only a run that would succeed is made to fail. (_exit
 * runs no handler: its status is the program's, as it asked.) */
static void status_at_exit(int status, void *arg)
{
    (void)arg;
    if (status != 0 || mt_atomic_load_relaxed(&errors) == 0 || mt_cfg.error_exitcode == 0)
        return;
    /* As AddressSanitizer: the status says heap errors were found, unless
     * the leak check's asked first (mt_os_exit_with: exit again, not
     * _exit, so glibc runs the handlers still to come, flushes stdio
     * without waiting on another thread's lock and exits with the status
     * asked; the leak check's exit comes here with its own status, which
     * stands). Registered at start-up, this handler runs after the
     * program's and its destructors (ld.so's, which glibc registers after
     * memtrace's constructor); registered by a late load (memtrace
     * attach), before them, which must still run. */
    mt_os_exit_with(mt_cfg.error_exitcode);
}

void mt_heap_errors_register_status(void)
{
    on_exit(status_at_exit, NULL);
}

void mt_heap_errors_register_check(void)
{
    if (mt_cfg.redzone || mt_cfg.quarantine)
        atexit(check_at_exit);
}
