/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `memtrace symbolize`: reads text the library wrote with
 * MEMTRACE_SYMBOLIZE=later (reports, folded files) and writes it back with
 * every raw frame, "0xPC (PATH+0xOFF) (BuildId: HEX)" (format.c's
 * put_raw), replaced by the frames MEMTRACE_SYMBOLIZE=now writes, through
 * the same code: each module is reported to one Dwfl from its file at the
 * address it had in the process (PC - OFF), so that the symbolizer sees
 * the process's addresses, and a stack is formatted by mt_fmt_stack_frame
 * (inlined frames, tail calls, pc - 1, numbering) or mt_fmt_folded_frame.
 * Every other line is copied. A module whose file cannot be read or whose
 * build ID is not the recorded one keeps its frames raw, with one line on
 * standard error. */
#include "text_symbolize.h"

#include "base/output.h"
#include "report/format.h"
#include "symbolize/symbolize.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One raw frame of the input, parsed; TEXT is the frame's text after
 * "  #N " (or the folded field), copied as is when it stays raw. */
struct raw_frame {
    bool raw; /* false: not a raw frame (kept as it is, renumbered) */
    uintptr_t pc;
    uintptr_t off;
    char path[PATH_MAX];
    char build_id[2 * 64 + 1]; /* "": none recorded */
    bool unloaded;
};

/* A module seen in the input: PATH at BIAS. STATE says whether it is
 * reported to the current Dwfl (its generation GEN), or cannot be used. */
enum { MOD_NEW, MOD_OK, MOD_BAD };
struct module {
    char *path;
    uintptr_t bias;
    char build_id[2 * 64 + 1];
    int state;
    unsigned gen;
};

static struct {
    mt_sym_state *st; /* NULL: none made yet */
    unsigned gen;     /* counts the Dwfls made */
    struct module *mods;
    size_t nmods, cap;
} t;

static void die_oom(void)
{
    fprintf(stderr, "memtrace: symbolize: out of memory\n");
    exit(2);
}

/* Parses S (LEN bytes): "0xPC (PATH+0xOFF)" then optionally
 * " (BuildId: HEX)" and " (library unloaded since)". */
static bool parse_raw(const char *s, size_t len, struct raw_frame *f)
{
    memset(f, 0, sizeof *f);
    static const char unloaded[] = " (library unloaded since)";
    if (len >= sizeof unloaded - 1 &&
        memcmp(s + len - (sizeof unloaded - 1), unloaded, sizeof unloaded - 1) == 0) {
        f->unloaded = true;
        len -= sizeof unloaded - 1;
    }
    static const char bid[] = " (BuildId: ";
    if (len > 0 && s[len - 1] == ')') {
        const char *b = NULL;
        for (const char *p = s; (p = memmem(p, (size_t)(s + len - p), bid, sizeof bid - 1)); p++)
            b = p;
        if (b) {
            const char *hex = b + sizeof bid - 1;
            size_t n = (size_t)(s + len - 1 - hex);
            if (n == 0 || n >= sizeof f->build_id || strspn(hex, "0123456789abcdef") < n)
                return false;
            memcpy(f->build_id, hex, n);
            f->build_id[n] = '\0';
            len = (size_t)(b - s);
        }
    }
    if (len < 8 || memcmp(s, "0x", 2) != 0 || s[len - 1] != ')')
        return false;
    char *end;
    errno = 0;
    unsigned long pc = strtoul(s + 2, &end, 16);
    if (errno || end == s + 2 || end + 2 > s + len || memcmp(end, " (", 2) != 0)
        return false;
    const char *path = end + 2;
    const char *plus = NULL;
    for (const char *p = path; p < s + len - 1; p++)
        if (p[0] == '+' && p + 2 < s + len && p[1] == '0' && p[2] == 'x')
            plus = p;
    if (!plus || plus == path || (size_t)(plus - path) >= sizeof f->path)
        return false;
    unsigned long off = strtoul(plus + 3, &end, 16);
    if (errno || end != s + len - 1 || end == plus + 3)
        return false;
    memcpy(f->path, path, (size_t)(plus - path));
    f->path[plus - path] = '\0';
    f->pc = pc;
    f->off = off;
    f->raw = true;
    return true;
}

static void new_state(void)
{
    if (t.st)
        mt_sym_free(t.st);
    t.st = NULL;
    Dwfl *dwfl = mt_sym_offline_begin();
    if (!dwfl || !(t.st = mt_sym_new(dwfl)))
        die_oom();
    t.gen++;
}

/* Reports M to DWFL under its real path (what /proc/PID/maps names, and
 * so what the library's frames name); NULL with libdwfl's error. */
static Dwfl_Module *report(Dwfl *dwfl, const struct module *m, bool add)
{
    char real[PATH_MAX];
    return mt_sym_offline_report(dwfl, realpath(m->path, real) ? real : m->path, m->path, m->bias,
                                 add);
}

/* Whether M's file can be read and is the recorded build; one line when
 * not. */
static bool module_usable(struct module *m)
{
    char real[PATH_MAX];
    const char *why;
    Dwfl *dwfl = mt_sym_offline_module(realpath(m->path, real) ? real : m->path, m->path, m->bias,
                                       m->build_id, &why);
    if (!dwfl) {
        fprintf(stderr, "memtrace: symbolize: %s: %s; its frames are left raw\n", m->path, why);
        return false;
    }
    dwfl_end(dwfl);
    return true;
}

/* The module of F, reported to the current Dwfl; NULL when its frames
 * stay raw. A module that cannot join the Dwfl (it overlaps one of
 * another process's layout in the same input) starts a new Dwfl. */
static struct module *frame_module(const struct raw_frame *f)
{
    uintptr_t bias = f->pc - f->off;
    struct module *m = NULL;
    for (size_t i = 0; i < t.nmods && !m; i++)
        if (t.mods[i].bias == bias && strcmp(t.mods[i].path, f->path) == 0 &&
            strcmp(t.mods[i].build_id, f->build_id) == 0)
            m = &t.mods[i];
    if (!m) {
        if (t.nmods == t.cap) {
            t.cap = t.cap ? 2 * t.cap : 16;
            t.mods = realloc(t.mods, t.cap * sizeof *t.mods);
            if (!t.mods)
                die_oom();
        }
        m = &t.mods[t.nmods++];
        *m = (struct module){ .path = strdup(f->path), .bias = bias, .state = MOD_NEW };
        if (!m->path)
            die_oom();
        memcpy(m->build_id, f->build_id, sizeof m->build_id);
        /* One line per module and build: another layout of the same file
         * is as good or as bad. */
        bool known = false;
        for (size_t i = 0; i + 1 < t.nmods && !known; i++)
            if (strcmp(t.mods[i].path, m->path) == 0 &&
                strcmp(t.mods[i].build_id, m->build_id) == 0) {
                known = true;
                m->state = t.mods[i].state == MOD_BAD ? MOD_BAD : MOD_NEW;
            }
        if (!known && !module_usable(m))
            m->state = MOD_BAD;
    }
    if (m->state == MOD_BAD)
        return NULL;
    if (m->state == MOD_OK && m->gen == t.gen)
        return m;
    if (!t.st)
        new_state();
    if (!report(mt_sym_dwfl(t.st), m, true)) {
        new_state();
        if (!report(mt_sym_dwfl(t.st), m, true)) {
            fprintf(stderr, "memtrace: symbolize: %s: %s; its frames are left raw\n", m->path,
                    dwfl_errmsg(-1));
            m->state = MOD_BAD;
            return NULL;
        }
    }
    m->state = MOD_OK;
    m->gen = t.gen;
    return m;
}

/* ------------------------------------------------------------ stacks */

/* A stack being read: its frames' lines whole, each TEXT + PRE the text
 * after its "  #N ". */
struct stack {
    char **text;
    size_t *pre;
    struct raw_frame *f;
    uintptr_t *ret;
    bool *resolved;
    size_t n, cap;
};

/* Appends the frame of LEN bytes of TEXT, whose first PRE are "  #N " (0
 * for a folded field). */
static void stack_add(struct stack *s, const char *text, size_t len, size_t pre)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->text = realloc(s->text, s->cap * sizeof *s->text);
        s->f = realloc(s->f, s->cap * sizeof *s->f);
        s->ret = realloc(s->ret, s->cap * sizeof *s->ret);
        s->resolved = realloc(s->resolved, s->cap * sizeof *s->resolved);
        s->pre = realloc(s->pre, s->cap * sizeof *s->pre);
        if (!s->text || !s->f || !s->ret || !s->resolved || !s->pre)
            die_oom();
    }
    s->text[s->n] = strndup(text, len);
    if (!s->text[s->n])
        die_oom();
    s->pre[s->n] = pre;
    parse_raw(text + pre, len - pre, &s->f[s->n]);
    s->n++;
}

/* Reports the modules of S's raw frames, then works out which frames can
 * be symbolized: a Dwfl made again halfway drops the modules before, so
 * they are looked at until one pass makes none. */
static void stack_resolve(struct stack *s)
{
    for (int pass = 0; pass < 2; pass++) {
        unsigned gen = t.gen;
        for (size_t i = 0; i < s->n; i++) {
            s->resolved[i] = s->f[i].raw && !s->f[i].unloaded && frame_module(&s->f[i]);
            s->ret[i] = s->f[i].raw ? s->f[i].pc + 1 : 0;
        }
        if (gen == t.gen)
            break;
    }
}

static void stack_free(struct stack *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->text[i]);
    s->n = 0;
}

/* The frames of a report's stack, numbered as the library numbers them;
 * as they were when none is raw. */
static void put_stack(mt_out *out, struct stack *s)
{
    bool any = false;
    for (size_t i = 0; i < s->n; i++)
        any |= s->f[i].raw;
    if (any)
        stack_resolve(s);
    unsigned n = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (any && s->resolved[i]) {
            n = mt_fmt_stack_frame(out, t.st, false, n, s->ret, (unsigned)i);
            continue;
        }
        if (any)
            mt_out_printf(out, "  #%u ", n++);
        else
            mt_out_write(out, s->text[i], s->pre[i]);
        mt_out_write(out, s->text[i] + s->pre[i], strlen(s->text[i] + s->pre[i]));
        mt_out_write(out, "\n", 1);
    }
    stack_free(s);
}

/* A folded line, LEN bytes without its newline: FIELDS;...;FIELD COUNT,
 * outermost frame first. False when it holds no raw frame. */
static bool put_folded(mt_out *out, const char *line, size_t len, struct stack *s)
{
    const char *sp = NULL;
    for (const char *p = line + len; p > line; p--)
        if (p[-1] == ' ') {
            sp = p - 1;
            break;
        }
    if (!sp || sp[1] == '\0' || strspn(sp + 1, "0123456789") != (size_t)(line + len - sp - 1))
        return false;
    /* Fields outermost first; the stack is innermost first. */
    size_t nfields = 1;
    for (const char *p = line; p < sp; p++)
        nfields += *p == ';';
    const char **start = malloc(nfields * sizeof *start);
    size_t *flen = malloc(nfields * sizeof *flen);
    if (!start || !flen)
        die_oom();
    size_t k = 0;
    for (const char *p = line; k < nfields; k++) {
        const char *semi = memchr(p, ';', (size_t)(sp - p));
        start[k] = p;
        flen[k] = (size_t)((semi ? semi : sp) - p);
        if (!semi) {
            k++;
            break;
        }
        p = semi + 1;
    }
    bool any = false;
    for (size_t i = k; i-- > 0;) {
        stack_add(s, start[i], flen[i], 0);
        any |= s->f[s->n - 1].raw;
    }
    if (!any) {
        stack_free(s);
        free(start);
        free(flen);
        return false;
    }
    stack_resolve(s);
    for (size_t i = s->n; i-- > 0;) {
        if (s->resolved[i])
            mt_fmt_folded_frame(out, t.st, false, s->ret, (unsigned)i);
        else
            mt_out_write(out, s->text[i], strlen(s->text[i]));
        if (i)
            mt_out_write(out, ";", 1);
    }
    mt_out_write(out, sp, (size_t)(line + len - sp));
    mt_out_write(out, "\n", 1);
    stack_free(s);
    free(start);
    free(flen);
    return true;
}

/* The length of a frame line's "  #N " prefix; 0 when LINE is none. */
static size_t frame_prefix(const char *line)
{
    if (strncmp(line, "  #", 3) != 0)
        return 0;
    size_t d = strspn(line + 3, "0123456789");
    return d && line[3 + d] == ' ' ? 3 + d + 1 : 0;
}

static void symbolize_stream(FILE *in, mt_out *out)
{
    static struct stack s;
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    while ((got = getline(&line, &cap, in)) >= 0) {
        size_t len = (size_t)got;
        bool nl = len && line[len - 1] == '\n';
        if (nl)
            line[--len] = '\0';
        size_t pre = frame_prefix(line);
        /* A stack ends at its first line that is no frame, or at the
         * next stack's frame #0. */
        if (s.n && (!pre || strncmp(line, "  #0 ", 5) == 0))
            put_stack(out, &s);
        if (pre) {
            stack_add(&s, line, len, pre);
            continue;
        }
        if (memchr(line, ';', len) || strncmp(line, "0x", 2) == 0) {
            if (put_folded(out, line, len, &s))
                continue;
        }
        mt_out_write(out, line, len);
        if (nl)
            mt_out_write(out, "\n", 1);
    }
    if (s.n)
        put_stack(out, &s);
    free(line);
}

int mt_text_symbolize(int nfiles, char **files)
{
    mt_sym_read_debug_dir(); /* MEMTRACE_DEBUG_DIR, as the library reads it */
    mt_out out;
    mt_out_init(&out, 1);
    int read = 0;
    if (nfiles == 0) {
        symbolize_stream(stdin, &out);
        read = !ferror(stdin);
    }
    for (int i = 0; i < nfiles; i++) {
        FILE *in = strcmp(files[i], "-") == 0 ? stdin : fopen(files[i], "r");
        if (!in) {
            fprintf(stderr, "memtrace: symbolize: %s: %s\n", files[i], strerror(errno));
            continue;
        }
        symbolize_stream(in, &out);
        mt_out_flush(&out);
        if (!ferror(in))
            read++;
        if (in != stdin)
            fclose(in);
    }
    mt_out_flush(&out);
    if (t.st)
        mt_sym_free(t.st);
    return read ? 0 : 1;
}
