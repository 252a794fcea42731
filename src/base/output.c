/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Buffered write(2) output and warnings. Safe to call with other threads
 * stopped anywhere: no locks, no heap. */
#include "base/atomic.h"
#include "base/output.h"
#include "base/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* 0, or the errno of the write that failed; *DONE: the bytes written
 * before it (all N when 0 is returned). Never raises SIGPIPE in the
 * program: a report to a pipe or FIFO whose reader went away fails with
 * EPIPE instead of killing the process, which then exits as it would have.
 * SIGPIPE is blocked in this thread across the writes, and one they raised
 * is taken before it is unblocked; one that was pending already stays. */
static int write_all(int fd, const char *p, size_t n, size_t *done)
{
    *done = 0;
    sigset_t pipe_only, old, pending;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
    bool was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
    int err = 0;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            err = errno;
            if (err == EPIPE && !was_pending) {
                const struct timespec now = { 0, 0 };
                while (sigtimedwait(&pipe_only, NULL, &now) < 0 && errno == EINTR) {
                }
            }
            break;
        }
        p += w;
        n -= (size_t)w;
        *done += (size_t)w;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return err;
}

static void note_error(mt_out *o, int err)
{
    if (err && !o->error)
        o->error = err;
}

void mt_out_init(mt_out *o, int fd)
{
    o->fd = fd;
    o->len = 0;
    o->error = 0;
    o->setting = o->name = NULL;
    o->file = fd;
    o->written = 0;
    o->fell_back = false;
}

void mt_out_fall_back(mt_out *o, const char *setting, const char *name)
{
    o->setting = setting;
    o->name = name;
}

/* Writes the N bytes at P to O's descriptor; when the file of a report
 * fails, says so and writes the rest on memtrace's stderr instead. */
static void put(mt_out *o, const char *p, size_t n)
{
    size_t done;
    int err = write_all(o->fd, p, n, &done);
    if (!o->fell_back)
        o->written += done;
    note_error(o, err);
    if (!err || !o->name || o->fell_back)
        return;
    o->fell_back = true;
    /* From the start of the line the failure cut, when it is in these
     * bytes; the file keeps whole lines up to there, and stderr gets the
     * rest whole. */
    size_t from = done;
    while (from > 0 && p[from - 1] != '\n')
        from--;
    if (o->written == 0)
        mt_warn("%s: cannot write to %s (%s); reporting on stderr", o->setting, o->name,
                strerror(err));
    else
        mt_warn("%s: cannot write to %s (%s) after %zu bytes of this report; the rest of it "
                "(from the line cut) and later reports on stderr",
                o->setting, o->name, strerror(err), o->written);
    o->fd = mt_err_fd();
    if (o->fd < 0)
        return;
    note_error(o, write_all(o->fd, p + from, n - from, &done));
}

void mt_out_flush(mt_out *o)
{
    put(o, o->buf, o->len);
    o->len = 0;
}

int mt_format_line(char *line, const char *fmt, va_list ap)
{
    int n = vsnprintf(line, MT_LINE_MAX, fmt, ap);
    if (n < 0)
        return -1;
    return n < MT_LINE_MAX ? n : MT_LINE_MAX - 1;
}

void mt_out_write_slow(mt_out *o, const char *s, size_t len)
{
    if (o->len + len > sizeof o->buf)
        mt_out_flush(o);
    if (len > sizeof o->buf) {
        put(o, s, len);
        return;
    }
    memcpy(o->buf + o->len, s, len);
    o->len += len;
}

void mt_out_printf(mt_out *o, const char *fmt, ...)
{
    char line[MT_LINE_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = mt_format_line(line, fmt, ap);
    va_end(ap);
    if (n >= 0)
        mt_out_write(o, line, (size_t)n);
}

size_t mt_text_escape(char *dst, size_t cap, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s);
    size_t len = 0;
    while (p < end) {
        size_t n = mt_utf8_len(p, end);
        /* C1 controls in UTF-8: U+0080-U+009F are 0xc2 0x80-0x9f */
        bool plain = n > 1 ? !(p[0] == 0xc2 && p[1] < 0xa0)
                           : n == 1 && p[0] >= 0x20 && p[0] != 0x7f;
        if (!plain && n == 0)
            n = 1;
        size_t need = plain ? n : 4 * n;
        if (len + need >= cap)
            break;
        for (size_t i = 0; i < n; i++) {
            if (plain) {
                dst[len++] = (char)p[i];
            } else {
                dst[len++] = '\\';
                dst[len++] = 'x';
                dst[len++] = hex[p[i] >> 4];
                dst[len++] = hex[p[i] & 15];
            }
        }
        p += n;
    }
    dst[len] = '\0';
    return len;
}

void mt_out_text(mt_out *o, const char *s)
{
    char line[MT_LINE_MAX];
    mt_out_write(o, line, mt_text_escape(line, sizeof line, s));
}

/* The private copy of the start-up stderr: err_fd, -1 when there is none
 * (fd 2 was closed at start-up: err_closed; or no descriptor was left);
 * err_dev and err_ino identify the file, so a number the program closed and
 * reused is never written to. */
/* err_kept is released after err_fd, err_dev and err_ino are set (once, at
 * start-up), and acquired by mt_err_fd. err_fd changes later only by the
 * CAS in mt_err_fd; a thread that loses it uses the winner's copy. */
static mt_atomic(bool) err_kept;
static bool err_closed;
static mt_atomic(int) err_fd = -1;
static dev_t err_dev;
static ino_t err_ino;

#define ERR_FD_MIN 100

static bool is_err_file(int fd)
{
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == err_dev && st.st_ino == err_ino;
}

static int dup_stderr(void)
{
    int fd = fcntl(2, F_DUPFD_CLOEXEC, ERR_FD_MIN);
    if (fd < 0) /* RLIMIT_NOFILE at or below ERR_FD_MIN */
        fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
    return fd;
}

void mt_err_keep(void)
{
    if (mt_atomic_load_acquire(&err_kept))
        return;
    struct stat st;
    if (fstat(2, &st) == 0) {
        err_dev = st.st_dev;
        err_ino = st.st_ino;
        mt_atomic_store_relaxed(&err_fd, dup_stderr());
    } else {
        err_closed = true;
    }
    mt_atomic_store_release(&err_kept, true);
}

int mt_err_fd(void)
{
    if (!mt_atomic_load_acquire(&err_kept))
        return 2;
    int fd = mt_atomic_load_relaxed(&err_fd);
    if (is_err_file(fd))
        return fd;
    if (err_closed || !is_err_file(2))
        return -1;
    /* The copy is gone (closed, or its number reused by the program) but
     * fd 2 is the start-up stderr again: copy it anew. The old number is
     * the program's now and is left alone. */
    int copy = dup_stderr();
    if (copy < 0)
        return 2;
    if (!mt_atomic_cas_acq_rel(&err_fd, &fd, copy)) {
        close(copy); /* another thread made one meanwhile */
        return fd;
    }
    return copy;
}

void mt_warn(const char *fmt, ...)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "memtrace: ");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    size_t len = (size_t)n + (size_t)m;
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    int fd = mt_err_fd();
    size_t done;
    if (fd >= 0)
        write_all(fd, line, len, &done);
}

#ifdef MT_DEBUG
#include "base/common.h"

#include <stdlib.h>

void mt_assert_fail(const char *expr, const char *file, int line)
{
    char text[512];
    int n =
        snprintf(text, sizeof text, "memtrace: assertion failed: %s (%s:%d)\n", expr, file, line);
    size_t done;
    int fd = mt_err_fd();
    if (n > 0 && fd >= 0)
        write_all(fd, text, (size_t)n < sizeof text ? (size_t)n : sizeof text - 1, &done);
    abort();
}
#endif

bool mt_path_expand(const char *pattern, const char *program, long counter, char *out, size_t size)
{
    size_t n = 0;
    for (const char *p = pattern; *p; p++) {
        char tmp[64];
        const char *add = tmp;
        if (p[0] != '%' || !p[1]) {
            tmp[0] = *p;
            tmp[1] = '\0';
        } else {
            switch (*++p) {
            case 'p': snprintf(tmp, sizeof tmp, "%d", (int)getpid()); break;
            case 't': snprintf(tmp, sizeof tmp, "%ld", (long)time(NULL)); break;
            case 'e': add = program; break;
            case '%': add = "%"; break;
            case 'n':
                if (counter >= 0) {
                    snprintf(tmp, sizeof tmp, "%ld", counter);
                    break;
                }
                /* fall through */
            default: snprintf(tmp, sizeof tmp, "%%%c", *p); break;
            }
        }
        size_t len = strlen(add);
        if (len >= size - n)
            return false;
        memcpy(out + n, add, len);
        n += len;
    }
    out[n] = '\0';
    return true;
}
