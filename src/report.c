/* Buffered write(2) output and warnings. Safe to call with other threads
 * stopped anywhere: no locks, no heap. */
#include "report.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

void mt_out_init(mt_out *o, int fd)
{
    o->fd = fd;
    o->len = 0;
}

void mt_out_flush(mt_out *o)
{
    write_all(o->fd, o->buf, o->len);
    o->len = 0;
}

int mt_format_line(char *line, const char *fmt, va_list ap)
{
    int n = vsnprintf(line, MT_LINE_MAX, fmt, ap);
    if (n < 0)
        return -1;
    return n < MT_LINE_MAX ? n : MT_LINE_MAX - 1;
}

void mt_out_write(mt_out *o, const char *s, size_t len)
{
    if (o->len + len > sizeof o->buf)
        mt_out_flush(o);
    if (len > sizeof o->buf) {
        write_all(o->fd, s, len);
        return;
    }
    for (size_t i = 0; i < len; i++)
        o->buf[o->len + i] = s[i];
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
    write_all(2, line, len);
}
