/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* When and where the library writes pprof profiles (see pprof_out.h). The
 * writer runs inside memtrace: its memory is the internal heap, never the
 * traced allocator, and the process's symbolizer is taken with its bounded
 * wait. Files are created 0600 and never through a symbolic link, as the
 * profiler's reports are: they show the program's functions and sources. */
#include "report/pprof_out.h"
#include "store/sample_weight.h"

#include "base/common.h"
#include "base/config.h"
#include "base/children_env.h"
#include "base/os.h"
#include "base/reentry.h"
#include "store/internal_heap.h"
#include "store/live_table.h"
#include "store/stack_store.h"
#include "store/threads.h"
#include "tags/tags_out.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PATH_BYTES 4096

/* Copied at start-up: the program may rewrite its environment and argv. */
static char pattern[PATH_BYTES]; /* "" = no profiles */
static char program[256];        /* for %e */
static bool every_report;
static bool pattern_has_pid, pattern_has_counter; /* %p, %n */
static pid_t start_pid;                           /* the process that read the settings */
static long written;      /* %n: profiles this process wrote (or tried to) */
static pid_t written_pid; /* the process that counted WRITTEN */

static void *heap_alloc(size_t size)
{
    return mt_iheap_alloc(size, 16);
}

static void heap_free(void *p)
{
    if (p)
        mt_iheap_free(p);
}

static const mt_pprof_heap internal_heap = { heap_alloc, heap_free };

static void write_live_at_exit(void);

void mt_pprof_out_start(bool profiler)
{
    const char *every = mt_setting_env("MEMTRACE_PPROF_EVERY");
    snprintf(program, sizeof program, "%s", program_invocation_short_name);
    start_pid = getpid();
    mt_setting_path(MT_SET_PPROF, pattern, sizeof pattern, "no pprof profiles");
    /* The programs this process execs write PATTERN.%p (children.c), as a
     * forked child does (profile_path): never this process's files. */
    static char env[sizeof "MEMTRACE_PPROF=" + PATH_BYTES + 3];
    if (pattern[0])
        mt_children_pass_on("MEMTRACE_PPROF", pattern, env, sizeof env);
    for (const char *p = pattern; *p; p++) {
        if (p[0] == '%' && p[1]) {
            pattern_has_pid |= p[1] == 'p';
            pattern_has_counter |= p[1] == 'n';
            p++;
        }
    }
    if (every && *every) {
        if (strcmp(every, "report") == 0 && profiler)
            every_report = true;
        else if (strcmp(every, "report") == 0)
            mt_warn("MEMTRACE_PPROF_EVERY=report: reports are made by the profiler build, "
                    "libmemtrace-profiler.so; this library writes the in-use profile at exit "
                    "only");
        else if (strcmp(every, "exit") != 0)
            mt_warn("MEMTRACE_PPROF_EVERY=\"%s\" is not report or exit; using exit", every);
    }
    if (pattern[0] && !profiler)
        atexit(write_live_at_exit);
}

bool mt_pprof_out_enabled(void)
{
    return pattern[0] != '\0';
}

bool mt_pprof_out_every_report(void)
{
    return every_report && pattern[0];
}

mt_pprof *mt_pprof_out_new(bool with_alloc)
{
    mt_pprof *p = mt_pprof_new(&internal_heap, with_alloc);
    if (p)
        mt_pprof_set_period(p, mt_sample_rate);
    return p;
}

/* The file of WHEN into PATH (PATH_BYTES); false when the name does not
 * fit. Counts the profile for %n. */
static bool profile_path(enum mt_pprof_when when, unsigned report, char *path)
{
    pid_t pid = getpid();
    if (written_pid != pid) { /* a forked child counts its own files */
        written_pid = pid;
        written = 0;
    }
    long n = written++;
    char base[PATH_BYTES];
    if (!mt_path_expand(pattern, program, n, base, sizeof base))
        return false;
    bool numbered = pattern_has_counter;
    char child[32] = "";
    if (pid != start_pid && !pattern_has_pid)
        snprintf(child, sizeof child, ".%d", (int)pid);
    char suffix[32] = "";
    if (!numbered && when == MT_PPROF_AT_PEAK)
        snprintf(suffix, sizeof suffix, ".peak");
    else if (!numbered && when == MT_PPROF_AT_REPORT)
        snprintf(suffix, sizeof suffix, ".%u", report);
    int len = snprintf(path, PATH_BYTES, "%s%s%s", base, child, suffix);
    return len > 0 && len < PATH_BYTES;
}

/* No symbolizing with less internal-heap headroom than a sixteenth of the
 * heap, as the profiler's reports: libdw does not survive every failed
 * allocation. */
static bool heap_low(void)
{
    return mt_iheap_headroom() < mt_iheap_capacity() / 16;
}

void mt_pprof_out_write(mt_pprof *p, enum mt_pprof_when when, unsigned report, mt_out *say,
                        int64_t duration_ns)
{
    static const char *const what[] = { "at exit", "at the peak", "report" };
    char path[PATH_BYTES];
    const char *failed = NULL;
    int fd = -1;
    if (!profile_path(when, report, path)) {
        snprintf(path, sizeof path, "%s", pattern);
        failed = "the name it expands to is too long";
    } else if (!p) {
        failed = "out of memory";
    } else if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0) {
        struct stat st;
        failed = errno == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode)
                     ? "a symbolic link; not followed"
                     : strerror(errno);
    } else {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        int64_t ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
        bool locked = !heap_low() && mt_sym_self_lock();
        mt_sym_state *dwfl = locked ? mt_sym_self() : NULL;
        /* The program's headers lie in its first mapping; raw
         * (MEMTRACE_SYMBOLIZE=later), a Mapping is the code's segment, the
         * one holding its entry point. */
        mt_pprof_main(p, (uintptr_t)getauxval(mt_sym_raw(dwfl) ? AT_ENTRY : AT_PHDR));
        failed = mt_pprof_write(p, dwfl, true, fd, ns, duration_ns);
        if (locked)
            mt_sym_self_unlock();
        if (close(fd) != 0 && !failed)
            failed = strerror(errno);
    }
    mt_pprof_free(p);
    if (say) {
        mt_out_printf(say, "memtrace: pprof profile: ");
        /* The path in pieces: it may be longer than one printf line. */
        for (size_t at = 0, len = strlen(path); at < len; at += 1024)
            mt_out_printf(say, "%.*s", (int)(len - at < 1024 ? len - at : 1024), path + at);
        if (failed)
            mt_out_printf(say, " not written (%s)\n", failed);
        else if (when == MT_PPROF_AT_REPORT)
            mt_out_printf(say, " (report %u)\n", report);
        else
            mt_out_printf(say, " (%s)\n", what[when]);
    } else if (failed) {
        mt_warn("MEMTRACE_PPROF: %.1024s not written (%s)", path, failed);
    }
}

/* ------------------------------------------------------------ live groups */

static int by_group(const void *a, const void *b)
{
    const mt_pprof_live_group *x = a, *y = b;
    uint32_t kx = x->tag ? 0x80000000u | x->tag : x->thread;
    uint32_t ky = y->tag ? 0x80000000u | y->tag : y->thread;
    if (x->stack != y->stack)
        return x->stack < y->stack ? -1 : 1;
    return kx < ky ? -1 : kx > ky;
}

/* The live table copied out, one entry per block, merged after. mt_live_foreach's
 * callback runs with a shard lock held, so it only copies into memory
 * mapped beforehand (the internal heap's lock is taken before the shards'
 * across fork: taking it here could deadlock). */
struct group_copy {
    mt_pprof_live_group *g;
    size_t n, cap;
};

static void copy_group(const mt_live_entry *e, void *ctx)
{
    struct group_copy *v = ctx;
    if (v->n < v->cap)
        v->g[v->n++] = (mt_pprof_live_group){ .stack = e->stack,
                                              .thread = mt_entry_thread(e),
                                              .tag = e->tag,
                                              .blocks = 1,
                                              .bytes = e->size };
}

mt_pprof_live_group *mt_pprof_live_groups(size_t *n, size_t *mapped)
{
    *n = *mapped = 0;
    struct group_copy v = { 0 };
    size_t cap = mt_live_count() + 4096;
    v.g = mt_os_map(cap * sizeof *v.g, "pprof profile");
    if (!v.g)
        return NULL;
    v.cap = cap;
    bool unlocked = false;
    mt_live_foreach(copy_group, &v, &unlocked);
    qsort(v.g, v.n, sizeof *v.g, by_group);
    size_t out = 0;
    for (size_t i = 0; i < v.n; i++) {
        mt_pprof_live_group b = v.g[i];
        if (mt_sample_rate) { /* as the site totals count it (sample_weight.h) */
            mt_sample_estimate est = mt_sample_scale(b.bytes, mt_sample_rate);
            b.bytes = est.bytes;
            b.blocks = est.blocks;
        }
        if (out && by_group(&v.g[out - 1], &b) == 0) {
            v.g[out - 1].blocks += b.blocks;
            v.g[out - 1].bytes += b.bytes;
        } else {
            v.g[out++] = b;
        }
    }
    *n = out;
    *mapped = cap * sizeof *v.g;
    return v.g;
}

void mt_pprof_live_groups_free(mt_pprof_live_group *g, size_t mapped)
{
    if (g)
        munmap(g, mapped);
}

bool mt_pprof_add_live_group(mt_pprof *p, const mt_pprof_live_group *g, const uintptr_t *frames,
                             unsigned depth)
{
    /* Keys apart from those of whole stacks (below 2^32): bit 63, then the
     * stack, then the tag node or the thread (bit 31 tells them apart,
     * thread numbers having 24 bits). */
    uint64_t key = 1ull << 63 | (uint64_t)g->stack << 32 |
                   (g->tag ? 0x80000000u | g->tag : g->thread);
    mt_fmt_thread t = { g->thread, mt_threads_name(g->thread) };
    mt_pprof_values val = { 0, 0, g->blocks, g->bytes };
    char tag[256];
    mt_tag_path(g->tag, tag, sizeof tag);
    return mt_pprof_add(p, key, frames, depth, t.number ? &t : NULL, &val) &&
           mt_pprof_tag(p, key, tag);
}

/* ------------------------------------------------------------ tracer build */

/* The tracer build's in-use profile at exit: the live blocks grouped by
 * allocation stack and tag scope or thread (mt_pprof_live_groups), each
 * group a sample labelled as the profiler's are. Blocks allocated
 * meanwhile by other threads past the room mapped are left out. */
static void write_live_at_exit(void)
{
    int was = mt_enter();
    size_t n = 0, mapped = 0;
    mt_pprof_live_group *g = mt_pprof_live_groups(&n, &mapped);
    mt_pprof *p = g ? mt_pprof_out_new(false) : NULL;
    for (size_t i = 0; p && i < n; i++) {
        static const uintptr_t none;
        const uintptr_t *frames = &none; /* for a stack of depth 0 */
        unsigned depth = mt_stack_get(g[i].stack, &frames);
        if (!mt_pprof_add_live_group(p, &g[i], frames, depth)) {
            mt_pprof_free(p);
            p = NULL;
        }
    }
    mt_pprof_live_groups_free(g, mapped);
    mt_pprof_out_write(p, MT_PPROF_AT_EXIT, 0, NULL, 0);
    mt_leave(was);
}
