/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Metadata mappings. A failed mapping is handed to mt_metadata_failed (the
 * tracer stops recording and says so once); callers cope with NULL.
 * MEMTRACE_FAULT_MAP=N makes the Nth request here fail, for testing. */
#include "base/os.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/config.h"
#include "base/output.h"
#include "base/upcalls.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

/* MEMTRACE_FAULT_MAP's count: relaxed, any thread; two threads that both
 * read fail_at as -1 parse the same setting and store the same value. */
static mt_atomic(unsigned long) requests;
static mt_atomic(long) fail_at = -1; /* -1: not read yet */

/* Overridden by the tracer; unit tests link this one. */
__attribute__((weak)) void mt_metadata_failed(const char *what, size_t size, int err)
{
    mt_warn("could not map %zu bytes for the %s: %s", size, what, strerror(err));
}

static void warn_failed(const char *what, size_t size)
{
    mt_metadata_failed(what, size, errno);
}

/* True if this request is the one MEMTRACE_FAULT_MAP asks to fail. */
static bool injected_fault(void)
{
    long at = mt_atomic_load_relaxed(&fail_at);
    if (at < 0) {
        at = mt_setting_long(MT_SET_FAULT_MAP);
        mt_atomic_store_relaxed(&fail_at, at);
    }
    if (at == 0)
        return false;
    if (mt_atomic_add_relaxed(&requests, 1) + 1 != (unsigned long)at)
        return false;
    errno = ENOMEM;
    return true;
}

void *mt_os_map(size_t size, const char *what)
{
    void *p = injected_fault()
                  ? MAP_FAILED
                  : mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        warn_failed(what, size);
        return NULL;
    }
    mt_os_no_huge_pages(p, size);
    return p;
}

void mt_os_no_huge_pages(void *p, size_t size)
{
#ifdef MADV_NOHUGEPAGE
    if (mt_cfg.sample)
        madvise(p, size, MADV_NOHUGEPAGE);
#else
    (void)p;
    (void)size;
#endif
}

void mt_os_retire(void *p, size_t size)
{
    if (p)
        madvise(p, size, MADV_DONTNEED);
}

void *mt_os_reserve(size_t size, const char *what)
{
    void *p = injected_fault()
                  ? MAP_FAILED
                  : mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        warn_failed(what, size);
        return NULL;
    }
    /* Out of core files (gdb's gcore dumps a PROT_NONE range whole: 4 GiB
     * of zeros for the internal heap's); mt_os_commit puts back the parts
     * that come to hold something. */
    madvise(p, size, MADV_DONTDUMP);
    mt_os_no_huge_pages(p, size);
    return p;
}

int mt_os_commit(void *p, size_t size, const char *what)
{
    if (injected_fault() || mprotect(p, size, PROT_READ | PROT_WRITE) != 0) {
        warn_failed(what, size);
        return -1;
    }
    /* In core files again: gdb's answers on a core read these tables. */
    madvise(p, size, MADV_DODUMP);
    return 0;
}

/* Any thread may be the first to ask: each stores the same value. */
size_t mt_os_page_size(void)
{
    static mt_atomic(size_t) page;
    size_t p = mt_atomic_load_relaxed(&page);
    if (!p) {
        p = (size_t)sysconf(_SC_PAGESIZE);
        mt_atomic_store_relaxed(&page, p);
    }
    return p;
}

/* Set in the process whose exit handler asked first; read and written only
 * by the thread running the exit handlers. */
static pid_t exit_claimed_by;

void mt_os_exit_with(int status)
{
    pid_t pid = getpid(); /* a forked child asks for itself */
    if (exit_claimed_by == pid)
        return;
    exit_claimed_by = pid;
    exit(status);
}

mt_os_stack mt_own_stack;

bool mt_os_stack_reserve(mt_os_stack *s, size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (p == MAP_FAILED)
        return false;
    mprotect(p, mt_os_page_size(), PROT_NONE); /* the guard */
    s->size = size;
    s->base = p;
    return true;
}

static void on_stack_entry(unsigned hi, unsigned lo)
{
    mt_os_stack *s = (mt_os_stack *)(((uintptr_t)hi << 32) | lo);
    s->fn(s->arg);
}

void mt_os_on_stack(mt_os_stack *s, void (*fn)(void *), void *arg)
{
    int expected = 0;
    if (!s->base || !mt_atomic_cas_acq_rel(&s->busy, &expected, 1)) {
        fn(arg);
        return;
    }
    s->fn = fn;
    s->arg = arg;
    if (getcontext(&s->there) != 0) {
        mt_atomic_store_release(&s->busy, 0);
        fn(arg);
        return;
    }
    size_t guard = mt_os_page_size();
    s->there.uc_stack.ss_sp = s->base + guard;
    s->there.uc_stack.ss_size = s->size - guard;
    s->there.uc_link = &s->back;
    makecontext(&s->there, (void (*)(void))on_stack_entry, 2, (unsigned)((uintptr_t)s >> 32),
                (unsigned)(uintptr_t)s);
    if (swapcontext(&s->back, &s->there) != 0)
        fn(arg);
    mt_atomic_store_release(&s->busy, 0);
}

bool mt_os_each_task(bool (*fn)(pid_t tid, void *ctx), void *ctx)
{
    return mt_os_each_task_of(0, fn, ctx);
}

/* ID's decimal digits at P (ID > 0); returns the end. No stdio in base. */
static char *put_decimal(char *p, pid_t id)
{
    char digits[12];
    int n = 0;
    for (unsigned v = (unsigned)id; v; v /= 10)
        digits[n++] = (char)('0' + v % 10);
    while (n)
        *p++ = digits[--n];
    return p;
}

bool mt_os_each_task_of(pid_t pid, bool (*fn)(pid_t tid, void *ctx), void *ctx)
{
    char path[32] = "/proc/self/task";
    if (pid > 0)
        memcpy(put_decimal(path + 6, pid), "/task", sizeof "/task"); /* after "/proc/" */
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char buf[4096];
    long got;
    bool go_on = true;
    while (go_on && (got = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
        for (long at = 0; at < got && go_on;) {
            struct {
                uint64_t ino;
                int64_t off;
                unsigned short reclen;
                unsigned char type;
                char name[];
            } *d = (void *)(buf + at);
            pid_t tid = (pid_t)atoi(d->name);
            if (tid > 0)
                go_on = fn(tid, ctx);
            at += d->reclen;
        }
    }
    close(fd);
    return true;
}

/* ------------------------------------------------------------ /proc/PID/maps */

void mt_os_maps_fd(mt_os_maps *m, int fd, char *buf, size_t size)
{
    *m = (mt_os_maps){ .fd = fd, .buf = buf, .wbuf = buf, .size = size };
}

void mt_os_maps_text(mt_os_maps *m, const char *text, size_t len)
{
    *m = (mt_os_maps){ .fd = -1, .buf = text, .size = len, .have = len, .eof = true };
}

int mt_os_maps_open_self(void)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/thread-self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) /* Linux before 3.17 */
        fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
    return fd;
}

/* The maps file "/proc/PID/maps", or with TID "/proc/PID/task/TID/maps",
 * open if it holds a mapping, at its start: the fd, else -1. */
static int open_maps_with_text(pid_t pid, pid_t tid)
{
    char path[64] = "/proc/", *p = put_decimal(path + 6, pid);
    if (tid > 0) {
        memcpy(p, "/task/", 6);
        p = put_decimal(p + 6, tid);
    }
    memcpy(p, "/maps", sizeof "/maps");
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    char c;
    if (fd >= 0 &&
        (syscall(SYS_read, fd, &c, 1) != 1 || syscall(SYS_lseek, fd, 0, SEEK_SET) != 0)) {
        syscall(SYS_close, fd);
        fd = -1;
    }
    return fd;
}

struct live_maps {
    pid_t pid;
    int fd;
};

static bool try_task_maps(pid_t tid, void *ctx)
{
    struct live_maps *l = ctx;
    if (tid != l->pid)
        l->fd = open_maps_with_text(l->pid, tid);
    return l->fd < 0;
}

int mt_os_maps_open(pid_t pid)
{
    if (pid <= 0)
        return mt_os_maps_open_self();
    struct live_maps l = { pid, open_maps_with_text(pid, 0) };
    if (l.fd < 0)
        mt_os_each_task_of(pid, try_task_maps, &l);
    if (l.fd < 0) { /* none has any: PID's own, empty (or gone) */
        char path[32] = "/proc/";
        memcpy(put_decimal(path + 6, pid), "/maps", sizeof "/maps");
        l.fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    }
    return l.fd;
}

static uint64_t maps_number(const char **p, const char *end, unsigned base)
{
    uint64_t v = 0;
    for (; *p < end; (*p)++) {
        char c = **p;
        unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                                            : 16;
        if (d >= base)
            break;
        v = v * base + d;
    }
    return v;
}

static void maps_skip(const char **p, const char *end, bool spaces)
{
    while (*p < end && (**p == ' ') == spaces)
        (*p)++;
}

/* LINE[0..LEN) (its newline included, if any) into *OUT; false if it is no
 * mapping's. */
static bool maps_parse(const char *line, size_t len, bool truncated, mt_os_mapping *out)
{
    const char *p = line, *end = line + len;
    if (end > p && end[-1] == '\n')
        end--;
    *out =
        (mt_os_mapping){ .line = line, .line_len = len, .truncated = truncated, .perms = "----" };
    const char *at = p;
    out->start = (uintptr_t)maps_number(&p, end, 16);
    if (p == at || p == end || *p++ != '-')
        return false;
    at = p;
    out->end = (uintptr_t)maps_number(&p, end, 16);
    if (p == at || p == end || *p != ' ')
        return false;
    maps_skip(&p, end, true);
    for (unsigned i = 0; i < 4 && p < end && *p != ' '; i++)
        out->perms[i] = *p++;
    maps_skip(&p, end, false); /* a longer PERMS than four */
    maps_skip(&p, end, true);
    out->offset = maps_number(&p, end, 16);
    maps_skip(&p, end, true);
    maps_skip(&p, end, false); /* MAJOR:MINOR */
    maps_skip(&p, end, true);
    out->inode = maps_number(&p, end, 10);
    maps_skip(&p, end, true);
    static const char deleted[] = " (deleted)";
    size_t n = (size_t)(end - p), d = sizeof deleted - 1;
    out->deleted = !truncated && n > d && memcmp(end - d, deleted, d) == 0;
    out->path = p;
    out->path_len = out->deleted ? n - d : n;
    return true;
}

bool mt_os_maps_next(mt_os_maps *m, mt_os_mapping *out)
{
    for (;;) {
        const char *line = m->buf + m->at;
        const char *nl = memchr(line, '\n', m->have - m->at);
        if (nl) {
            size_t len = (size_t)(nl + 1 - line);
            m->at += len;
            bool skipped = m->skipping;
            m->skipping = false;
            if (!skipped && maps_parse(line, len, false, out))
                return true;
            continue;
        }
        if (m->eof) { /* the last line, without its newline */
            size_t len = m->have - m->at;
            bool skipped = m->skipping;
            m->at = m->have;
            m->skipping = false;
            return len && !skipped && maps_parse(line, len, false, out);
        }
        /* No whole line left: keep its start, read more after it. */
        memmove(m->wbuf, line, m->have - m->at);
        m->have -= m->at;
        m->at = 0;
        if (m->have == m->size) { /* a line longer than the buffer */
            bool first = !m->skipping;
            m->skipping = true;
            m->have = 0;
            if (first && maps_parse(m->wbuf, m->size, true, out))
                return true;
        }
        long got = syscall(SYS_read, m->fd, m->wbuf + m->have, m->size - m->have);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            m->eof = true;
            m->failed = got < 0;
        } else {
            m->have += (size_t)got;
        }
    }
}
