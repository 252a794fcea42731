/* Text output for users: warnings and traces. Everything goes out with
 * write(2) from buffers the caller owns; nothing here allocates or locks. */
#ifndef MT_REPORT_H
#define MT_REPORT_H

#include <stdarg.h>
#include <stddef.h>

/* A line-oriented output buffer flushed to FD when full and by mt_out_flush. */
typedef struct {
    int fd;
    size_t len;
    char buf[8192];
} mt_out;

/* Longest piece one mt_out_printf call writes; longer text is cut. */
#define MT_LINE_MAX 2048

void mt_out_init(mt_out *o, int fd);
/* Formats into LINE (MT_LINE_MAX bytes), cutting what does not fit;
 * returns the length written, or -1 on a format error. */
int mt_format_line(char *line, const char *fmt, va_list ap);
/* Appends LEN bytes of S. */
void mt_out_write(mt_out *o, const char *s, size_t len);
void mt_out_printf(mt_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void mt_out_flush(mt_out *o);

/* One line "memtrace: <message>" on stderr. */
void mt_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
