/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reading a timeline (timeline.h): the blocks one by one, each through zstd,
 * their records into arrays. A block cut short, one that does not
 * decompress to its stated length or a record that does not parse ends
 * the reading there: what came before is the timeline, marked truncated,
 * as is a file whose last record is not the end. */
#include "timeline.h"

#include "timeline/record_format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

void die_oom(void)
{
    fprintf(stderr, "memtrace-export: out of memory\n");
    exit(1);
}

void *tl_xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        die_oom();
    return p;
}

#define GROW(arr, n, cap)                                      \
    do {                                                       \
        if ((n) == (cap)) {                                    \
            (cap) = (cap) ? 2 * (cap) : 1024;                  \
            (arr) = tl_xrealloc((arr), (cap) * sizeof *(arr)); \
        }                                                      \
    } while (0)

typedef struct {
    const uint8_t *p, *end;
    uint64_t time, addr;
    uint32_t thread;
    bool ended;
} cursor;

static bool get_u(cursor *c, uint64_t *v)
{
    return mt_rec_get_u(&c->p, c->end, v);
}

static bool get_time(cursor *c)
{
    int64_t d;
    if (!mt_rec_get_s(&c->p, c->end, &d))
        return false;
    c->time += (uint64_t)d;
    return true;
}

static bool get_addr(cursor *c)
{
    int64_t d;
    if (!mt_rec_get_s(&c->p, c->end, &d))
        return false;
    c->addr += (uint64_t)d;
    return true;
}

/* A string of the stream, copied (NUL-terminated); NULL when cut. */
static char *get_str(cursor *c, size_t *len_out)
{
    uint64_t len;
    if (!get_u(c, &len) || len > (uint64_t)(c->end - c->p))
        return NULL;
    char *s = tl_xrealloc(NULL, len + 1);
    memcpy(s, c->p, len);
    s[len] = '\0';
    c->p += len;
    if (len_out)
        *len_out = len;
    return s;
}

static void add_event(tl_file *r, cursor *c, int kind, uint64_t addr, uint64_t size, uint32_t stack)
{
    GROW(r->ev, r->nev, r->capev);
    r->ev[r->nev++] = (tl_event){ c->time, addr, size, stack, c->thread << 8 | (uint32_t)kind };
}

/* An S record: a stack's id and its frames, as differences. */
static bool read_stack(tl_file *r, cursor *c)
{
    uint64_t a, b;
    if (!get_u(c, &a) || !get_u(c, &b) || b > 4096)
        return false;
    tl_stack s = { (uint32_t)a, (unsigned)b, tl_xrealloc(NULL, (b ? b : 1) * sizeof(uint64_t)) };
    uint64_t prev = 0;
    for (unsigned i = 0; i < s.depth; i++) {
        int64_t dd;
        if (!mt_rec_get_s(&c->p, c->end, &dd)) {
            free(s.frames);
            return false;
        }
        s.frames[i] = prev += (uint64_t)dd;
    }
    GROW(r->stacks, r->nstacks, r->capstacks);
    r->stacks[r->nstacks++] = s;
    return true;
}

/* An M record: a module's bias, range, build id and path. */
static bool read_module(tl_file *r, cursor *c)
{
    tl_module m = { 0 };
    size_t idlen;
    char *id;
    if (!get_u(c, &m.bias) || !get_u(c, &m.low) || !get_u(c, &m.high) || !(id = get_str(c, &idlen)))
        return false;
    for (size_t i = 0; i < idlen && i < 64; i++)
        sprintf(m.build_id + 2 * i, "%02x", (uint8_t)id[i]);
    free(id);
    if (!(m.path = get_str(c, NULL)))
        return false;
    GROW(r->mods, r->nmods, r->capmods);
    r->mods[r->nmods++] = m;
    return true;
}

/* A Y record: an address's rows, innermost first. */
static bool read_symbol(tl_file *r, cursor *c)
{
    uint64_t a;
    tl_symbol s;
    if (!get_u(c, &s.addr) || !get_u(c, &a) || a > 256)
        return false;
    s.nrows = (unsigned)a;
    s.rows = tl_xrealloc(NULL, (a ? a : 1) * sizeof *s.rows);
    for (unsigned i = 0; i < s.nrows; i++) {
        char *fn = get_str(c, NULL), *file = fn ? get_str(c, NULL) : NULL;
        if (!file || !get_u(c, &s.rows[i].line))
            return false; /* NOLINT(clang-analyzer-unix.Malloc): a damaged timeline ends the export, and the process */
        s.rows[i].function = *fn ? fn : (free(fn), NULL);
        s.rows[i].file = *file ? file : (free(file), NULL);
    }
    GROW(r->syms, r->nsyms, r->capsyms);
    r->syms[r->nsyms++] = s;
    return true;
}

/* The record at C (its tag first) into R; false when it is damaged. */
static bool record(tl_file *r, cursor *c)
{
    uint8_t tag = *c->p++;
    uint64_t a, b, d;
    switch (tag) {
    case MT_REC_HEAD: {
        if (!get_u(c, &a) || a != MT_REC_VERSION || !get_u(c, &r->pid) ||
            !get_u(c, &r->start_unix_ns) || !get_u(c, &r->cull_ns))
            return false;
        free(r->command);
        return (r->command = get_str(c, NULL)) != NULL;
    }
    case MT_REC_SAMPLED: return get_u(c, &r->sample_rate);
    case MT_REC_THREAD:
        if (!get_u(c, &a))
            return false;
        c->thread = (uint32_t)a;
        return true;
    case MT_REC_ALLOC:
        if (!get_time(c) || !get_u(c, &a) || !get_u(c, &b) || !get_addr(c))
            return false;
        add_event(r, c, EV_ALLOC, c->addr, b, (uint32_t)a);
        return true;
    case MT_REC_FREE:
        if (!get_time(c) || !get_addr(c))
            return false;
        add_event(r, c, EV_FREE, c->addr, 0, 0);
        return true;
    case MT_REC_CULLED:
        if (!get_time(c) || !get_u(c, &a) || !get_u(c, &b) || !get_u(c, &d))
            return false;
        add_event(r, c, EV_CULLED, b, d, (uint32_t)a);
        r->ev[r->nev - 1].thread_kind = (uint32_t)(b < (1u << 24) ? b : (1u << 24) - 1) << 8 |
                                        EV_CULLED; /* a writer before K: all temporary */
        return true;
    case MT_REC_CULLED_TEMP: {
        uint64_t temps;
        if (!get_time(c) || !get_u(c, &a) || !get_u(c, &b) || !get_u(c, &d) || !get_u(c, &temps) ||
            b >= (1u << 24) || temps > b)
            return false;
        add_event(r, c, EV_CULLED, b, d, (uint32_t)a);
        r->ev[r->nev - 1].thread_kind = (uint32_t)temps << 8 | EV_CULLED;
        return true;
    }
    case MT_REC_FREE_AFTER:
        if (!get_time(c) || !get_addr(c) || !get_u(c, &a) || !get_u(c, &b))
            return false;
        add_event(r, c, a ? EV_FREE_ARMED : EV_FREE_DISARMED, c->addr, b, (uint32_t)a);
        return true;
    case MT_REC_STACK: return read_stack(r, c);
    case MT_REC_MODULE: return read_module(r, c);
    case MT_REC_SYMBOL: return read_symbol(r, c);
    case MT_REC_END:
        if (!get_time(c))
            return false;
        r->duration_ns = c->time;
        c->ended = true;
        return true;
    default: return false;
    }
}

static int by_id(const void *a, const void *b)
{
    const tl_stack *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int by_addr(const void *a, const void *b)
{
    const tl_symbol *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

bool tl_read(const char *path, tl_file *r)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "memtrace-export: %s: %s\n", path, strerror(errno));
        return false;
    }
    size_t size = (size_t)st.st_size;
    const uint8_t *file = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (size < MT_REC_MAGIC_LEN || file == MAP_FAILED ||
        memcmp(file, MT_REC_MAGIC, MT_REC_MAGIC_LEN) != 0) {
        fprintf(stderr, "memtrace-export: %s: not a memtrace recording (MEMTRACE_RECORD)\n", path);
        return false;
    }
    uint8_t *raw = tl_xrealloc(NULL, MT_REC_BLOCK_MAX);
    cursor c = { 0 };
    size_t at = MT_REC_MAGIC_LEN;
    r->why = NULL;
    while (!c.ended && !r->why) {
        uint32_t h[3];
        if (at == size) {
            r->why = "the file ends before the recording's end";
            break;
        }
        if (size - at < MT_REC_HEADER_LEN) {
            r->why = "a block's header is cut";
            break;
        }
        memcpy(h, file + at, sizeof h);
        if (h[2] != MT_REC_BLOCK_TAG || h[1] > MT_REC_BLOCK_MAX) {
            r->why = "a block's header is damaged";
            break;
        }
        if (size - at - MT_REC_HEADER_LEN < h[0]) {
            r->why = "a block is cut";
            break;
        }
        size_t n = h[1];
        if (h[0] == h[1]) /* stored raw */
            memcpy(raw, file + at + MT_REC_HEADER_LEN, n);
        else
            n = ZSTD_decompress(raw, h[1], file + at + MT_REC_HEADER_LEN, h[0]);
        if (ZSTD_isError(n) || n != h[1]) {
            r->why = "a block does not decompress";
            break;
        }
        at += MT_REC_HEADER_LEN + h[0];
        c.p = raw;
        c.end = raw + n;
        while (c.p < c.end && !c.ended)
            if (!record(r, &c)) {
                r->why = "a record is damaged";
                break;
            }
    }
    r->truncated = !c.ended;
    if (r->truncated) /* the last event's time is as far as it goes */
        r->duration_ns = c.time;
    free(raw);
    munmap((void *)file, size);
    qsort(r->stacks, r->nstacks, sizeof *r->stacks, by_id);
    qsort(r->syms, r->nsyms, sizeof *r->syms, by_addr);
    return true;
}

const tl_stack *tl_stack_of(const tl_file *r, uint32_t id)
{
    tl_stack key = { .id = id };
    return bsearch(&key, r->stacks, r->nstacks, sizeof key, by_id);
}

const tl_symbol *tl_symbol_of(const tl_file *r, uint64_t addr)
{
    tl_symbol key = { .addr = addr };
    return bsearch(&key, r->syms, r->nsyms, sizeof key, by_addr);
}

const tl_module *tl_module_of(const tl_file *r, uint64_t addr)
{
    for (size_t i = r->nmods; i-- > 0;) /* the newest first: a range reused after dlclose */
        if (addr >= r->mods[i].low && addr < r->mods[i].high)
            return &r->mods[i];
    return NULL;
}
