/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "core_check.h"

#include "request.h"

#include <elf.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The core's bytes, mapped whole. */
typedef struct {
    const unsigned char *raw;
    uint64_t size;
} core_file;

/* Little-endian words at P (the checked cores are little-endian). */
static uint64_t le(const unsigned char *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = n; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The bytes [OFF, OFF + LEN) of F clipped to its end: *N of them. */
static const unsigned char *span(const core_file *f, uint64_t off, uint64_t len, uint64_t *n)
{
    *n = off >= f->size ? 0 : (len < f->size - off ? len : f->size - off);
    return *n ? f->raw + off : NULL;
}

/* The GNU build-id note in the N bytes at P (an ELF file's first page) as
 * hex into OUT (41 bytes), or false. */
static bool build_id(const unsigned char *p, uint64_t n, char *out)
{
    static const unsigned char head[] = "\4\0\0\0\24\0\0\0\3\0\0\0GNU";
    for (uint64_t at = 0; p && at + 36 <= n; at++) {
        if (memcmp(p + at, head, 16) != 0)
            continue;
        static const char hex[] = "0123456789abcdef";
        for (size_t i = 0; i < 20; i++) {
            out[2 * i] = hex[p[at + 16 + i] >> 4];
            out[2 * i + 1] = hex[p[at + 16 + i] & 15];
        }
        out[40] = '\0';
        return true;
    }
    return false;
}

/* A mapped file of the NT_FILE note: [lo, hi) and its name. */
typedef struct {
    uint64_t lo, hi;
    const char *name;
    int len;
} mapped;

typedef struct {
    mapped *files; /* mt_request_grow's array */
    unsigned n;
    bool have_phdr;
    uint64_t phdr; /* AT_PHDR: the dumping executable's program headers */
} notes;

/* A program header: what the check reads of one. */
typedef struct {
    uint64_t offset, vaddr, filesz;
} segment;

static void read_nt_file(notes *nt, const unsigned char *body, uint64_t n)
{
    if (n < 16)
        return;
    uint64_t count = le(body, 8);
    if (count > (n - 16) / 24)
        return; /* more entries than bytes: not a note of the kernel's */
    for (uint64_t k = 0, at = 16 + 24 * count; k < count && at < n; k++) {
        const char *name = (const char *)body + at;
        int len = (int)strnlen(name, n - at);
        nt->files = mt_request_grow(nt->files, nt->n, sizeof *nt->files);
        nt->files[nt->n++] =
            (mapped){ le(body + 16 + 24 * k, 8), le(body + 24 + 24 * k, 8), name, len };
        at += (uint64_t)len + 1;
    }
}

static void read_notes(notes *nt, const unsigned char *data, uint64_t n)
{
    for (uint64_t at = 0; at + 12 <= n;) {
        uint64_t namesz = le(data + at, 4), descsz = le(data + at + 4, 4),
                 kind = le(data + at + 8, 4);
        uint64_t desc = at + 12 + ((namesz + 3) & ~3ull);
        uint64_t len = desc >= n ? 0 : (descsz < n - desc ? descsz : n - desc);
        if (kind == 0x46494c45) /* NT_FILE */
            read_nt_file(nt, data + desc, len);
        else if (kind == 6) /* NT_AUXV */
            for (uint64_t k = 0; k + 16 <= len; k += 16)
                if (le(data + desc + k, 8) == 3) { /* AT_PHDR */
                    nt->phdr = le(data + desc + k + 8, 8);
                    nt->have_phdr = true;
                }
        at = desc + ((descsz + 3) & ~3ull);
    }
}

static const char *base(const char *s, int len, int *blen)
{
    const char *slash = memrchr(s, '/', (size_t)len);
    const char *b = slash ? slash + 1 : s;
    *blen = (int)(s + len - b);
    return b;
}

/* The executable that dumped: the mapping holding AT_PHDR, its build-id
 * (from the first load segment of its lowest mapping) against EXE's, else
 * its name. Prints the sentence and returns true when they differ. */
static bool other_program(const core_file *f, const notes *nt, const mapped *by,
                          const segment *loads, unsigned nloads, const char *core, const char *exe)
{
    uint64_t start = UINT64_MAX, n;
    for (unsigned i = 0; i < nt->n; i++)
        if (nt->files[i].len == by->len && memcmp(nt->files[i].name, by->name, by->len) == 0 &&
            nt->files[i].lo < start)
            start = nt->files[i].lo;
    char core_id[41], exe_id[41];
    bool have_core = false, have_exe = false;
    for (unsigned i = 0; i < nloads; i++)
        if (loads[i].vaddr == start && loads[i].filesz) {
            const unsigned char *p =
                span(f, loads[i].offset, loads[i].filesz < 4096 ? loads[i].filesz : 4096, &n);
            have_core = build_id(p, n, core_id);
            break;
        }
    unsigned char head[4096];
    int fd = open(exe, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t got = read(fd, head, sizeof head);
        have_exe = got > 0 && build_id(head, (uint64_t)got, exe_id);
        close(fd);
    }
    if (have_core && have_exe) {
        if (strcmp(core_id, exe_id) == 0)
            return false;
        printf("the core file %s was not dumped by %s: its program was %.*s, build-id %s, not %s\n",
               core, exe, by->len, by->name, core_id, exe_id);
        return true;
    }
    int bl, el;
    const char *b = base(by->name, by->len, &bl), *e = base(exe, (int)strlen(exe), &el);
    if (bl == el && memcmp(b, e, (size_t)bl) == 0)
        return false;
    printf("the core file %s was not dumped by %s: its program was %.*s\n", core, exe, by->len,
           by->name);
    return true;
}

/* The program headers (LOADS and NOTE_SEGS, *NLOADS and *NNOTES of
 * them, arrays of PHNUM) as far as the file holds them; false, with the
 * cut-short sentence printed, when the segments or the table reach past
 * its end. */
static bool read_segments(const core_file *f, const char *core, segment *loads, unsigned *nloads,
                          segment *note_segs, unsigned *nnotes)
{
    const unsigned char *h = f->raw;
    uint64_t phoff = le(h + 0x20, 8), entsize = le(h + 0x36, 2), phnum = le(h + 0x38, 2), got;
    const unsigned char *tab = span(f, phoff, entsize * phnum, &got);
    uint64_t need = add_sat(phoff, got);
    for (uint64_t i = 0; i < got / entsize; i++) {
        const unsigned char *p = tab + i * entsize;
        segment s = { le(p + 8, 8), le(p + 16, 8), le(p + 32, 8) };
        uint64_t end = add_sat(s.offset, s.filesz);
        need = need > end ? need : end;
        if (le(p, 4) == PT_LOAD)
            loads[(*nloads)++] = s;
        else if (le(p, 4) == PT_NOTE)
            note_segs[(*nnotes)++] = s;
    }
    if (got == entsize * phnum && f->size >= need)
        return true;
    printf("the core file %s is cut short: %llu bytes, where its segments need %llu (a core size "
           "limit or a full disk when it was dumped?)\n",
           core, (unsigned long long)f->size, (unsigned long long)need);
    return false;
}

static bool is_memtrace(const mapped *m)
{
    int bl;
    const char *b = base(m->name, m->len, &bl);
    return bl >= 11 && memcmp(b, "libmemtrace", 11) == 0;
}

static void check(const core_file *f, const char *core, const char *exe)
{
    const unsigned char *h = f->raw;
    if (f->size < 64 || memcmp(h, "\177ELF", 4) != 0 || h[4] != ELFCLASS64 || h[5] != ELFDATA2LSB)
        return; /* not a 64-bit little-endian ELF file: gdb says what it is */
    uint64_t entsize = le(h + 0x36, 2), phnum = le(h + 0x38, 2);
    if (entsize < 56 || phnum > 1 << 16)
        return;
    segment *loads = calloc(phnum + 1, sizeof *loads),
            *note_segs = calloc(phnum + 1, sizeof *loads);
    unsigned nloads = 0, nnotes = 0;
    notes nt = { 0 };
    if (!loads || !note_segs || !read_segments(f, core, loads, &nloads, note_segs, &nnotes))
        goto out;
    for (unsigned i = 0; i < nnotes; i++) {
        uint64_t n, len = note_segs[i].filesz < (1 << 24) ? note_segs[i].filesz : 1 << 24;
        const unsigned char *data = span(f, note_segs[i].offset, len, &n);
        if (data)
            read_notes(&nt, data, n);
    }
    if (nt.n == 0)
        goto out; /* no NT_FILE note (an old kernel): nothing more to tell */
    const mapped *by = NULL;
    for (unsigned i = 0; nt.have_phdr && !by && i < nt.n; i++)
        if (nt.files[i].lo <= nt.phdr && nt.phdr < nt.files[i].hi)
            by = &nt.files[i];
    if (by && exe && other_program(f, &nt, by, loads, nloads, core, exe))
        goto out;
    bool memtrace = false;
    for (unsigned i = 0; i < nt.n && !memtrace; i++)
        memtrace = is_memtrace(&nt.files[i]);
    if (!memtrace)
        printf("libmemtrace is not among the libraries of the core file %s: %.*s did not run under "
               "memtrace when it dumped (`memtrace run` or `memtrace gdb` start it so)\n",
               core, by ? by->len : 11, by ? by->name : "the program");
out:
    free(nt.files);
    free(loads);
    free(note_segs);
}

int mt_core_check(const char *core, const char *exe)
{
    int fd = open(core, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 64) {
        void *raw = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (raw != MAP_FAILED) {
            core_file f = { raw, (uint64_t)st.st_size };
            check(&f, core, exe);
            munmap(raw, (size_t)st.st_size);
        }
    }
    close(fd);
    return 0;
}
