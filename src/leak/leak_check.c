/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The leak check at exit (leak_check.h): stops the process's other
 * threads (base/stop_world.c), gathers its roots (scan/leak_gather.c, with
 * the process itself as the source: leak_self.c), takes the live blocks,
 * runs the scan (scan/leak_scan.c), lets the threads go, and reports
 * (leak_report.c).
 *
 * A thread that does not stop within half a second (it blocks the signal,
 * or is exiting) is scanned without its registers, from the stack pointer
 * /proc/self/task/TID/syscall shows when it waits in a system call, and
 * the report says so: what it alone holds may be counted lost.
 *
 * Nothing here runs before the threads are stopped that could wait for a
 * stopped thread: the loader's lock (dl_iterate_phdr, dlsym) is taken
 * before they are stopped, the live table is read with mt_live_foreach's
 * bounded wait, and the report is written after they go on. */
#include "leak/leak_check.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/config.h"
#include "base/lock.h"
#include "base/os.h"
#include "base/output.h"
#include "base/reentry.h"
#include "base/stop_world.h"
#include "leak/leak_client.h"
#include "leak/leak_report.h"
#include "leak/leak_self.h"
#include "leak/suppressions.h"
#include "profile/profiler.h"
#include "report/describe.h"
#include "report/format.h"
#include "scan/leak_gather.h"
#include "scan/leak_scan.h"
#include "store/live_table.h"
#include "store/recording_words.h"
#include "store/stack_store.h"
#include "store/threads.h"
#include "symbolize/symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

/* ------------------------------------------------------------ memory */

/* Reads the whole of PATH (the suppressions) into a fresh
 * mapping with raw calls; NULL on failure, errno set. *LEN excludes the
 * NUL written after the text. */
static char *read_file(const char *path, size_t *len, size_t *mapped)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = mt_leak_map_bytes(cap);
    while (buf) {
        if (n + 1 == cap) {
            char *bigger = mt_leak_map_bytes(cap * 2);
            if (bigger)
                memcpy(bigger, buf, n);
            munmap(buf, cap);
            buf = bigger;
            cap *= 2;
            if (!buf)
                break;
        }
        ssize_t got = read(fd, buf + n, cap - 1 - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int err = errno;
            munmap(buf, cap);
            buf = NULL;
            errno = err;
            break;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    if (!buf)
        return NULL;
    buf[n] = '\0';
    *len = n;
    *mapped = cap;
    return buf;
}

/* ------------------------------------------------------------ roots */

struct roots {
    mt_leak_vec regions; /* mt_leak_root */
    mt_leak_vec words;   /* uintptr_t: registers */
    bool failed;         /* a push found no memory: the verdict is not whole */
};

/* mt_leak_gathered.add_root: one more region (leak_roots.h decides which). */
static void push_region(void *ctx, const mt_leak_root *root)
{
    struct roots *r = ctx;
    mt_leak_root *p = mt_leak_vec_push(&r->regions);
    if (p)
        *p = *root;
    else
        r->failed = true;
}

static void add_word(void *ctx, uintptr_t w)
{
    struct roots *r = ctx;
    uintptr_t *p = mt_leak_vec_push(&r->words);
    if (p)
        *p = w;
    else
        r->failed = true;
}

/* ------------------------------------------------------------ suppressions */

static char suppressions_path[1024];

/* Reads MEMTRACE_SUPPRESSIONS into a mapping of MT_SUPPRESSIONS_MAX
 * entries (*OUT, NULL if none); one warning for a file that cannot be read,
 * one per bad line (which is then ignored). Returns how many. */
static size_t load_suppressions(mt_suppression **out)
{
    *out = NULL;
    if (!suppressions_path[0])
        return 0;
    size_t len, mapped;
    char *text = read_file(suppressions_path, &len, &mapped);
    if (!text) {
        mt_warn("MEMTRACE_SUPPRESSIONS: cannot read %s (%s); no suppressions", suppressions_path,
                strerror(errno));
        return 0;
    }
    mt_suppression *s = mt_leak_map_bytes(MT_SUPPRESSIONS_MAX * sizeof *s);
    size_t n = s ? mt_suppressions_parse(suppressions_path, text, len, s) : 0;
    munmap(text, mapped);
    *out = s;
    return n;
}

static void copy_block(const mt_live_entry *e, void *ctx)
{
    mt_leak_vec *v = ctx;
    if (v->n == v->cap)
        return; /* more than counted: a thread was stopped inside insert */
    mt_leak_block *b = (mt_leak_block *)v->p + v->n++;
    const uintptr_t *frames;
    /* Stack 0 is a capture the store could not keep; any other id the
     * store never gave out comes from a damaged entry. */
    bool impossible = e->stack && !mt_stack_get(e->stack, &frames);
    *b = (mt_leak_block){ .ptr = e->ptr,
                          .size = e->size,
                          .stack = e->stack,
                          .flags = (impossible ? MT_LEAK_FLAG_DAMAGED : 0) |
                                   (mt_entry_kind(e) == MT_KIND_POOL ? MT_LEAK_FLAG_POOL : 0) };
}

/* mt_leak_report_input's callbacks for the process itself. */
static unsigned stack_of(void *ctx, uint32_t id, const uintptr_t **frames)
{
    (void)ctx;
    mt_fmt_stack_ref s = mt_describe_stack_ref(id);
    *frames = s.frames;
    return s.depth;
}

static size_t match_self(void *ctx, const uintptr_t *frames, unsigned depth,
                         const mt_suppression *sup, size_t nsup)
{
    (void)ctx;
    if (!mt_sym_self_lock())
        return nsup;
    size_t found = mt_leak_match_frames(mt_sym_self(), true, frames, depth, sup, nsup);
    mt_sym_self_unlock();
    return found;
}

/* Everything the check writes (leak_report.c). Returns the lost bytes left
 * after the suppressions. */
static uint64_t report(mt_leak_block *blocks, size_t n, const mt_leak_totals *t, size_t nroots,
                       const mt_leak_unstopped *un, size_t nun, const char *incomplete)
{
    mt_suppression *sup;
    size_t nsup = load_suppressions(&sup);
    mt_leak_note notes[64];
    size_t nnotes = 0;
    for (size_t i = 0; i < nun && nnotes < sizeof notes / sizeof *notes; i++)
        notes[nnotes++] =
            (mt_leak_note){ (uint32_t)un[i].tid,
                            un[i].stack_scanned
                                ? "its stack was scanned from the stack pointer of its "
                                  "system call, its registers were not"
                                : "its stack, registers and TLS were not scanned" };
    mt_leak_report_input in = {
        .pid = (int)getpid(),
        .blocks = blocks,
        .nblocks = n,
        .totals = t,
        .nroots = nroots,
        .max_groups = SIZE_MAX,
        .sup = sup,
        .nsup = nsup,
        .stack = stack_of,
        .match = match_self,
        .put_stack = mt_describe_stack,
        .notes = notes,
        .nnotes = nnotes,
        .incomplete = incomplete     ? incomplete
                      : nnotes < nun ? "more threads did not stop than can be named here; theirs "
                                       "were not scanned"
                                     : NULL,
    };
    mt_out o;
    bool own;
    mt_profiler_output_open(&o, &own);
    /* Blocks allocated while recording was off are not in the scan: say so
     * first, the summary line stays last. */
    mt_describe_recording(&o);
    /* Sample mode: what the verdicts can and cannot say, before them. */
    if (mt_cfg.sample)
        mt_out_printf(&o,
                      "memtrace: leak check of sampled blocks only (MEMTRACE_SAMPLE=%lu): "
                      "unsampled blocks are neither checked nor scanned, so a block reached "
                      "only through one is reported lost; \"definitely lost\" means lost or "
                      "held by unsampled blocks\n",
                      (unsigned long)mt_cfg.sample);
    uint64_t lost = mt_leak_report(&o, &in);
    mt_profiler_output_close(&o, own);
    if (sup)
        munmap(sup, MT_SUPPRESSIONS_MAX * sizeof *sup);
    return lost;
}

/* ------------------------------------------------------------ the check */

/* The verdict of this process's scan, made once (scan_once) and then read
 * by the profiler's exit report (leak_classes_of) and written out by the
 * last exit handler. Only the exiting thread touches it. */
static struct {
    pid_t pid;    /* the process that made it; 0: none yet */
    bool scanned; /* false: why_not says why there is no verdict */
    const char *why_not;
    mt_leak_vec blocks; /* mt_leak_block, sorted by (stack, class) */
    mt_leak_totals t;
    size_t nroots;
    mt_leak_vec un;         /* mt_leak_unstopped */
    const char *incomplete; /* mt_leak_report_input.incomplete */
} verdict = { .blocks = { .item = sizeof(mt_leak_block) },
              .un = { .item = sizeof(mt_leak_unstopped) } };

/* The blocks of the live table into VERDICT.blocks, flagged (damaged, the
 * dynamic linker's); false if there was no memory for them. */
/* HEAP: memtrace was attached to this process and the maps were read, so
 * the allocator's heap outside the known blocks is a root (leak_roots.h). */
static bool take_blocks(const mt_leak_source *src, const mt_leak_gathered *g, bool heap)
{
    mt_leak_vec *blocks = &verdict.blocks;
    size_t cap = mt_live_count() + 4096;
    blocks->p = mt_leak_map_bytes(cap * sizeof(mt_leak_block));
    blocks->cap = blocks->p ? cap : 0;
    if (!blocks->p)
        return false;
    bool unlocked = false;
    mt_live_foreach(copy_block, blocks, &unlocked);
    mt_leak_gather_linker_blocks(src, g, (mt_leak_block *)blocks->p, blocks->n);
    if (heap)
        mt_leak_gather_heap(src, g, (mt_leak_block *)blocks->p, blocks->n);
    /* Sorted now (the scan's own sort then makes one pass) for the
     * blocks the program ignored (memtrace_ignore_object). */
    mt_leak_sort((mt_leak_block *)blocks->p, blocks->n);
    mt_leak_client_ignored((mt_leak_block *)blocks->p, blocks->n);
    return true;
}

/* Makes this process's verdict, once (a forked child makes its own; a
 * check the program asks for, memtrace_leak_check, makes one anew). Call
 * inside memtrace (mt_enter) with cancellation disabled. The calling
 * thread's stack is scanned from STACK_FROM, the frame of the exit handler
 * that asks: what lies below it is memtrace's own frames, and dead frames
 * of the program's (main's among them) whose stale pointers would keep
 * lost blocks. UC holds the registers the handler was entered with (its
 * callers' callee-saved values; getcontext as the handler's first act). */
static MT_NOINLINE void scan_once(const ucontext_t *uc, uintptr_t stack_from)
{
    pid_t pid = getpid();
    if (verdict.pid == pid)
        return;
    mt_leak_vec_free(&verdict.blocks);
    mt_leak_vec_free(&verdict.un);
    verdict.pid = pid;

    struct roots r = { .regions = { .item = sizeof(mt_leak_root) },
                       .words = { .item = sizeof(uintptr_t) } };
    mt_leak_self me;
    mt_leak_source src = mt_leak_self_begin(&me, uc, stack_from, &verdict.un);
    mt_leak_gathered g = { push_region, add_word, &r, 0, 0, 0 };
    /* Under the loader's lock, while no thread is stopped. */
    mt_leak_gather_modules(&src, &g);
    mt_leak_client_roots(push_region, &r); /* memtrace_register_root_region's */
    bool listed = mt_world_stop(mt_threads_is_own);

    /* From here until mt_world_resume: no allocation, no lock without a
     * bound (a stopped thread may hold any). */
    bool ok = mt_leak_self_stopped(&me, &src);
    if (ok)
        mt_leak_gather_threads(&src, &g);
    bool attached = mt_atomic_load_relaxed(&mt_recording_state.ever_off) & MT_REC_ATTACHED;
    bool have_blocks = take_blocks(&src, &g, ok && attached);
    mt_leak_vec *blocks = &verdict.blocks;
    mt_leak_input in = {
        .blocks = (mt_leak_block *)blocks->p,
        .nblocks = blocks->n,
        .roots = (const mt_leak_root *)r.regions.p,
        .nroots = r.regions.n,
        .words = (const uintptr_t *)r.words.p,
        .nwords = r.words.n,
        .read = mt_leak_read_self,
        .read_ctx = &me,
        .region = mt_leak_region_self,
        .vtable = mt_leak_vtable_self,
    };
    verdict.scanned = ok && have_blocks && mt_leak_scan(&in, &verdict.t);
    if (verdict.scanned)
        blocks->n -= verdict.t.damaged + verdict.t.pool_storage; /* dropped: past the kept */
    mt_world_resume();

    verdict.why_not = !ok ? "/proc/thread-self/maps could not be read" : "no memory for its tables";
    verdict.nroots = r.regions.n;
    verdict.incomplete = !listed    ? "the threads could not all be listed (/proc/self/task), "
                                      "so some were neither stopped nor scanned"
                         : r.failed ? "memory for the list of roots ran out, some were not scanned"
                                    : NULL;
    if (verdict.scanned)
        mt_leak_sort_by_stack((mt_leak_block *)blocks->p, blocks->n);
    mt_leak_vec_free(&r.regions);
    mt_leak_vec_free(&r.words);
    mt_leak_self_end(&me);
}

/* The profiler's exit handler asks (mt_profiler_set_leak_hooks). */
static void leak_scan_for_profiler(const ucontext_t *uc, uintptr_t stack_from)
{
    int cancel;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    int was = mt_enter();
    scan_once(uc, stack_from);
    mt_leave(was);
    pthread_setcancelstate(cancel, NULL);
}

static bool leak_classes_of(uint32_t stack, uint64_t bytes[4])
{
    bytes[0] = bytes[1] = bytes[2] = bytes[3] = 0;
    if (verdict.pid != getpid() || !verdict.scanned)
        return false;
    const mt_leak_block *b = (const mt_leak_block *)verdict.blocks.p;
    size_t lo = 0, hi = verdict.blocks.n; /* the first block of STACK */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b[mid].stack < stack)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < verdict.blocks.n && b[i].stack == stack; i++)
        bytes[b[i].class] += b[i].size;
    return true;
}

static mt_atomic(pid_t) checked_by;

/* The last exit handler's work: the verdict (made now unless the
 * profiler's exit report made it), the report, and the status. */
static MT_NOINLINE void leak_check(const ucontext_t *uc, uintptr_t stack_from)
{
    pid_t pid = getpid();
    if (mt_atomic_exchange_acq_rel(&checked_by, pid) == pid)
        return; /* each process once; a forked child checks for itself */
    int cancel;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    int was = mt_enter();
    scan_once(uc, stack_from);
    uint64_t lost = 0;
    if (!verdict.scanned)
        mt_warn("leaks: the leak check could not run (%s); no verdict", verdict.why_not);
    else
        lost = report((mt_leak_block *)verdict.blocks.p, verdict.blocks.n, &verdict.t,
                      verdict.nroots, (const mt_leak_unstopped *)verdict.un.p, verdict.un.n,
                      verdict.incomplete);
    mt_leave(was);
    pthread_setcancelstate(cancel, NULL);
    if (lost && mt_cfg.leak_exitcode) {
        /* As LeakSanitizer: the status says leaks remain (over the heap
         * errors' status, asked after). What the program wrote to stdio
         * buffers still goes out first, as exit does it. */
        mt_os_exit_with(mt_cfg.leak_exitcode);
    }
}

static void leak_check_at_exit(void)
{
    ucontext_t uc;
    if (getcontext(&uc) != 0) /* first, while the callers' registers are intact */
        memset(&uc, 0, sizeof uc);
    leak_check(&uc, (uintptr_t)__builtin_frame_address(0));
}

/* The suppressions' path, read once: by the registration at start-up, or
 * by the first check the program asks for when the check at exit is off. */
static void read_suppressions_path(void)
{
    static mt_atomic(int) done;
    if (mt_atomic_exchange_acq_rel(&done, 1) == 0)
        mt_setting_path(MT_SET_SUPPRESSIONS, suppressions_path, sizeof suppressions_path,
                        "no suppressions");
}

static mt_lock asked;

uint64_t mt_leak_check_now(const ucontext_t *uc, uintptr_t stack_from)
{
    read_suppressions_path();
    int cancel;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    mt_lock_acquire(&asked); /* one check at a time: they share the verdict */
    int was = mt_enter();
    verdict.pid = 0; /* made anew, and again at exit */
    scan_once(uc, stack_from);
    uint64_t lost = 0;
    if (!verdict.scanned)
        mt_warn("memtrace_leak_check: the leak check could not run (%s); no verdict",
                verdict.why_not);
    else
        lost = report((mt_leak_block *)verdict.blocks.p, verdict.blocks.n, &verdict.t,
                      verdict.nroots, (const mt_leak_unstopped *)verdict.un.p, verdict.un.n,
                      verdict.incomplete);
    verdict.pid = 0;
    mt_leave(was);
    mt_lock_release(&asked);
    pthread_setcancelstate(cancel, NULL);
    return lost;
}

void mt_leak_check_register(void)
{
    read_suppressions_path();
    atexit(leak_check_at_exit);
    static const mt_leak_hooks hooks = { leak_scan_for_profiler, leak_classes_of };
    mt_profiler_set_leak_hooks(&hooks);
}
