/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Text output for users: warnings and traces. Everything goes out with
 * write(2) from buffers the caller owns; nothing here allocates or locks. */
#ifndef MT_OUTPUT_H
#define MT_OUTPUT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* A line-oriented output buffer flushed to FD when full and by mt_out_flush. */
typedef struct {
    int fd; /* where the bytes go now */
    size_t len;
    char buf[8192];
    int error; /* errno of the first write that failed, 0 if none */
    /* Set by mt_out_fall_back: the setting that named the file and its
     * name, said when a write to it fails; NULL: no fallback. */
    const char *setting, *name;
    int file;       /* the descriptor given to mt_out_init, even after a fallback */
    size_t written; /* bytes written to FILE */
    bool fell_back; /* a write to FILE failed: FD is memtrace's stderr now */
} mt_out;

/* Longest piece one mt_out_printf call writes; longer text is cut. */
#define MT_LINE_MAX 2048

void mt_out_init(mt_out *o, int fd);
/* For a report to a file of the user's choosing (MEMTRACE_OUTPUT, NAME):
 * the first write to it that fails (a full disk, /dev/full, a FIFO whose
 * reader left) is said in one "memtrace: SETTING: cannot write to NAME
 * (ERROR)..." line on memtrace's stderr (mt_err_fd), and the report goes on
 * there from the start of the line the failure cut, so that it is never
 * lost in silence. The caller reads fell_back afterwards (to stop using the
 * file) and closes FILE. NAME must outlive O. */
void mt_out_fall_back(mt_out *o, const char *setting, const char *name);
/* Formats into LINE (MT_LINE_MAX bytes), cutting what does not fit;
 * returns the length written, or -1 on a format error. */
int mt_format_line(char *line, const char *fmt, va_list ap);
/* Appends LEN bytes of S. Inline while they fit the buffer: the folded
 * files write tens of millions of short names. */
void mt_out_write_slow(mt_out *o, const char *s, size_t len);

static inline void mt_out_write(mt_out *o, const char *s, size_t len)
{
    if (__builtin_expect(o->len + len <= sizeof o->buf, 1)) {
        memcpy(o->buf + o->len, s, len);
        o->len += len;
        return;
    }
    mt_out_write_slow(o, s, len);
}
void mt_out_printf(mt_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Text that is not memtrace's own (a thread's name, a function, file or
 * module name from the program or its debug information, a user's
 * pattern) as a report prints it: a byte that a terminal could act on is
 * written as "\xHH" (two lowercase hex digits), so that no name can clear
 * the screen, retitle the window or split a report line. Those bytes: the
 * C0 controls (0x00-0x1f, newline and tab included) and DEL (0x7f); the C1
 * controls U+0080-U+009F encoded in UTF-8 (each of their two bytes); and a
 * byte 0x80-0xff that is no part of a valid UTF-8 sequence. Everything
 * else, valid UTF-8 included, is copied. S is escaped into DST (CAP > 0
 * bytes, NUL-terminated), cut before an escape or character that does not
 * fit; returns the length written. */
size_t mt_text_escape(char *dst, size_t cap, const char *s);
/* S escaped (mt_text_escape) and appended, cut to MT_LINE_MAX - 1 bytes as
 * every piece is. */
void mt_out_text(mt_out *o, const char *s);
void mt_out_flush(mt_out *o);

/* One line "memtrace: <message>" on memtrace's stderr (mt_err_fd); nothing
 * when that is -1. */
void mt_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Keeps a private copy of fd 2 as it is now (close-on-exec, numbered from
 * 100 up where the limit allows), for mt_err_fd; none when fd 2 is closed.
 * Called by mt_start in both builds, before the first setting is read; a
 * later call does nothing. Before it mt_err_fd is fd 2. */
void mt_err_keep(void);
/* Where memtrace's own text goes (warnings, bad-free and leak reports,
 * reports without MEMTRACE_OUTPUT): the private copy while it is still the
 * file fd 2 was at start-up (same st_dev and st_ino); else fd 2 again
 * (copied anew) if fd 2 is that file; else -1, never a file the program
 * opened since (the copy's number or fd 2 reused for its data, or fd 2
 * closed at start-up and opened since). A forked child shares the copy; an
 * exec'd program never inherits it and takes its own. */
int mt_err_fd(void);

/* PATTERN with %p (the pid), %e (PROGRAM), %t (seconds since the epoch),
 * %% and, when COUNTER >= 0, %n (COUNTER) expanded into OUT (SIZE bytes);
 * any other %X stays as written. False, and OUT unusable, when the result
 * does not fit: a cut path would name another file. The one expansion of
 * every MEMTRACE_* path setting. */
bool mt_path_expand(const char *pattern, const char *program, long counter, char *out, size_t size);

#endif
