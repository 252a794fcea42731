/* Profiler reporting, built into libmemtrace-profiler.so only (the tracer
 * build has profiler_off.c instead): a reporter thread prints the top
 * sites by live bytes, allocations or temporary allocations (MEMTRACE_TOP_BY)
 * every MEMTRACE_INTERVAL_MS, on memtrace_report() and on MEMTRACE_SIGNAL; at
 * exit the peak and the leaks, and MEMTRACE_FOLDED files (the `.peak` one
 * from site.c's exact snapshot at the peak).
 *
 * Every function here that reports runs inside memtrace (mt_enter), so its
 * own allocations (the site table, cached stack texts, libdw) come from the
 * internal heap, untraced, and never take the program's allocator locks.
 * Reports are serialised by report_lock, which is only ever taken before the
 * internal heap's lock and is held across fork (see fork_prepare). */
#include "profile/profiler.h"

#include "base/atomic.h"
#include "base/children_env.h"
#include "base/common.h"
#include "base/config.h"
#include "base/lock.h"
#include "base/os.h"
#include "base/output.h"
#include "base/reentry.h"
#include "capture/real.h"
#include "report/format.h"
#include "report/pprof_out.h"
#include "report/recording_line.h"
#include "store/internal_heap.h"
#include "store/site.h"
#include "store/stack_store.h"
#include "store/threads.h"
#include "symbolize/symbolize.h"

#include "../../include/memtrace.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h> /* snprintf only: no stdio streams */
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/futex.h>
#include <time.h>
#include <unistd.h>

/* Settings (read once in mt_profiler_start). */
static long interval_ms = 1000; /* MEMTRACE_INTERVAL_MS, 0 = no periodic report */
static long top_n = 10;         /* MEMTRACE_TOP */
static long exit_top = 1000;    /* MEMTRACE_EXIT_TOP */
static int top_by = MT_TOP_BY_LIVE; /* MEMTRACE_TOP_BY */
static int report_signal;       /* MEMTRACE_SIGNAL, 0 = none */
static const char *output_template; /* MEMTRACE_OUTPUT, NULL = stderr */
static const char *folded_template; /* MEMTRACE_FOLDED, NULL = none */

/* Paths, expanded or not, are at most PATH_BYTES - 1 bytes. */
#define PATH_BYTES 4096

/* The strings the settings need, copied at start-up: the program may
 * rewrite its environment and argv (setproctitle) or clear its environment
 * later, so nothing here points into them. */
static char output_copy[PATH_BYTES], folded_copy[PATH_BYTES];
/* MEMTRACE_FOLDED as the processes this one starts see it (see
 * pass_on_setting): "NAME=" and the template. */
static char folded_env[sizeof "MEMTRACE_FOLDED=" + PATH_BYTES + 3];
static const char *folded_child_template;
static char program_name[256]; /* for %e: program_invocation_short_name */

/* ------------------------------------------------------------ site table */

/* What the reporter keeps per stored stack, found by stack id through an
 * open-addressed index (count * 2 <= cap). Only touched under report_lock. */
struct site {
    mt_stack_id id;
    unsigned depth;
    const uintptr_t *frames;  /* in the stack store: never freed */
    mt_site_counters last;    /* counters at the last printed report */
    mt_site_counters now;     /* counters read by the current walk; its
                                 peak_bytes and peak_blocks: the site's at
                                 the latest global peak (mt_site_peak_of) */
    char *text;               /* symbolized stack, NULL until first printed */
};

/* Serialises reports, walks and the site table. An mt_lock, not a pthread
 * mutex: its word names its holder in the same atomic step that takes it
 * (lock.h), so a fork from a signal handler that interrupted this thread
 * inside a report (memtrace_report) can tell that its own interrupted code
 * holds it (fork_prepare) without a window where it cannot. A report holds
 * it for as long as symbolizing takes, so a waiter sleeps a millisecond at
 * a time rather than spinning. */
static mt_lock report_lock = MT_LOCK_INIT;

static void report_lock_take(void)
{
    while (!mt_lock_try(&report_lock)) {
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
}

static void report_lock_drop(void)
{
    mt_lock_release(&report_lock);
}

static struct site *sites;
static size_t nsites, sites_cap;
static uint32_t *site_index; /* slot: site number + 1, 0 = empty */
static size_t index_cap;

static uint32_t hash_id(mt_stack_id id)
{
    return (uint32_t)((id * 0x9E3779B97F4A7C15ull) >> 32);
}

static void index_put(uint32_t n)
{
    size_t mask = index_cap - 1;
    for (size_t i = hash_id(sites[n].id) & mask;; i = (i + 1) & mask) {
        if (site_index[i] == 0) {
            site_index[i] = n + 1;
            return;
        }
    }
}

/* The site table's first capacity, allocated at start-up (reserve_sites):
 * libdw may later exhaust the internal heap, and the exit report must still
 * list the sites. */
#define SITES_FIRST 1024

/* largest_sites' work array, one entry per site: grown with the site
 * table, so that ranking needs no memory when the heap is full. */
struct ranked {
    uint64_t key;
    struct site *site;
};
static struct ranked *rank_buf;

static void reserve_sites(void)
{
    rank_buf = malloc(SITES_FIRST * sizeof *rank_buf);
    if (!rank_buf)
        return;
    sites = malloc(SITES_FIRST * sizeof *sites);
    site_index = calloc(SITES_FIRST * 2, sizeof *site_index);
    if (!sites || !site_index) {
        free(sites);
        free(site_index);
        free(rank_buf);
        sites = NULL;
        site_index = NULL;
        rank_buf = NULL;
        return;
    }
    sites_cap = SITES_FIRST;
    index_cap = SITES_FIRST * 2;
}

/* The site of stack ID, added if new; NULL when the internal heap is full. */
static struct site *site_of(mt_stack_id id, const uintptr_t *frames, unsigned depth)
{
    if (index_cap) {
        size_t mask = index_cap - 1;
        for (size_t i = hash_id(id) & mask; site_index[i]; i = (i + 1) & mask)
            if (sites[site_index[i] - 1].id == id)
                return &sites[site_index[i] - 1];
    }
    if (nsites == sites_cap) {
        size_t cap = sites_cap ? sites_cap * 2 : SITES_FIRST;
        struct ranked *rb = realloc(rank_buf, cap * sizeof *rb);
        if (!rb)
            return NULL;
        rank_buf = rb;
        struct site *s = realloc(sites, cap * sizeof *s);
        if (!s)
            return NULL;
        sites = s;
        sites_cap = cap;
    }
    if ((nsites + 1) * 2 > index_cap) {
        size_t cap = index_cap ? index_cap * 2 : SITES_FIRST * 2;
        uint32_t *ix = calloc(cap, sizeof *ix);
        if (!ix)
            return NULL;
        free(site_index);
        site_index = ix;
        index_cap = cap;
        for (uint32_t n = 0; n < nsites; n++)
            index_put(n);
    }
    struct site *s = &sites[nsites];
    memset(s, 0, sizeof *s);
    s->id = id;
    s->frames = frames;
    s->depth = depth;
    index_put((uint32_t)nsites++);
    return s;
}

static uint64_t live_bytes(const mt_site_counters *c)
{
    return c->alloc_bytes > c->freed_bytes ? c->alloc_bytes - c->freed_bytes : 0;
}

static uint64_t live_blocks(const mt_site_counters *c)
{
    return c->alloc_blocks > c->freed_blocks ? c->alloc_blocks - c->freed_blocks : 0;
}

struct walk {
    uint64_t sum_live;  /* over all sites */
    uint64_t sum_blocks;
    uint64_t events;    /* alloc + free blocks since start, over all sites */
    size_t nlive;       /* sites holding memory */
};

static void walk_one(mt_stack_id id, const uintptr_t *frames, unsigned depth, void *ctx)
{
    struct walk *w = ctx;
    const mt_site_counters *c = mt_stack_site(id);
    struct site *s = c ? site_of(id, frames, depth) : NULL;
    if (!s)
        return;
    /* Frees first: a block freed after this read still has its allocation
     * counted, so live never reads below what it was. */
    s->now.temp_blocks = mt_atomic_load_relaxed(&c->temp_blocks);
    s->now.freed_bytes = mt_atomic_load_relaxed(&c->freed_bytes);
    s->now.freed_blocks = mt_atomic_load_relaxed(&c->freed_blocks);
    s->now.alloc_bytes = mt_atomic_load_relaxed(&c->alloc_bytes);
    s->now.alloc_blocks = mt_atomic_load_relaxed(&c->alloc_blocks);
    mt_site_peak_of(c, &s->now.peak_bytes, &s->now.peak_blocks);
    uint64_t live = live_bytes(&s->now);
    w->sum_live += live;
    w->sum_blocks += live_blocks(&s->now);
    w->events += s->now.alloc_blocks + s->now.freed_blocks;
    w->nlive += live > 0;
}

static void walk_sites(struct walk *w)
{
    memset(w, 0, sizeof *w);
    mt_stack_foreach(walk_one, w);
}

/* ------------------------------------------------------------ output */

static uint64_t start_ns;
static uint32_t reports;        /* printed in this process */
static pid_t parent_pid;        /* of a forked child, else 0 */
static int exiting;             /* the exit report is done: print nothing more */

/* PATTERN with %p, %e, %t, %% expanded (mt_path_expand), into OUT (SIZE
 * bytes); false, and OUT unusable, when the result does not fit. */
static bool expand(const char *pattern, char *out, size_t size)
{
    return mt_path_expand(pattern, program_name, -1, out, size);
}

/* The report file of this process, expanded once per process (a forked
 * child expands it again: its own %p). Opened for each report and closed
 * after, so a program that closes or reuses descriptors never gets our text
 * in its files. Always appended to, never truncated: the processes of one
 * run that share the name (forked or exec'd children, which cannot know
 * whether an ancestor wrote there before them) all keep their reports. */
static char out_path[PATH_BYTES];
static pid_t out_pid;

/* Report and folded files are created 0600 (before the umask): they show
 * the program's functions, sources and allocation patterns, which are the
 * owner's business, as in a core file. The last component of the path is
 * never followed if it is a symbolic link (O_NOFOLLOW): a link planted at a
 * predictable name in a shared directory would otherwise make the program
 * overwrite any file its user can write. */
static int open_file(const char *path, int flags)
{
    return open(path, flags | O_NOFOLLOW | O_CLOEXEC, 0600);
}

/* Whether an open of PATH failed because it is a symbolic link. */
static bool is_link(const char *path)
{
    struct stat st;
    return errno == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

/* Takes the MEMTRACE_OUTPUT file FD for one report, whole: the processes
 * that share the file (forked and exec'd children) append their reports
 * in buffer-sized writes, which would otherwise interleave mid-line. An
 * advisory lock (flock) on the open file, released when it is closed;
 * only on a regular file (not /dev/null, a FIFO or a terminal). A file
 * that cannot be locked is written unlocked. */
static void lock_output(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return;
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR)
        ;
}

/* The descriptor for a report: the MEMTRACE_OUTPUT file, else memtrace's
 * copy of the start-up stderr (mt_err_fd, -1: the report is dropped rather
 * than written into a file the program opened as fd 2). */
static int open_output(bool *own)
{
    *own = false;
    if (!output_template)
        return mt_err_fd();
    pid_t pid = getpid();
    if (out_pid != pid) {
        if (!expand(output_template, out_path, sizeof out_path)) {
            mt_warn("MEMTRACE_OUTPUT: the path expands to more than %d bytes; reporting on "
                    "stderr", PATH_BYTES - 1);
            output_template = NULL;
            return mt_err_fd();
        }
        out_pid = pid;
    }
    int fd = open_file(out_path, O_WRONLY | O_CREAT | O_APPEND);
    if (fd < 0) {
        if (is_link(out_path))
            mt_warn("MEMTRACE_OUTPUT: %s is a symbolic link; not following it; reporting on "
                    "stderr", out_path);
        else
            mt_warn("MEMTRACE_OUTPUT: cannot open %s (%s); reporting on stderr", out_path,
                    strerror(errno));
        output_template = NULL;
        return mt_err_fd();
    }
    lock_output(fd);
    *own = true;
    return fd;
}

/* A report that could not be written to the MEMTRACE_OUTPUT file went on
 * on stderr (mt_out_fall_back, which said so once); later ones go there
 * directly, as after a failed open. */
static void close_output(mt_out *o, bool own)
{
    mt_out_flush(o);
    if (!own)
        return;
    if (close(o->file) != 0 && !o->fell_back)
        mt_warn("MEMTRACE_OUTPUT: cannot write to %s (%s); the report there may be incomplete",
                out_path, strerror(errno));
    if (o->fell_back)
        output_template = NULL;
}

void mt_report_open(mt_out *o, bool *own)
{
    mt_out_init(o, open_output(own));
    if (*own)
        mt_out_fall_back(o, "MEMTRACE_OUTPUT", out_path);
}

void mt_report_close(mt_out *o, bool own)
{
    close_output(o, own);
}

/* Writes TEXT (any length) to O. */
static void out_text(mt_out *o, const char *text)
{
    size_t len = strlen(text);
    for (size_t at = 0; at < len; at += 1024)
        mt_out_printf(o, "%.*s", (int)(len - at < 1024 ? len - at : 1024), text + at);
}

/* Stack texts kept in sites[].text total at most SITE_TEXT_MAX bytes (as
 * the internal heap counts them), so that a million sites do not fill the
 * internal heap with texts; past that they are made anew each time. */
#define SITE_TEXT_MAX ((size_t)64 << 20)
static size_t site_text_kept;

/* With less internal-heap headroom than a sixteenth of the heap (256 MiB
 * of the full 4 GiB) the symbolizer stops using libdw, which would take
 * what is left: frames are module+offset from then on, said once. */
static void heap_check(void)
{
    if (mt_iheap_headroom() < mt_iheap_capacity() / 16)
        mt_sym_stop_libdw("memtrace's internal heap is nearly full");
}

/* The symbolized text of S's stack in a new block of the internal heap;
 * NULL when the symbolizer is busy or unusable, or memory is short. */
static char *symbolize_stack(const struct site *s)
{
    if (s->depth == 0 || !mt_sym_self_lock())
        return NULL;
    heap_check();
    mt_dwfl *dwfl = mt_sym_self();
    bool ok = dwfl != NULL;
    size_t len = 0, cap = 0;
    char *text = NULL;
    for (unsigned i = 0, n = 0; ok && i < s->depth; i++) {
        heap_check();
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

/* Text of S's stack ("  #N ..." lines): symbolized, and kept in S while the
 * kept texts stay under SITE_TEXT_MAX, else also returned in *MADE for the
 * caller to free after use; raw addresses in RAW (RAW_SIZE bytes) when it
 * cannot be symbolized. */
static const char *site_text(struct site *s, char **made, char *raw, size_t raw_size)
{
    *made = NULL;
    if (s->text)
        return s->text;
    char *text = symbolize_stack(s);
    if (text) {
        size_t size = malloc_usable_size(text);
        if (site_text_kept + size <= SITE_TEXT_MAX) {
            site_text_kept += size;
            s->text = text;
        } else {
            *made = text;
        }
        return text;
    }
    /* No memory for the text (or the symbolizer is busy): formatted into
     * RAW, which needs none, one frame at a time while they fit; the
     * frames libdw cannot give for want of memory are module+offset. */
    bool locked = s->depth && mt_sym_self_lock();
    mt_dwfl *dwfl = locked ? mt_sym_self() : NULL;
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

/* Set once at start-up, before the exit report can run. */
static const mt_leak_hooks *leak_hooks;

void mt_profiler_set_leak_hooks(const mt_leak_hooks *hooks)
{
    leak_hooks = hooks;
}

/* One entry: "memtrace: [RANK] ..." (a line scripts parse: its format
 * stays), the leak check's line at exit, its stack, then "  temporary: T
 * of A blocks allocated" (A as in the first line; after the stack, so that
 * the first frame still follows the first line). With SINCE_START the
 * allocated/freed/temporary counts are since start, else since the last
 * report. */
static void print_entry(mt_out *o, size_t rank, struct site *s, bool since_start)
{
    static char raw[MT_MAX_DEPTH * 32];
    mt_site_counters d = s->now;
    if (!since_start) {
        d.alloc_bytes -= s->last.alloc_bytes;
        d.alloc_blocks -= s->last.alloc_blocks;
        d.freed_bytes -= s->last.freed_bytes;
        d.freed_blocks -= s->last.freed_blocks;
        d.temp_blocks -= s->last.temp_blocks;
    }
    mt_out_printf(o,
                  "memtrace: [%zu] %lu bytes live in %lu blocks; %s: %lu bytes in %lu "
                  "blocks allocated, %lu bytes in %lu blocks freed\n",
                  rank, (unsigned long)live_bytes(&s->now), (unsigned long)live_blocks(&s->now),
                  since_start ? "since start" : "since last report",
                  (unsigned long)d.alloc_bytes, (unsigned long)d.alloc_blocks,
                  (unsigned long)d.freed_bytes, (unsigned long)d.freed_blocks);
    uint64_t cls[4];
    if (exiting && leak_hooks && leak_hooks->classes(s->id, cls))
        mt_out_printf(o, "  leak check: %lu bytes definitely lost, %lu bytes indirectly lost, "
                         "%lu bytes possibly lost, %lu bytes still reachable\n",
                      (unsigned long)cls[1], (unsigned long)cls[2], (unsigned long)cls[3],
                      (unsigned long)cls[0]);
    char *made;
    out_text(o, site_text(s, &made, raw, sizeof raw));
    free(made);
    mt_out_printf(o, "  temporary: %lu of %lu blocks allocated\n", (unsigned long)d.temp_blocks,
                  (unsigned long)d.alloc_blocks);
    if (top_by == MT_TOP_BY_PEAK)
        mt_out_printf(o, "  at the peak: %lu bytes live in %lu blocks\n",
                      (unsigned long)s->now.peak_bytes, (unsigned long)s->now.peak_blocks);
}

/* What S is ranked by, BY (an MT_TOP_BY_*), after the last walk: live
 * bytes, bytes at the peak, or its allocations or temporary allocations
 * since start (SINCE_START) or since the last report. */
static uint64_t rank_key_by(int by, const struct site *s, bool since_start)
{
    switch (by) {
    case MT_TOP_BY_ALLOCS:
        return s->now.alloc_blocks - (since_start ? 0 : s->last.alloc_blocks);
    case MT_TOP_BY_TEMPORARY:
        return s->now.temp_blocks - (since_start ? 0 : s->last.temp_blocks);
    case MT_TOP_BY_PEAK:
        return s->now.peak_bytes; /* at the latest peak, whenever asked */
    default:
        return live_bytes(&s->now);
    }
}

/* What S is ranked by in the reports (MEMTRACE_TOP_BY). */
static uint64_t rank_key(const struct site *s, bool since_start)
{
    return rank_key_by(top_by, s, since_start);
}

/* Greatest key first; ties by live bytes, then in the order the stacks
 * were stored, so that a report is the same from run to run. */
static int by_key_desc(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? 1 : -1;
    uint64_t lx = live_bytes(&x->site->now), ly = live_bytes(&y->site->now);
    if (lx != ly)
        return lx < ly ? 1 : -1;
    return x->site < y->site ? -1 : x->site > y->site;
}

/* Sites whose rank_key_by(BY) is not 0 after the last walk, greatest
 * first, at most MAX; *N gets the count. In rank_buf, valid until the next
 * call (under report_lock); NULL (and *N 0) if there is no site table. */
static struct site **largest_sites_by(int by, size_t max, bool since_start, size_t *n)
{
    *n = 0;
    struct ranked *r = rank_buf;
    if (!r)
        return NULL;
    for (size_t i = 0; i < nsites; i++) {
        uint64_t key = rank_key_by(by, &sites[i], since_start);
        if (key > 0)
            r[(*n)++] = (struct ranked){ key, &sites[i] };
    }
    qsort(r, *n, sizeof *r, by_key_desc);
    if (*n > max)
        *n = max;
    /* In place: v[i] overlaps r[i / 2], which has been read already. */
    struct site **v = (struct site **)(void *)r;
    for (size_t i = 0; i < *n; i++)
        v[i] = r[i].site;
    return v;
}

/* largest_sites_by MEMTRACE_TOP_BY. */
static struct site **largest_sites(size_t max, bool since_start, size_t *n)
{
    return largest_sites_by(top_by, max, since_start, n);
}

/* How the sites are ordered, for the headers; "" for live bytes, whose
 * headers stay as they always were. */
static const char *rank_name(bool since_start)
{
    switch (top_by) {
    case MT_TOP_BY_ALLOCS:
        return since_start ? " by allocations since start" : " by allocations since last report";
    case MT_TOP_BY_TEMPORARY:
        return since_start ? " by temporary allocations since start"
                           : " by temporary allocations since last report";
    case MT_TOP_BY_PEAK:
        return " by bytes live at the peak";
    default:
        return "";
    }
}

static void print_time(mt_out *o, uint64_t ns)
{
    uint64_t ms = ns > start_ns ? (ns - start_ns) / 1000000 : 0;
    mt_out_printf(o, "%lu.%03lu s", (unsigned long)(ms / 1000), (unsigned long)(ms % 1000));
}

struct peak_profile {
    mt_pprof *p;
};

/* mt_site_peak_fn: one site of the peak profile, its live bytes and blocks
 * at the moment of the peak (the same values as the .folded.peak file). */
static void add_peak_site(mt_stack_id id, const uintptr_t *frames, unsigned depth,
                          uint64_t bytes, uint64_t blocks, void *ctx)
{
    struct peak_profile *pp = ctx;
    mt_pprof_values v = { 0, 0, blocks, bytes };
    if (pp->p && !mt_pprof_add(pp->p, id, frames, depth, NULL, &v)) {
        mt_pprof_free(pp->p);
        pp->p = NULL;
    }
}

/* The MEMTRACE_PPROF profile of WHEN, named in SAY. At exit and per report:
 * the four sample types from the sites' counters at the last walk. At the
 * peak: in use only (inuse_objects, inuse_space), each site's value at the
 * moment of the peak (mt_site_peak_foreach); what was allocated by then is
 * not kept. Under report_lock. */
static void write_pprof(enum mt_pprof_when when, mt_out *say)
{
    if (when == MT_PPROF_AT_PEAK) {
        struct peak_profile pp = { mt_pprof_out_new(false) };
        mt_site_peak_foreach(add_peak_site, &pp);
        mt_pprof_out_write(pp.p, when, reports, say, (int64_t)(mt_os_now_ns() - start_ns));
        return;
    }
    mt_pprof *p = mt_pprof_out_new(true);
    for (size_t i = 0; p && i < nsites; i++) {
        const struct site *s = &sites[i];
        mt_pprof_values v = { s->now.alloc_blocks, s->now.alloc_bytes, live_blocks(&s->now),
                              live_bytes(&s->now) };
        if (!v.alloc_objects && !v.inuse_objects)
            continue;
        if (!mt_pprof_add(p, s->id, s->frames, s->depth, NULL, &v)) {
            mt_pprof_free(p);
            p = NULL;
        }
    }
    mt_pprof_out_write(p, when, reports, say, (int64_t)(mt_os_now_ns() - start_ns));
}

enum why { PERIODIC, ON_REQUEST, ON_SIGNAL };
static const char *const why_name[] = { "periodic", "on request", "signal" };

static uint64_t events_at_last_report;

/* Under report_lock. A periodic report in an interval where no block was
 * allocated or freed prints nothing. */
static void report_locked(enum why why)
{
    if (exiting)
        return;
    uint64_t total = mt_atomic_load_relaxed(&mt_site_live_total);
    uint64_t peak = mt_atomic_load_relaxed(&mt_site_peak_total);
    struct walk w;
    walk_sites(&w);
    if (why == PERIODIC && w.events == events_at_last_report)
        return;
    size_t n;
    struct site **top = largest_sites((size_t)top_n, false, &n);
    mt_out o;
    bool own;
    mt_report_open(&o, &own);
    mt_out_printf(&o, "memtrace: report %u (%s), pid %d, at ", ++reports, why_name[why],
                  (int)getpid());
    print_time(&o, mt_os_now_ns());
    mt_out_printf(&o, ": %lu bytes live at %zu sites, peak %lu bytes; top %zu sites%s, %s last\n",
                  (unsigned long)total, w.nlive, (unsigned long)peak, n, rank_name(false),
                  top_by == MT_TOP_BY_LIVE || top_by == MT_TOP_BY_PEAK ? "largest" : "most");
    mt_recording_say(&o);
    for (size_t i = n; i-- > 0;)
        print_entry(&o, i + 1, top[i], false);
    if (mt_pprof_out_every_report())
        write_pprof(MT_PPROF_AT_REPORT, &o);
    mt_out_printf(&o, "memtrace: end of report %u\n", reports);
    close_output(&o, own);
    for (size_t i = 0; i < nsites; i++)
        sites[i].last = sites[i].now;
    events_at_last_report = w.events;
}

/* Cancellation stays disabled from before report_lock is taken until after
 * it is released (and the symbolizer's lock with it): open and write are
 * cancellation points, and a thread cancelled inside a report would leave
 * the locks held for good. A cancel that arrives meanwhile stays pending and
 * acts at the thread's next cancellation point in the program. */
static void report(enum why why)
{
    int cancel;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    int was = mt_enter();
    report_lock_take();
    report_locked(why);
    report_lock_drop();
    mt_leave(was);
    pthread_setcancelstate(cancel, NULL);
}

/* ------------------------------------------------------------ folded */

/* Appends "f1;f2;...;fn BYTES" to O: the stack of DEPTH FRAMES as a
 * folded stack, outermost frame first. */
static void put_folded(mt_out *o, const uintptr_t *frames, unsigned depth, uint64_t bytes)
{
    bool locked = mt_sym_self_lock();
    if (locked)
        heap_check();
    mt_dwfl *dwfl = locked ? mt_sym_self() : NULL;
    for (unsigned i = depth; i-- > 0;) {
        if (dwfl)
            mt_fmt_folded_frame(o, dwfl, true, frames, i);
        else
            mt_out_printf(o, "0x%lx", (unsigned long)frames[i]);
        if (i)
            mt_out_write(o, ";", 1);
    }
    if (locked)
        mt_sym_self_unlock();
    mt_out_printf(o, " %lu\n", (unsigned long)bytes);
}

struct folded_peak {
    mt_out *o;
    uint64_t sum; /* bytes written */
};

static void put_folded_peak(mt_stack_id id, const uintptr_t *frames, unsigned depth,
                            uint64_t bytes, uint64_t blocks, void *ctx)
{
    (void)id;
    (void)blocks;
    struct folded_peak *f = ctx;
    put_folded(f->o, frames, depth, bytes);
    f->sum += bytes;
}

/* Writes one folded file, a line for every stack whose bytes are not zero:
 * at the peak (site.c's snapshot; *PEAK_SUM gets their sum) when PEAK_SUM
 * is not NULL, else after the last walk. NULL when written, else why
 * not. */
static const char *write_folded(const char *path, uint64_t *peak_sum)
{
    int fd = open_file(path, O_WRONLY | O_CREAT | O_TRUNC);
    if (fd < 0)
        return is_link(path) ? "a symbolic link; not followed" : strerror(errno);
    mt_out o;
    mt_out_init(&o, fd);
    if (peak_sum) {
        struct folded_peak f = { &o, 0 };
        mt_site_peak_foreach(put_folded_peak, &f);
        *peak_sum = f.sum;
    } else {
        for (size_t i = 0; i < nsites; i++) {
            uint64_t bytes = live_bytes(&sites[i].now);
            if (bytes)
                put_folded(&o, sites[i].frames, sites[i].depth, bytes);
        }
    }
    mt_out_flush(&o);
    if (close(fd) != 0 && !o.error)
        o.error = errno;
    return o.error ? strerror(o.error) : NULL;
}

/* ------------------------------------------------------------ exit */

/* Writes TEXT, "  #N ..." lines, to O with two more spaces before each
 * line: the stacks of the exit report's top at the peak, which scripts
 * reading the ranking's "memtrace: [N]" entries and their "  #0" lines
 * must not take for another frame of the entry above. */
static void out_text_indented(mt_out *o, const char *text)
{
    while (*text) {
        const char *nl = strchr(text, '\n');
        size_t len = nl ? (size_t)(nl - text) + 1 : strlen(text);
        mt_out_write(o, "  ", 2);
        for (size_t at = 0; at < len; at += 1024)
            mt_out_printf(o, "%.*s", (int)(len - at < 1024 ? len - at : 1024), text + at);
        text += len;
    }
}

/* The exit report's "top at the peak" (heaptrack's PEAK MEMORY CONSUMERS):
 * the MEMTRACE_TOP sites with the most bytes live at the peak (site.c's
 * snapshot, as in the .peak folded file), largest last as in the ranking,
 * each with its stack; the others summed up in one line. Lines of its own
 * ("memtrace: top ... at the peak", "memtrace: at the peak [N] ...",
 * "memtrace: end of top at the peak"), so that the ranking's lines stay as
 * they were. Left out when it would repeat the ranking: the ranking is by
 * the peak already, or by live bytes with every site's bytes and blocks of
 * the peak still live at exit (then the report is as it always was). Under
 * report_lock, after a walk. */
static void print_top_at_peak(mt_out *o, uint64_t peak, uint64_t at)
{
    if (top_by == MT_TOP_BY_PEAK || peak == 0)
        return;
    bool same = top_by == MT_TOP_BY_LIVE;
    for (size_t i = 0; same && i < nsites; i++)
        same = sites[i].now.peak_bytes == live_bytes(&sites[i].now) &&
               sites[i].now.peak_blocks == live_blocks(&sites[i].now);
    if (same)
        return;
    size_t n, held = 0;
    struct site **top = largest_sites_by(MT_TOP_BY_PEAK, (size_t)top_n, true, &n);
    uint64_t rest_bytes = 0, rest_blocks = 0;
    for (size_t i = 0; i < nsites; i++) {
        held += sites[i].now.peak_bytes > 0;
        rest_bytes += sites[i].now.peak_bytes;
        rest_blocks += sites[i].now.peak_blocks;
    }
    for (size_t i = 0; i < n; i++) {
        rest_bytes -= top[i]->now.peak_bytes;
        rest_blocks -= top[i]->now.peak_blocks;
    }
    mt_out_printf(o, "memtrace: top %zu sites at the peak (%lu bytes live at %lu ms), largest "
                     "last\n",
                  n, (unsigned long)peak,
                  (unsigned long)(at > start_ns ? (at - start_ns) / 1000000 : 0));
    if (held > n) {
        mt_out_printf(o, "memtrace: %zu more sites at the peak not shown, %lu bytes in %lu "
                         "blocks ", held - n, (unsigned long)rest_bytes, (unsigned long)rest_blocks);
        if (top)
            mt_out_printf(o, "(MEMTRACE_TOP=%ld)\n", top_n);
        else
            mt_out_printf(o, "(no memory left to sort them)\n");
    }
    static char raw[MT_MAX_DEPTH * 32];
    for (size_t i = n; i-- > 0;) {
        struct site *s = top[i];
        mt_out_printf(o, "memtrace: at the peak [%zu] %lu bytes live in %lu blocks; at exit %lu "
                         "bytes in %lu blocks\n",
                      i + 1, (unsigned long)s->now.peak_bytes, (unsigned long)s->now.peak_blocks,
                      (unsigned long)live_bytes(&s->now), (unsigned long)live_blocks(&s->now));
        char *made;
        out_text_indented(o, site_text(s, &made, raw, sizeof raw));
        free(made);
    }
    mt_out_printf(o, "memtrace: end of top at the peak\n");
}

static mt_atomic(pid_t) exit_reported_by;

/* Runs once per process (atexit, in whichever thread called exit), on
 * mt_own_stack. */
static void exit_report(void *unused)
{
    (void)unused;
    pid_t pid = getpid();
    if (mt_atomic_exchange_acq_rel(&exit_reported_by, pid) == pid)
        return;
    int cancel; /* as in report() */
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    int was = mt_enter();
    report_lock_take();
    struct walk w;
    walk_sites(&w);
    exiting = 1;
    /* The MEMTRACE_EXIT_TOP first sites by MEMTRACE_TOP_BY are listed, the
     * rest summed up in one line: a million symbolized stacks would be
     * gigabytes of text. */
    size_t n, ranked = 0;
    struct site **leaks = largest_sites(SIZE_MAX, true, &n);
    uint64_t rest_bytes = 0, rest_blocks = 0, rest_allocs = 0, rest_temp = 0;
    uint64_t rest_peak_bytes = 0, rest_peak_blocks = 0;
    for (size_t i = 0; i < nsites; i++) {
        if (rank_key(&sites[i], true) == 0)
            continue;
        ranked++;
        rest_peak_bytes += sites[i].now.peak_bytes;
        rest_peak_blocks += sites[i].now.peak_blocks;
        rest_bytes += live_bytes(&sites[i].now);
        rest_blocks += live_blocks(&sites[i].now);
        rest_allocs += sites[i].now.alloc_blocks;
        rest_temp += sites[i].now.temp_blocks;
    }
    size_t shown = n < (size_t)exit_top ? n : (size_t)exit_top;
    for (size_t i = 0; i < shown; i++) {
        rest_peak_bytes -= leaks[i]->now.peak_bytes;
        rest_peak_blocks -= leaks[i]->now.peak_blocks;
        rest_bytes -= live_bytes(&leaks[i]->now);
        rest_blocks -= live_blocks(&leaks[i]->now);
        rest_allocs -= leaks[i]->now.alloc_blocks;
        rest_temp -= leaks[i]->now.temp_blocks;
    }
    uint64_t peak = mt_atomic_load_relaxed(&mt_site_peak_total);
    uint64_t at = mt_atomic_load_relaxed(&mt_site_peak_ns);
    mt_out o;
    bool own;
    mt_report_open(&o, &own);
    mt_out_printf(&o, "memtrace: exit report, pid %d", (int)pid);
    if (parent_pid)
        mt_out_printf(&o, " (forked from %d)", (int)parent_pid);
    mt_out_printf(&o, ", at ");
    print_time(&o, mt_os_now_ns());
    mt_out_printf(&o, ": peak %lu bytes live at %lu ms; %lu bytes still live in %lu blocks "
                      "at %zu sites%s%s, %s last\n",
                  (unsigned long)peak,
                  (unsigned long)(at > start_ns ? (at - start_ns) / 1000000 : 0),
                  (unsigned long)mt_atomic_load_relaxed(&mt_site_live_total),
                  (unsigned long)w.sum_blocks, w.nlive, top_by == MT_TOP_BY_LIVE ? "" : ";",
                  rank_name(true), top_by == MT_TOP_BY_LIVE || top_by == MT_TOP_BY_PEAK ? "largest" : "most");
    mt_recording_say(&o);
    if (ranked > shown) {
        mt_out_printf(&o, "memtrace: %zu more sites not shown, ", ranked - shown);
        if (top_by == MT_TOP_BY_LIVE)
            mt_out_printf(&o, "%lu bytes in %lu blocks ", (unsigned long)rest_bytes,
                          (unsigned long)rest_blocks);
        else if (top_by == MT_TOP_BY_PEAK)
            mt_out_printf(&o, "%lu bytes in %lu blocks at the peak ",
                          (unsigned long)rest_peak_bytes, (unsigned long)rest_peak_blocks);
        else
            mt_out_printf(&o, "%lu blocks allocated, %lu temporary ", (unsigned long)rest_allocs,
                          (unsigned long)rest_temp);
        if (leaks)
            mt_out_printf(&o, "(MEMTRACE_EXIT_TOP=%ld)\n", exit_top);
        else
            mt_out_printf(&o, "(no memory left to sort them)\n");
    }
    for (size_t i = shown; i-- > 0;)
        print_entry(&o, i + 1, leaks[i], true);
    print_top_at_peak(&o, peak, at);
    if (folded_template) {
        /* Room for ".peak" after the path. */
        char path[PATH_BYTES - 5], peak_path[PATH_BYTES];
        if (!expand(folded_template, path, sizeof path)) {
            mt_out_printf(&o, "memtrace: folded stacks: not written: the path MEMTRACE_FOLDED "
                              "expands to is longer than %d bytes (%d with .peak)\n",
                          (int)sizeof path - 1, PATH_BYTES - 1);
        } else {
            snprintf(peak_path, sizeof peak_path, "%s.peak", path);
            /* Each file named as written only if it was. */
            const char *failed = write_folded(path, NULL);
            mt_out_printf(&o, "memtrace: folded stacks: ");
            out_text(&o, path);
            if (failed)
                mt_out_printf(&o, " not written (%s), ", failed);
            else
                mt_out_printf(&o, " (at exit), ");
            uint64_t peak_sum = 0;
            failed = write_folded(peak_path, &peak_sum);
            out_text(&o, peak_path);
            if (failed) {
                mt_out_printf(&o, " not written (%s)\n", failed);
            } else {
                mt_out_printf(&o, " (%lu bytes, peak at ", (unsigned long)peak_sum);
                print_time(&o, at);
                mt_out_printf(&o, ")\n");
            }
        }
    }
    if (mt_pprof_out_enabled()) {
        write_pprof(MT_PPROF_AT_EXIT, &o);
        write_pprof(MT_PPROF_AT_PEAK, &o);
    }
    mt_out_printf(&o, "memtrace: end of exit report\n");
    close_output(&o, own);
    report_lock_drop();
    mt_leave(was);
    pthread_setcancelstate(cancel, NULL);
}

/* ------------------------------------------------------------ reporter */

/* Set by the MEMTRACE_SIGNAL handler, taken by the reporter within 10 ms.
 * A flag, not a pipe: a program that closes every descriptor it did not
 * open (daemons, closefrom) would have the pipe's numbers reused for its own
 * files, which the reporter would then read and the handler write. */
static mt_atomic(int) signal_pending;

static void on_signal(int sig)
{
    (void)sig;
    mt_atomic_store_relaxed(&signal_pending, 1);
}

/* The reporter thread's life. It is memtrace's, not the program's, and
 * must never change what the program sees of its own threads:
 *
 * - Its stack is reserved once, at start-up (a process that later fills
 *   its address space, ulimit -v, can still start or restart it), and its
 *   kernel thread id is registered as memtrace's own (mt_threads_own_add),
 *   so the leak check neither waits for it nor scans it.
 * - unshare(CLONE_NEWUSER) and setns refuse a multi-threaded process: the
 *   interposed calls (preload.c) stop the thread (joined, and gone from
 *   /proc/self/task) around the real call and start it again after
 *   (mt_profiler_pause / mt_profiler_resume).
 * - The process ends when its last thread does; natively, when main has
 *   called pthread_exit, the last thread to end calls exit(0). The reporter
 *   learns that main has gone from a thread-specific value's destructor
 *   (main_key), then checks /proc/self/task at each wake; when only
 *   memtrace's own threads are left it calls exit(0) itself, so the exit
 *   handlers (the exit report among them) run and the status is 0. */
static mt_os_stack reporter_stack; /* the reporter thread's; reports made in
                                      the program's threads use mt_own_stack */
static pthread_t reporter;
static bool reporter_running;       /* under pause_lock once started */
static pid_t reporter_pid;          /* the process that started it */
static mt_atomic(int) reporter_tid; /* futex word: 0 until the thread has registered */
static mt_atomic(int) reporter_stop; /* futex word: 1 asks the thread to return */
static mt_atomic(int) main_exited;  /* the main thread called pthread_exit */
static pthread_key_t main_key;
static bool main_key_made;
static pthread_mutex_t pause_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned pauses;             /* calls between pause and resume, under pause_lock */
static bool paused_running;         /* the reporter ran when the first of them came */

static void futex_wait(mt_atomic(int) *word, int val, const struct timespec *ts)
{
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, ts, NULL, 0);
}

static void futex_wake(mt_atomic(int) *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1 << 30, NULL, NULL, 0);
}

static void on_main_exit(void *value)
{
    (void)value;
    mt_atomic_store_release(&main_exited, 1);
}

/* Marks the calling thread as the process's main thread (its exit through
 * pthread_exit sets main_exited). */
static void watch_main(void)
{
    if (main_key_made)
        pthread_setspecific(main_key, (void *)1);
}

static bool no_program_thread(pid_t tid, void *left)
{
    *(bool *)left = tid != getpid() && !mt_threads_is_own(tid);
    return !*(bool *)left;
}

/* Whether a thread of the program still runs: an entry of /proc/self/task
 * other than memtrace's own threads and the main thread, which has called
 * pthread_exit (a zombie until the process ends). True when the list
 * cannot be read. */
static bool program_threads_left(void)
{
    bool left = false;
    return !mt_os_each_task(no_program_thread, &left) || left;
}

/* The program's threads have all ended (main by pthread_exit): what the
 * last of them would have done natively. */
static void program_ended(void)
{
    mt_leave(0);
    exit(0);
}

/* The reporter thread: inside memtrace for its whole life, so nothing it
 * allocates is traced. Wakes every 10 ms (at most) to take a pending
 * signal's report and to see whether the program has ended, at the report
 * interval, and at once when asked to stop. */
static void *reporter_main(void *arg)
{
    (void)arg;
    mt_enter();
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    int tid = (int)syscall(SYS_gettid);
    mt_threads_own_add(tid);
    mt_atomic_store_release(&reporter_tid, tid); /* start_reporter waits for it */
    futex_wake(&reporter_tid);
    uint64_t interval = (uint64_t)interval_ms * 1000000ull;
    uint64_t due = mt_os_now_ns() + interval;
    while (!mt_atomic_load_acquire(&reporter_stop)) {
        uint64_t now = mt_os_now_ns();
        uint64_t wait = 10000000ull;
        if (interval && due > now && due - now < wait)
            wait = due - now;
        struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)wait };
        futex_wait(&reporter_stop, 0, &ts);
        if (mt_atomic_load_acquire(&reporter_stop))
            break;
        if (mt_atomic_exchange_relaxed(&signal_pending, 0))
            report(ON_SIGNAL);
        now = mt_os_now_ns();
        if (interval && now >= due) {
            report(PERIODIC);
            due += interval;
            if (due <= now)
                due = now + interval;
        }
        if (mt_atomic_load_acquire(&main_exited) && !program_threads_left())
            program_ended();
    }
    return NULL;
}

/* The reporter thread is started only for what needs it: periodic reports
 * and MEMTRACE_SIGNAL (the handler only sets a flag; a report is not
 * async-signal-safe, and making a program thread take it at its next
 * allocation would run a report inside whatever locks that thread holds). */
static bool reporter_needed(void)
{
    return interval_ms > 0 || report_signal != 0;
}

/* Starts the reporter thread on its reserved stack (the default one if
 * that could not be reserved), with every signal blocked in it (the
 * program's signals are for the program's threads), and returns once it
 * has registered as memtrace's own. Inside memtrace, so the thread's setup
 * is not traced. */
static void start_reporter(void)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (reporter_stack.base) {
        size_t guard = mt_os_page_size();
        pthread_attr_setstack(&attr, reporter_stack.base + guard, reporter_stack.size - guard);
    }
    mt_atomic_store_relaxed(&reporter_stop, 0);
    mt_atomic_store_relaxed(&reporter_tid, 0);
    reporter_pid = getpid();
    reporter_running = pthread_create(&reporter, &attr, reporter_main, NULL) == 0;
    if (reporter_running) {
        pthread_setname_np(reporter, "memtrace");
        while (mt_atomic_load_acquire(&reporter_tid) == 0)
            futex_wait(&reporter_tid, 0, NULL);
    } else {
        mt_warn("cannot start the reporter thread; only the exit report will be made");
    }
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Ends the reporter thread (after the report it may be making) and waits
 * until the kernel no longer counts it among the process's threads: the
 * join returns when it has cleared its thread id, a little before that. */
static void stop_reporter(void)
{
    mt_atomic_store_release(&reporter_stop, 1);
    futex_wake(&reporter_stop);
    pthread_join(reporter, NULL);
    int tid = mt_atomic_load_relaxed(&reporter_tid);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d", tid);
    for (int ms = 0; ms < 1000 && access(path, F_OK) == 0; ms++) {
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    mt_threads_own_remove(tid);
    reporter_running = false;
}

bool mt_profiler_pause(void)
{
    /* A vfork child shares this memory but not the parent's threads: the
     * reporter is not its to stop, nor a thread its to start. */
    if (getpid() != reporter_pid)
        return false;
    int was = mt_enter();
    pthread_mutex_lock(&pause_lock);
    if (pauses++ == 0) {
        paused_running = reporter_running;
        if (reporter_running)
            stop_reporter();
    }
    pthread_mutex_unlock(&pause_lock);
    mt_leave(was);
    return true;
}

void mt_profiler_resume(void)
{
    int was = mt_enter();
    pthread_mutex_lock(&pause_lock);
    if (--pauses == 0 && paused_running)
        start_reporter();
    pthread_mutex_unlock(&pause_lock);
    mt_leave(was);
}

/* Whether fork_prepare took report_lock: not when this thread's own
 * interrupted code holds it (a fork from a signal handler); that code lets
 * go of it once the handler returns, in the parent and in the child. */
static MT_TLS bool fork_took_report_lock;

/* The forking process, for the child's "(forked from PID)": by the time the
 * child runs its handler the parent may have exited, and getppid() says 1. */
static pid_t forking_pid;

static void fork_prepare(void)
{
    forking_pid = getpid();
    fork_took_report_lock = !mt_lock_is_mine(&report_lock);
    if (fork_took_report_lock)
        report_lock_take();
}

static void fork_parent(void)
{
    if (fork_took_report_lock)
        report_lock_drop();
}

/* The child reports its own heap (a copy of its parent's at the fork) from
 * its own start: report numbers, clock and peak start over, the output
 * path is expanded again and the folded files are its own (PATH.PID, see
 * pass_on_setting); the interval counts since the parent's last report. */
static void fork_child(void)
{
    bool took = fork_took_report_lock;
    if (took) /* under the parent's token, which startup.c's handler may have dropped */
        mt_lock_release_in_child(&report_lock);
    else /* this thread's interrupted code holds it: under the child's token now */
        mt_lock_adopt_in_child(&report_lock);
    int was = mt_enter();
    parent_pid = forking_pid;
    start_ns = mt_os_now_ns();
    reports = 0;
    mt_site_restart_peak(start_ns);
    folded_template = folded_child_template;
    /* The parent's reporter thread does not exist here; this thread is the
     * child's main one. Its stack, a copy, is free to use again. */
    mt_threads_own_remove(mt_atomic_load_relaxed(&reporter_tid));
    reporter_running = false;
    pthread_mutex_init(&pause_lock, NULL);
    pauses = 0;
    mt_atomic_store_relaxed(&main_exited, 0);
    watch_main();
    if (reporter_needed())
        start_reporter();
    mt_leave(was);
}

static void load_settings(void)
{
    mt_profiler_config c;
    mt_config_profiler(&c);
    interval_ms = c.interval_ms;
    top_n = c.top;
    exit_top = c.exit_top;
    top_by = c.top_by;
    output_template =
        mt_setting_path(MT_SET_OUTPUT, output_copy, sizeof output_copy, "reporting on stderr");
    folded_template =
        mt_setting_path(MT_SET_FOLDED, folded_copy, sizeof folded_copy, "no folded files");
    folded_child_template =
        mt_children_pass_on("MEMTRACE_FOLDED", folded_template, folded_env, sizeof folded_env);
    mt_pprof_out_start(true);
    snprintf(program_name, sizeof program_name, "%s", program_invocation_short_name);
    report_signal = mt_config_signal(MT_SET_SIGNAL, "no signal asks for a report");
}

/* The registered exit handler: with MEMTRACE_LEAK_CHECK=1, the leak
 * verdict first (it stops every other thread, so before the report's lock),
 * with the registers this handler was entered with (getcontext before
 * anything else) and the stack from its frame up. */
static void exit_report_entry(void)
{
    ucontext_t uc;
    if (getcontext(&uc) != 0)
        memset(&uc, 0, sizeof uc);
    if (leak_hooks)
        leak_hooks->run(&uc, (uintptr_t)__builtin_frame_address(0));
    mt_os_on_stack(&mt_own_stack, exit_report, NULL);
}

void mt_profiler_start(void)
{
    int was = mt_enter();
    start_ns = mt_os_now_ns();
    load_settings();
    reserve_sites();
    main_key_made = pthread_key_create(&main_key, on_main_exit) == 0;
    if ((pid_t)syscall(SYS_gettid) == getpid())
        watch_main();
    if (reporter_needed()) {
        mt_os_stack_reserve(&reporter_stack, MT_OWN_STACK_SIZE);
        start_reporter();
    }
    if (report_signal) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(report_signal, &sa, NULL) != 0)
            mt_warn("MEMTRACE_SIGNAL: cannot handle signal %d (%s)", report_signal,
                    strerror(errno));
    }
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    atexit(exit_report_entry);
    mt_leave(was);
}

static void report_on_request(void *unused)
{
    (void)unused;
    report(ON_REQUEST);
}

/* On mt_own_stack: the caller may be a main thread with no room to grow. */
MT_EXPORT void memtrace_report(void)
{
    void (*owner)(void) = mt_owner("memtrace_report");
    if (owner) {
        owner();
        return;
    }
    mt_os_on_stack(&mt_own_stack, report_on_request, NULL);
}

