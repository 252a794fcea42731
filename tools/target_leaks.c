/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The leak scan and `memtrace refs` of another process or a core file
 * (target_leaks.h), inside memtrace-symbolize.
 *
 * What comes from where, and why:
 *  - the live blocks and their stacks: from the target's tables, read
 *    through memtrace_state by tables.c (the one reader of the tables out
 *    of process). A million blocks never pass through Python or the pipe.
 *  - the roots: gathered by the exit check's gatherer (scan/leak_gather.c,
 *    leak_roots.h's policy), with this file as its source: every module
 *    libdwfl reports (the ELF program headers at the module's bias, as
 *    dl_iterate_phdr gives them in the process), each thread's stack
 *    pointer, registers and thread pointer. Threads, registers and frames
 *    come from gdb, which knows them the same way for a process and a core
 *    (NT_PRSTATUS).
 *  - memory: target_mem.c (a core's segments, or /proc/PID/mem from gdb);
 *    `memtrace refs` is target_refs.c. */
#include "target_leaks.h"
#include "request.h"
#include "target_internal.h"
#include "target_mem.h"

#include "base/os.h"
#include "tables.h"
#include "leak/leak_report.h"
#include "leak/suppressions.h"
#include "report/format.h"
#include "scan/leak_gather.h"
#include "scan/leak_roots.h"
#include "scan/leak_scan.h"
#include "store/live_table.h"
#include "store/recording_words.h"
#include "store/stack_store.h"
#include "symbolize/symbolize.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ------------------------------------------------------------ the request */

/* N hex numbers from P; false if there are fewer. */
static bool numbers(const char *p, uint64_t *v, unsigned n)
{
    return mt_request_numbers(&p, v, n);
}

/* Hex-encoded bytes (a path, a function name) from P into OUT[SIZE]; "-"
 * is empty. False if it does not fit. */
static bool hex_text(const char *p, char *out, size_t size)
{
    while (*p == ' ')
        p++;
    size_t n = 0;
    if (*p != '-') {
        for (; isxdigit((unsigned char)p[0]) && isxdigit((unsigned char)p[1]); p += 2) {
            if (n + 1 >= size)
                return false;
            char hex[3] = { p[0], p[1], 0 };
            out[n++] = (char)strtoul(hex, NULL, 16);
        }
    }
    out[n] = '\0';
    return true;
}

static void read_request(mt_tables *tables, const char *first, FILE *in, struct request *r)
{
    uint64_t v[8];
    memset(r, 0, sizeof *r);
    r->tables = tables;
    r->self = tables->addr; /* memtrace_state is in memtrace's library */
    r->refs = strncmp(first, "refs ", 5) == 0;
    r->where = strncmp(first, "where ", 6) == 0;
    if (!numbers(first + (r->refs ? 5 : 6), v, 2))
        mt_request_malformed(first);
    r->arg = v[0];
    r->pid = (int)v[1];
    r->tcb_size = 2304; /* glibc 2.3x's struct pthread on x86-64, as leak_self.c */
    char *line = NULL;
    size_t cap = 0;
    for (;;) {
        if (getline(&line, &cap, in) < 0)
            mt_request_malformed("(end of input inside a leaks or refs request)\n");
        const char *p = line;
        if (strncmp(p, "end", 3) == 0) {
            break;
        } else if (strncmp(p, "self ", 5) == 0) {
            if (!numbers(p + 5, v, 1))
                mt_request_malformed(line);
            r->self = v[0];
        } else if (strncmp(p, "since ", 6) == 0) {
            if (!numbers(p + 6, v, 1))
                mt_request_malformed(line);
            r->since = v[0];
        } else if (strncmp(p, "tcb ", 4) == 0) {
            if (!numbers(p + 4, v, 1))
                mt_request_malformed(line);
            r->tcb_size = v[0];
        } else if (strncmp(p, "thread ", 7) == 0) {
            if (!numbers(p + 7, v, 4))
                mt_request_malformed(line);
            r->threads = mt_request_grow(r->threads, r->nthreads, sizeof *r->threads);
            r->threads[r->nthreads++] =
                (struct thread){ (uint32_t)v[0], (uint32_t)v[1], v[2], v[3], NULL, 0, NULL, 0 };
        } else if (strncmp(p, "reg ", 4) == 0 && r->nthreads) {
            struct thread *t = &r->threads[r->nthreads - 1];
            char name[16];
            int used = 0;
            if (sscanf(p + 4, "%15s %n", name, &used) != 1 || !numbers(p + 4 + used, v, 1))
                mt_request_malformed(line);
            t->regs = mt_request_grow(t->regs, t->nregs, sizeof *t->regs);
            struct reg *g = &t->regs[t->nregs++];
            snprintf(g->name, sizeof g->name, "%s", name);
            g->value = v[0];
        } else if (strncmp(p, "frame ", 6) == 0 && r->nthreads) {
            struct thread *t = &r->threads[r->nthreads - 1];
            char *end;
            v[0] = strtoull(p + 6, &end, 16);
            v[1] = strtoull(end, &end, 16);
            t->frames = mt_request_grow(t->frames, t->nframes, sizeof *t->frames);
            struct frame *f = &t->frames[t->nframes++];
            f->level = (unsigned)v[0];
            f->sp = v[1];
            while (*end == ' ')
                end++;
            char *after = strchr(end, ' '); /* hex_text stops there */
            f->ret = after ? strtoull(after, &after, 16) : 0;
            f->outer = after ? (unsigned)strtoul(after, NULL, 16) : 0;
            if (!hex_text(end, f->function, sizeof f->function))
                snprintf(f->function, sizeof f->function, "?");
        } else if (strncmp(p, "suppressions ", 13) == 0) {
            if (!hex_text(p + 13, r->suppressions, sizeof r->suppressions))
                mt_request_malformed(line);
        } else {
            mt_request_malformed(line);
        }
    }
    free(line);
}

static void free_request(struct request *r)
{
    for (size_t i = 0; i < r->nthreads; i++) {
        free(r->threads[i].regs);
        free(r->threads[i].frames);
    }
    free(r->threads);
    free(r->seqs);
}

/* ------------------------------------------------------------ blocks */

/* ------------------------------------------------------------ the program's say */

/* One of the two tables of leak/leak_client.h in the target (descriptor.h's
 * client_* words): entries of two uint64_t, sorted by their first. */
struct client_table {
    uint64_t (*e)[2];
    size_t n;
};

static int by_first(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* The table at ADDR (of at most MAX entries, its count at COUNT) of T's
 * process; empty from a library that publishes none, or if unreadable:
 * the verdict is then the one the program's calls would not change. */
static struct client_table client_table(mt_tables *t, uint64_t addr, uint64_t max, uint64_t count)
{
    struct client_table c = { NULL, 0 };
    uint64_t k = 0;
    const void *p;
    if (!addr || !count || max > 65536 || !mt_tables_read_u64(t, count, &k) || k == 0 || k > max ||
        !(p = mt_tables_read_at(t, addr, (size_t)k * 16)) || !(c.e = malloc((size_t)k * 16)))
        return c;
    memcpy(c.e, p, (size_t)k * 16);
    c.n = (size_t)k;
    qsort(c.e, c.n, sizeof *c.e, by_first);
    return c;
}

/* Whether the block PTR numbered SEQ is one the program ignored
 * (memtrace_ignore_object): a root, as the check in the process holds it. */
static bool ignored(const struct client_table *c, uint64_t ptr, uint64_t seq)
{
    uint64_t key[2] = { ptr, 0 };
    const uint64_t *hit = c->n ? bsearch(key, c->e, c->n, sizeof *c->e, by_first) : NULL;
    return hit && hit[1] == seq;
}

/* The regions the program registered (memtrace_register_root_region) into R,
 * as the check in the process adds them. */
static void push_client_roots(mt_tables *t, struct roots *r)
{
    struct client_table c =
        client_table(t, t->d.client_roots, t->d.client_roots_max, t->d.client_roots_count);
    for (size_t i = 0; i < c.n; i++)
        if (c.e[i][0] < c.e[i][1])
            r->g.add_root(r->g.ctx, &(mt_leak_root){ .lo = c.e[i][0],
                                                     .hi = c.e[i][1],
                                                     .kind = MT_ROOT_OTHER });
    free(c.e);
}

/* ------------------------------------------------------------ the blocks */

/* Every live block of the tables, or NULL with *WHY set (without its
 * "memtrace: "). Sets q->unlocked if a shard with slots was locked. The
 * blocks the program ignored are flagged roots. */
static mt_leak_block *read_blocks(struct request *q, size_t *n, char *why, size_t why_size)
{
    mt_tables *t = q->tables;
    uint64_t total = 0;
    for (size_t s = 0; s < mt_tables_shard_count(t); s++) {
        uintptr_t base;
        uint64_t count;
        bool locked;
        if (!mt_tables_shard_slots(t, s, &base, &count, &locked)) {
            snprintf(why, why_size, "%s", mt_tables_error(t));
            return NULL;
        }
        total += count;
        q->unlocked |= count && locked;
    }
    if (total > ((uint64_t)1 << 36)) {
        snprintf(why, why_size, "%s: the live table claims %" PRIu64 " slots",
                 q->refs ? "refs" : "leaks", total);
        return NULL;
    }
    size_t k = 0, room = 0;
    mt_leak_block *b = NULL;
    struct client_table ign =
        client_table(t, t->d.client_ignored, t->d.client_ignored_max, t->d.client_ignored_count);
    for (size_t s = 0; s < mt_tables_shard_count(t); s++) {
        const mt_tables_entry *e;
        size_t count;
        if (!mt_tables_shard_entries(t, s, &e, &count)) {
            snprintf(why, why_size, "%s", mt_tables_error(t));
            free(b);
            free(ign.e);
            return NULL;
        }
        if (k + count > room) {
            room = k + count;
            mt_leak_block *more = realloc(b, (room ? room : 1) * sizeof *b);
            if (!more) {
                snprintf(why, why_size, "%s: no memory for %zu live blocks",
                         q->refs ? "refs" : "leaks", room);
                free(b);
                free(ign.e);
                return NULL;
            }
            b = more;
        }
        for (size_t i = 0; q->since && i < count; i++) {
            q->seqs = mt_request_grow(q->seqs, q->nseqs, sizeof *q->seqs);
            q->seqs[q->nseqs++] = (struct seq_of){ e[i].ptr, e[i].seq };
        }
        for (size_t i = 0; i < count; i++)
            b[k++] =
                (mt_leak_block){ .ptr = e[i].ptr,
                                 .size = e[i].size,
                                 .stack = e[i].stack,
                                 .flags =
                                     (e[i].kind == MT_KIND_POOL ? MT_LEAK_FLAG_POOL : 0) |
                                     (ignored(&ign, e[i].ptr, e[i].seq) ? MT_LEAK_FLAG_ROOT : 0) };
    }
    free(ign.e);
    *n = k;
    return b ? b : calloc(1, sizeof *b);
}

unsigned mt_target_stack(const struct request *r, uint32_t id, const uintptr_t **frames)
{
    unsigned depth;
    if (!mt_tables_stack(r->tables, id, frames, &depth))
        mt_tables_clear_error(r->tables);
    return depth;
}

/* Flags the blocks whose stack id is impossible (MT_LEAK_FLAG_DAMAGED),
 * one cached answer per stack id slot: a million blocks share a few
 * thousand stacks. */
static void flag_damaged_stacks(const struct request *q, mt_leak_block *b, size_t n)
{
    static struct {
        uint32_t id;
        int8_t impossible; /* -1: not known */
    } cache[4096];
    for (size_t i = 0; i < 4096; i++)
        cache[i].impossible = -1;
    for (size_t i = 0; i < n; i++) {
        size_t c = b[i].stack & 4095;
        if (cache[c].impossible < 0 || cache[c].id != b[i].stack) {
            cache[c].id = b[i].stack;
            cache[c].impossible = mt_tables_stack_impossible(q->tables, b[i].stack) ? 1 : 0;
        }
        if (cache[c].impossible)
            b[i].flags |= MT_LEAK_FLAG_DAMAGED;
    }
}

/* ------------------------------------------------------------ roots */

/* The target as the roots' source (scan/leak_gather.h): modules from
 * libdwfl, threads and registers from gdb's request, memory from the core
 * or /proc/PID/mem. */
struct target {
    Dwfl *dwfl;
    const struct request *q;
};

/* mt_leak_gathered.add_root: one more region (leak_roots.h decides which). */
static void push_region(void *ctx, const mt_leak_root *root)
{
    struct roots *r = ctx;
    r->regions = mt_request_grow(r->regions, r->nregions, sizeof *r->regions);
    r->regions[r->nregions++] = *root;
}

static void push_word(void *ctx, uintptr_t w)
{
    struct roots *r = ctx;
    r->words = mt_request_grow(r->words, r->nwords, sizeof *r->words);
    r->words[r->nwords++] = w;
}

/* Whether MOD defines malloc (glibc's libc, jemalloc, tcmalloc): its
 * writable data is the allocator's (leak_roots.h). memtrace's own library
 * is excluded before this is asked. */
static bool defines_malloc(Dwfl_Module *mod)
{
    int n = dwfl_module_getsymtab(mod);
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        const char *name = dwfl_module_getsym(mod, i, &sym, NULL);
        if (name && sym.st_shndx != SHN_UNDEF && GELF_ST_TYPE(sym.st_info) == STT_FUNC &&
            strcmp(name, "malloc") == 0)
            return true;
    }
    return false;
}

static bool is_linker(const char *name)
{
    const char *base = name ? strrchr(name, '/') : NULL;
    base = base ? base + 1 : name;
    return base && (strncmp(base, "ld-linux", 8) == 0 || strncmp(base, "ld64.so", 7) == 0 ||
                    strncmp(base, "ld.so", 5) == 0 || strncmp(base, "ld-2.", 5) == 0);
}

/* The first module whose headers could not be read, for the warning. */
static char first_unread[256];

/* Whether the file NAME is there and is not ELF: a data file the program
 * mapped (glibc's locale files after setlocale, fonts, ...), which libdwfl
 * lists as a module. Such a mapping holds no roots of its own. */
static bool not_elf_file(const char *name)
{
    int fd = name && name[0] == '/' ? open(name, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0)
        return false;
    unsigned char magic[SELFMAG];
    bool data = read(fd, magic, SELFMAG) == SELFMAG && memcmp(magic, ELFMAG, SELFMAG) != 0;
    close(fd);
    return data;
}

struct modules_ctx {
    uintptr_t self; /* an address inside memtrace's library */
    void (*fn)(void *arg, const mt_leak_module *m);
    void *arg;
};

/* A module as libdwfl reports it, its program headers from its ELF file;
 * memtrace's own library is the one holding SELF. A module's extent is its
 * segments' (bias + p_vaddr + p_memsz): libdwfl's, from /proc/PID/maps,
 * ends with the file's last page, short of a .bss mapped anonymously past
 * it, where memtrace_state itself lives. */
static int module_of(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr low, void *arg)
{
    (void)userdata;
    struct modules_ctx *m = arg;
    Dwarf_Addr high;
    dwfl_module_info(mod, NULL, NULL, &high, NULL, NULL, NULL, NULL);
    mt_leak_module lm = { .kind = MT_LEAK_MODULE_PROGRAM, .linker = is_linker(name) };
    Dwarf_Addr bias;
    Elf *elf = dwfl_module_getelf(mod, &bias);
    size_t n;
    if (!elf || elf_getphdrnum(elf, &n) != 0) {
        if (m->self >= low && m->self < high) {
            lm.kind = MT_LEAK_MODULE_MEMTRACE;
            m->fn(m->arg, &lm);
            return DWARF_CB_OK;
        }
        if (strncmp(name, "[vdso", 5) == 0 || strncmp(name, "linux-vdso", 10) == 0 ||
            not_elf_file(name))
            return DWARF_CB_OK;
        if (!first_unread[0])
            snprintf(first_unread, sizeof first_unread, "%s", name);
        m->fn(m->arg, &lm); /* headers unknown: counted unread */
        return DWARF_CB_OK;
    }
    GElf_Phdr *ph = calloc(n ? n : 1, sizeof *ph);
    size_t k = 0;
    for (size_t i = 0; ph && i < n; i++)
        if (gelf_getphdr(elf, (int)i, &ph[k])) {
            if (ph[k].p_type == PT_LOAD && bias + ph[k].p_vaddr + ph[k].p_memsz > high)
                high = bias + ph[k].p_vaddr + ph[k].p_memsz;
            k++;
        }
    if (m->self >= low && m->self < high) {
        lm.kind = MT_LEAK_MODULE_MEMTRACE;
        m->fn(m->arg, &lm);
        free(ph);
        return DWARF_CB_OK;
    }
    lm = (mt_leak_module){ bias, ph, k,
                           defines_malloc(mod) ? MT_LEAK_MODULE_ALLOCATOR : MT_LEAK_MODULE_PROGRAM,
                           lm.linker };
    if (ph)
        m->fn(m->arg, &lm);
    free(ph);
    return DWARF_CB_OK;
}

static void modules_target(void *ctx, void (*fn)(void *arg, const mt_leak_module *m), void *arg)
{
    const struct target *t = ctx;
    struct modules_ctx m = { t->q->self, fn, arg };
    dwfl_getmodules(t->dwfl, module_of, &m, 0);
}

static bool mapping_target(void *ctx, uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
    (void)ctx;
    return mt_target_mapping(addr, lo, hi);
}

/* Thread I as gdb has it; one without registers (running, in non-stop
 * mode) is not scanned, and a note says so. */
static bool thread_target(void *ctx, size_t i, mt_leak_thread *t)
{
    const struct thread *th = &((const struct target *)ctx)->q->threads[i];
    *t = (mt_leak_thread){ th->tid, th->sp, true, th->tp };
    return th->sp != 0;
}

static bool reg_target(void *ctx, size_t i, size_t k, uintptr_t *value)
{
    const struct thread *th = &((const struct target *)ctx)->q->threads[i];
    if (k >= th->nregs)
        return false;
    *value = th->regs[k].value;
    return true;
}

static unsigned stack_target(void *ctx, uint32_t id, const uintptr_t **frames)
{
    return mt_target_stack(((const struct target *)ctx)->q, id, frames);
}

/* The source over T. glibc's TLS (leak_roots.h): leak_self.c learns the
 * static block's size from glibc in the process; here, where nothing can
 * be called, it is found from the DTV. */
static mt_leak_source source_of(struct target *t)
{
    return (mt_leak_source){ t,
                             mt_target_read,
                             mapping_target,
                             modules_target,
                             t->q->nthreads,
                             thread_target,
                             reg_target,
                             t->q->tcb_size,
                             0,
                             stack_target };
}

/* ------------------------------------------------------------ leaks */

struct report_ctx {
    mt_sym_state *dwfl;
    const struct request *q;
};

static unsigned stack_of(void *ctx, uint32_t id, const uintptr_t **frames)
{
    const struct report_ctx *c = ctx;
    return mt_target_stack(c->q, id, frames);
}

static size_t match(void *ctx, const uintptr_t *frames, unsigned depth, const mt_suppression *sup,
                    size_t nsup)
{
    const struct report_ctx *c = ctx;
    return mt_leak_match_frames(c->dwfl, false, frames, depth, sup, nsup);
}

static void put_stack(void *ctx, mt_out *out, const uintptr_t *frames, unsigned depth)
{
    const struct report_ctx *c = ctx;
    mt_fmt_stack(out, c->dwfl, false, frames, depth);
}

/* MEMTRACE_SUPPRESSIONS as the helper passed it from gdb's environment:
 * the same warnings as at exit, written into the answer (OUT) before the
 * report. Returns how many, in a malloc'ed *SUP. */
static size_t load_suppressions(const char *path, mt_out *out, mt_suppression **sup)
{
    *sup = NULL;
    if (!path[0])
        return 0;
    FILE *f = fopen(path, "re");
    char *text = NULL;
    size_t len = 0;
    if (f) {
        FILE *m = open_memstream(&text, &len);
        char buf[8192];
        size_t got;
        while (m && (got = fread(buf, 1, sizeof buf, f)) > 0)
            fwrite(buf, 1, got, m);
        if (ferror(f) && m) {
            fclose(m);
            free(text);
            text = NULL;
            m = NULL;
        }
        if (m)
            fclose(m);
        int err = errno;
        fclose(f);
        errno = err;
    }
    if (!text) {
        mt_out_printf(out,
                      "memtrace: MEMTRACE_SUPPRESSIONS: cannot read %s (%s); no "
                      "suppressions\n",
                      path, strerror(errno));
        return 0;
    }
    *sup = calloc(MT_SUPPRESSIONS_MAX, sizeof **sup);
    /* mt_suppressions_parse warns through mt_warn, on fd 2: into the
     * answer, in order, while it parses. */
    mt_out_flush(out);
    int saved = dup(2);
    dup2(1, 2);
    size_t n = *sup ? mt_suppressions_parse(path, text, len, *sup) : 0;
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
    }
    free(text);
    return n;
}

static int by_ptr(const void *a, const void *b)
{
    const struct seq_of *x = a, *y = b;
    return x->ptr < y->ptr ? -1 : x->ptr > y->ptr;
}

/* `memtrace leaks new`: the lost blocks of B[0..N) (sorted by ptr, as the
 * scan leaves them) numbered below Q->since leave B and the totals *T;
 * returns how many blocks are left. */
static size_t only_new(struct request *q, mt_leak_block *b, size_t n, mt_leak_totals *t)
{
    qsort(q->seqs, q->nseqs, sizeof *q->seqs, by_ptr);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        struct seq_of key = { b[i].ptr, 0 };
        const struct seq_of *s = bsearch(&key, q->seqs, q->nseqs, sizeof *q->seqs, by_ptr);
        if (b[i].class != MT_LEAK_REACHABLE && s && s->seq < q->since) {
            t->bytes[b[i].class] -= b[i].size;
            t->blocks[b[i].class]--;
            continue;
        }
        b[kept++] = b[i];
    }
    return kept;
}

/* The roots' gap, in words (mt_leak_report_input.incomplete), or NULL. */
static const char *incomplete(const struct roots *r, bool no_notes)
{
    static char text[sizeof first_unread + 160];
    if (r->g.modules_unread) {
        snprintf(text, sizeof text,
                 "the program headers of %u loaded %s could not be read (%s%s), so %s "
                 "data was not scanned",
                 r->g.modules_unread, r->g.modules_unread == 1 ? "module" : "modules",
                 r->g.modules_unread == 1 ? "" : "the first: ", first_unread,
                 r->g.modules_unread == 1 ? "its" : "their");
        return text;
    }
    return no_notes ? "memory for the threads' notes ran out" : NULL;
}

static bool leaks(mt_sym_state *dwfl, const struct request *q, mt_leak_block *b, size_t n,
                  const struct roots *r, const mt_leak_totals *t, mt_out *out)
{
    mt_suppression *sup;
    size_t nsup = load_suppressions(q->suppressions, out, &sup);
    mt_leak_sort_by_stack(b, n);
    mt_leak_note *notes = calloc(q->nthreads ? q->nthreads : 1, sizeof *notes);
    size_t nnotes = 0;
    for (size_t i = 0; notes && i < q->nthreads; i++)
        if (!q->threads[i].sp)
            notes[nnotes++] =
                (mt_leak_note){ q->threads[i].tid,
                                "gdb has no registers for it (running, in non-stop mode?); "
                                "its stack, registers and TLS were not scanned" };
    struct report_ctx c = { dwfl, q };
    mt_leak_report_input in = {
        .pid = q->pid,
        .blocks = b,
        .nblocks = n,
        .totals = t,
        .nroots = r->nregions,
        .max_groups = q->arg ? q->arg : SIZE_MAX,
        .sup = sup,
        .nsup = nsup,
        .stack = stack_of,
        .match = match,
        .put_stack = put_stack,
        .ctx = &c,
        .notes = notes,
        .nnotes = nnotes,
        .incomplete = incomplete(r, !notes),
    };
    mt_leak_report(out, &in);
    free(notes);
    free(sup);
    return true;
}

/* ------------------------------------------------------------ the request */

bool mt_target_leaks_request(mt_sym_state *dwfl, mt_tables *tables, const char *line, FILE *in,
                             mt_out *out)
{
    struct request q;
    read_request(tables, line, in, &q);
    mt_target_mem_refresh();
    if (q.where) { /* the threads' stacks and TLS, no blocks */
        struct target target = { mt_sym_dwfl(dwfl), &q };
        mt_leak_source src = source_of(&target);
        struct roots r = { 0 };
        r.g = (mt_leak_gathered){ push_region, push_word, &r, 0, 0, 0 };
        mt_leak_gather_threads(&src, &r.g);
        bool ok = mt_target_where(dwfl, &q, &r, out);
        free(r.regions);
        free(r.words);
        free_request(&q);
        return ok;
    }
    char why[256];
    size_t n = 0;
    mt_leak_block *b = read_blocks(&q, &n, why, sizeof why);
    if (!b) {
        mt_out_printf(out, "memtrace: %s\n", why);
        free_request(&q);
        return false;
    }
    flag_damaged_stacks(&q, b, n);
    struct target target = { mt_sym_dwfl(dwfl), &q };
    mt_leak_source src = source_of(&target);
    struct roots r = { 0 };
    first_unread[0] = 0;
    r.g = (mt_leak_gathered){ push_region, push_word, &r, 0, 0, 0 };
    mt_leak_gather_modules(&src, &r.g);
    mt_leak_gather_threads(&src, &r.g);
    push_client_roots(q.tables, &r);
    mt_leak_gather_linker_blocks(&src, &r.g, b, n);
    uint64_t rec[4];
    bool has_rec;
    if (mt_tables_recording(tables, rec, &has_rec) && has_rec && (rec[1] & MT_REC_ATTACHED))
        mt_leak_gather_heap(&src, &r.g, b, n);
    if (q.unlocked)
        mt_out_printf(out, "memtrace: leaks: a table shard was read without its lock: a stopped "
                           "thread was changing it; the verdict may be off by its blocks\n");
    mt_leak_input input = {
        .blocks = b,
        .nblocks = n,
        .roots = r.regions,
        .nroots = r.nregions,
        .words = r.words,
        .nwords = r.nwords,
        .read = mt_target_read,
        .region = mt_target_region,
    };
    mt_leak_totals t;
    bool ok = mt_leak_scan(&input, &t);
    if (ok)
        n -= t.damaged + t.pool_storage; /* the dropped entries are past the kept ones */
    if (!ok)
        mt_out_printf(out, "memtrace: %s: no memory for the scan of %zu blocks\n",
                      q.refs ? "refs" : "leaks", n);
    else if (q.refs)
        ok = mt_target_refs(dwfl, &q, b, n, &r, out);
    else {
        if (q.since)
            n = only_new(&q, b, n, &t);
        ok = leaks(dwfl, &q, b, n, &r, &t, out);
    }
    free(b);
    free(r.regions);
    free(r.words);
    free_request(&q);
    return ok;
}
