/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The writer's coding (emit.h, record_format.h): records into the current
 * block, the block through zstd into the file, and with the first
 * allocation of each stack its frames (S) and the modules they lie in (M),
 * read from /proc/self/maps and the modules' own program headers in
 * memory (no loader lock: a thread inside dlopen may be waiting for this
 * writer to drain its ring). Runs under the drain lock only. */
#include "timeline/emit.h"

#include "base/common.h"
#include "base/os.h"
#include "base/output.h"
#include "store/stack_store.h"
#include "timeline/file.h"
#include "timeline/record_format.h"
#include "timeline/timeline.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zstd.h>

#define BLOCK_TARGET ((size_t)1 << 20) /* raw bytes that make a block be written */
#define RECORD_MAX ((size_t)64 << 10)  /* a record at most (strings are cut to fit) */
#define RAW_CAP (BLOCK_TARGET + RECORD_MAX)
#define MODULES_MAX 4096
#define ZSTD_LEVEL 1

static struct {
    uint64_t offset; /* bytes written to the file */
    uint8_t *raw;
    size_t len;
    uint8_t *z;
    size_t zcap;
    ZSTD_CCtx *cctx;
    uint64_t time, addr; /* of the previous record (time) and A or F (addr) */
    uint32_t thread;     /* of the T in force */
    uint64_t events;
    bool failed;
    /* stacks written: an open-addressing set of ids (0 = empty slot) */
    uint32_t *stacks;
    size_t stacks_cap, stacks_n;
    struct {
        uintptr_t low, high;
    } mods[MODULES_MAX];
    unsigned nmods;
    uint64_t rescan_at; /* stacks written when the maps were last read */
    unsigned raw_left;  /* blocks still to write raw (worth_compressing) */
    uint32_t seen[256]; /* stacks written, direct-mapped by id: the set's fast path */
} E;

static bool write_all(const uint8_t *p, size_t n);

static void *map(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

bool mt_tl_emit_init(uint64_t cull_ns)
{
    (void)cull_ns;
    E.zcap = ZSTD_compressBound(RAW_CAP) + MT_REC_HEADER_LEN;
    E.raw = map(RAW_CAP);
    E.z = map(E.zcap);
    E.stacks_cap = 4096;
    E.stacks = map(E.stacks_cap * sizeof *E.stacks);
    E.cctx = ZSTD_createCCtx();
    if (!E.raw || !E.z || !E.stacks || !E.cctx)
        return false;
    ZSTD_CCtx_setParameter(E.cctx, ZSTD_c_compressionLevel, ZSTD_LEVEL);
    /* Tables of 4 K entries, not level 1's 16 K: they stay in the cache,
     * which halves the time for about 4% more bytes (python3's records). */
    ZSTD_CCtx_setParameter(E.cctx, ZSTD_c_hashLog, 12);
    ZSTD_CCtx_setParameter(E.cctx, ZSTD_c_chainLog, 12);
    if (!write_all((const uint8_t *)MT_REC_MAGIC, MT_REC_MAGIC_LEN))
        E.failed = true;
    return true;
}

bool mt_tl_emit_failed(void)
{
    return E.failed;
}

uint64_t mt_tl_emit_events(void)
{
    return E.events;
}

static bool write_all(const uint8_t *p, size_t n)
{
    int fd = mt_tl_file_fd(E.offset);
    if (fd < 0)
        return false;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            mt_warn("MEMTRACE_RECORD: a write failed (%s); recording stopped, the file holds "
                    "what came before",
                    w < 0 ? strerror(errno) : "nothing written");
            return false;
        }
        p += w;
        n -= (size_t)w;
        E.offset += (uint64_t)w;
    }
    return true;
}

/* Whether to compress the next block: every block while zstd shrinks
 * full ones by a quarter or more; after a full one it did not, the next 15 are
 * written raw, then one is tried again (churn's random addresses and
 * sizes shrink by a sixth: not worth zstd's time; a real program's by
 * three quarters). */
static bool worth_compressing(void)
{
    if (E.raw_left == 0)
        return true;
    E.raw_left--;
    return false;
}

bool mt_tl_emit_flush(bool force)
{
    if (E.failed)
        return false;
    if (E.len == 0 || (!force && E.len < BLOCK_TARGET))
        return true;
    size_t n = E.len;
    if (worth_compressing()) {
        n = ZSTD_compress2(E.cctx, E.z + MT_REC_HEADER_LEN, E.zcap - MT_REC_HEADER_LEN, E.raw,
                           E.len);
        if (ZSTD_isError(n)) {
            mt_warn("MEMTRACE_RECORD: zstd: %s; recording stopped", ZSTD_getErrorName(n));
            E.failed = true;
            return false;
        }
        /* Judged on full blocks only: a small one (written for its age)
         * shrinks less whatever it holds. */
        if (n >= E.len - E.len / 4 && E.len >= BLOCK_TARGET) {
            E.raw_left = 15; /* not worth it: this one and the next 15 raw */
            n = E.len;
        } else if (n >= E.len) {
            n = E.len; /* raw: never larger than the records */
        }
    }
    if (n == E.len) /* raw: the lengths equal say so */
        memcpy(E.z + MT_REC_HEADER_LEN, E.raw, E.len);
    uint32_t h[3] = { (uint32_t)n, (uint32_t)E.len, MT_REC_BLOCK_TAG };
    memcpy(E.z, h, sizeof h); /* little-endian, as every Linux target memtrace builds for */
    E.len = 0;
    if (!write_all(E.z, n + MT_REC_HEADER_LEN))
        E.failed = true;
    return !E.failed;
}

/* Room for a record of at most RECORD_MAX bytes. */
static uint8_t *at(void)
{
    if (E.len >= BLOCK_TARGET)
        mt_tl_emit_flush(true);
    return E.raw + E.len;
}

static void done(uint8_t *end)
{
    E.len = (size_t)(end - E.raw);
}

static uint8_t *put_time(uint8_t *p, uint64_t t)
{
    p = mt_rec_put_s(p, (int64_t)(t - E.time));
    E.time = t;
    return p;
}

static uint8_t *put_str(uint8_t *p, const char *s, size_t len, size_t max)
{
    if (!s)
        len = 0;
    if (len > max)
        len = max;
    p = mt_rec_put_u(p, len);
    memcpy(p, s ? s : "", len);
    return p + len;
}

void mt_tl_emit_head(uint64_t pid, uint64_t start_unix_ns, uint64_t cull_ns, uint64_t sample_bytes,
                     const char *command, size_t len)
{
    uint8_t *p = at();
    *p++ = MT_REC_HEAD;
    p = mt_rec_put_u(p, MT_REC_VERSION);
    p = mt_rec_put_u(p, pid);
    p = mt_rec_put_u(p, start_unix_ns);
    p = mt_rec_put_u(p, cull_ns);
    done(put_str(p, command, len, 4096));
    if (sample_bytes) {
        p = at();
        *p++ = MT_REC_SAMPLED;
        done(mt_rec_put_u(p, sample_bytes));
    }
}

static void set_thread(uint32_t thread)
{
    if (thread == E.thread)
        return;
    E.thread = thread;
    uint8_t *p = at();
    *p++ = MT_REC_THREAD;
    done(mt_rec_put_u(p, thread));
}

/* ---- modules */

static bool known(uintptr_t a)
{
    for (unsigned i = 0; i < E.nmods; i++)
        if (a >= E.mods[i].low && a < E.mods[i].high)
            return true;
    return false;
}

/* The GNU build id in the notes at [P, P + LEN), into *ID; its length. */
static size_t build_id(const uint8_t *p, size_t len, const uint8_t **id)
{
    size_t off = 0;
    while (off + sizeof(ElfW(Nhdr)) <= len) {
        const ElfW(Nhdr) *n = (const void *)(p + off);
        size_t name = (n->n_namesz + 3) & ~(size_t)3, desc = (n->n_descsz + 3) & ~(size_t)3;
        const uint8_t *d = p + off + sizeof *n + name;
        if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
            memcmp(p + off + sizeof *n, "GNU", 4) == 0 &&
            off + sizeof *n + name + n->n_descsz <= len) {
            *id = d;
            return n->n_descsz;
        }
        off += sizeof *n + name + desc;
    }
    return 0;
}

/* A module's first mapping M (file offset 0): its M record, when its ELF
 * headers read right and it is new. */
static void module_at(const mt_os_mapping *m)
{
    if (E.nmods >= MODULES_MAX || m->perms[0] != 'r' || m->end - m->start < sizeof(ElfW(Ehdr)) ||
        known(m->start))
        return;
    const ElfW(Ehdr) *eh = (const void *)m->start;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_phoff + (size_t)eh->e_phnum * sizeof(ElfW(Phdr)) > m->end - m->start)
        return;
    const ElfW(Phdr) *ph = (const void *)(m->start + eh->e_phoff);
    uintptr_t first = UINTPTR_MAX, high = 0;
    for (unsigned i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD) {
            if (first == UINTPTR_MAX)
                first = ph[i].p_vaddr & ~(uintptr_t)(mt_os_page_size() - 1);
            if (ph[i].p_vaddr + ph[i].p_memsz > high)
                high = ph[i].p_vaddr + ph[i].p_memsz;
        }
    if (first == UINTPTR_MAX)
        return;
    uintptr_t bias = m->start - first;
    const uint8_t *id = NULL;
    size_t idlen = 0;
    for (unsigned i = 0; i < eh->e_phnum && !idlen; i++)
        if (ph[i].p_type == PT_NOTE && bias + ph[i].p_vaddr >= m->start &&
            bias + ph[i].p_vaddr + ph[i].p_filesz <= m->end)
            idlen = build_id((const uint8_t *)(bias + ph[i].p_vaddr), ph[i].p_filesz, &id);
    E.mods[E.nmods].low = m->start;
    E.mods[E.nmods].high = bias + high;
    E.nmods++;
    uint8_t *p = at();
    *p++ = MT_REC_MODULE;
    p = mt_rec_put_u(p, bias);
    p = mt_rec_put_u(p, m->start);
    p = mt_rec_put_u(p, bias + high);
    p = put_str(p, (const char *)id, idlen, 64);
    done(put_str(p, m->path, m->path_len, 4096));
}

static void read_modules(void)
{
    static char buf[8192];
    int fd = mt_os_maps_open_self();
    if (fd < 0)
        return;
    mt_os_maps it;
    mt_os_maps_fd(&it, fd, buf, sizeof buf);
    mt_os_mapping m;
    while (mt_os_maps_next(&it, &m))
        if (m.offset == 0 && m.path_len && m.path[0] == '/' && !m.truncated && !m.deleted)
            module_at(&m);
    close(fd);
}

/* ---- stacks */

static bool stack_add(uint32_t id)
{
    if (2 * (E.stacks_n + 1) > E.stacks_cap) {
        size_t cap = E.stacks_cap * 2;
        uint32_t *s = map(cap * sizeof *s);
        if (!s)
            return false;
        for (size_t i = 0; i < E.stacks_cap; i++)
            for (size_t j = (size_t)(E.stacks[i] * 2654435761u) & (cap - 1); E.stacks[i];
                 j = (j + 1) & (cap - 1))
                if (!s[j]) {
                    s[j] = E.stacks[i];
                    break;
                }
        munmap(E.stacks, E.stacks_cap * sizeof *s);
        E.stacks = s;
        E.stacks_cap = cap;
    }
    for (size_t j = (size_t)(id * 2654435761u) & (E.stacks_cap - 1);;
         j = (j + 1) & (E.stacks_cap - 1)) {
        if (E.stacks[j] == id)
            return false;
        if (!E.stacks[j]) {
            E.stacks[j] = id;
            E.stacks_n++;
            return true;
        }
    }
}

static void stack_seen(uint32_t id)
{
    if (E.seen[id & 255] == id || !id)
        return;
    E.seen[id & 255] = id;
    if (!stack_add(id))
        return;
    const uintptr_t *f;
    unsigned depth = mt_stack_get(id, &f);
    /* A frame in no module read yet: the maps again, at most once per 64
     * new stacks (code outside any file, a JIT's, would read them each time). */
    for (unsigned i = 0; i < depth; i++)
        if (!known(f[i]) && (E.rescan_at == 0 || E.stacks_n >= E.rescan_at + 64)) {
            E.rescan_at = E.stacks_n;
            read_modules();
            break;
        }
    uint8_t *p = at();
    *p++ = MT_REC_STACK;
    p = mt_rec_put_u(p, id);
    p = mt_rec_put_u(p, depth);
    uintptr_t prev = 0;
    for (unsigned i = 0; i < depth; i++) {
        p = mt_rec_put_s(p, (int64_t)(f[i] - prev));
        prev = f[i];
    }
    done(p);
}

/* ---- events */

void mt_tl_emit_alloc(uint32_t thread, uint64_t t, uint64_t addr, uint64_t size, uint32_t stack)
{
    stack_seen(stack);
    set_thread(thread);
    uint8_t *p = at();
    *p++ = MT_REC_ALLOC;
    p = put_time(p, t);
    p = mt_rec_put_u(p, stack);
    p = mt_rec_put_u(p, size);
    p = mt_rec_put_s(p, (int64_t)(addr - E.addr));
    E.addr = addr;
    done(p);
    E.events++;
}

void mt_tl_emit_free(uint32_t thread, uint64_t t, uint64_t addr)
{
    set_thread(thread);
    uint8_t *p = at();
    *p++ = MT_REC_FREE;
    p = put_time(p, t);
    p = mt_rec_put_s(p, (int64_t)(addr - E.addr));
    E.addr = addr;
    done(p);
    E.events++;
}

void mt_tl_emit_free_after(uint32_t thread, uint64_t t, uint64_t addr, const mt_temp_state *latest)
{
    if (!latest) {
        mt_tl_emit_free(thread, t, addr);
        return;
    }
    set_thread(thread);
    uint8_t *p = at();
    *p++ = MT_REC_FREE_AFTER;
    p = put_time(p, t);
    p = mt_rec_put_s(p, (int64_t)(addr - E.addr));
    E.addr = addr;
    p = mt_rec_put_u(p, latest->armed ? latest->stack : 0);
    done(mt_rec_put_u(p, latest->armed ? latest->size : 0));
    E.events++;
}

void mt_tl_emit_culled(uint64_t t, uint32_t stack, uint64_t count, uint64_t bytes,
                       uint64_t temporary)
{
    stack_seen(stack);
    uint8_t *p = at();
    *p++ = MT_REC_CULLED_TEMP;
    p = put_time(p, t);
    p = mt_rec_put_u(p, stack);
    p = mt_rec_put_u(p, count);
    p = mt_rec_put_u(p, bytes);
    done(mt_rec_put_u(p, temporary));
    E.events += 2 * count;
}

void mt_tl_emit_end(uint64_t t)
{
    uint8_t *p = at();
    *p++ = MT_REC_END;
    done(put_time(p, t));
}

/* ---- symbols */

void mt_tl_put_symbol(void *ctx, uintptr_t addr, const mt_tl_row *rows, unsigned n)
{
    (void)ctx;
    uint8_t *p = at();
    *p++ = MT_REC_SYMBOL;
    p = mt_rec_put_u(p, addr);
    if (n > 32)
        n = 32;
    p = mt_rec_put_u(p, n);
    for (unsigned i = 0; i < n; i++) {
        p = put_str(p, rows[i].function, rows[i].function ? strlen(rows[i].function) : 0, 900);
        p = put_str(p, rows[i].file, rows[i].file ? strlen(rows[i].file) : 0, 900);
        p = mt_rec_put_u(p, rows[i].line > 0 ? (uint64_t)rows[i].line : 0);
    }
    done(p);
}

void mt_tl_emit_symbols(void (*fn)(uintptr_t addr, void *ctx))
{
    /* Every distinct frame once: a set of addresses (0 = empty slot). */
    size_t cap = 1024, n = 0;
    for (size_t i = 0; i < E.stacks_cap; i++)
        if (E.stacks[i])
            n += mt_stack_get(E.stacks[i], &(const uintptr_t *){ 0 });
    while (cap < 2 * n + 2)
        cap *= 2;
    uintptr_t *set = map(cap * sizeof *set);
    if (!set)
        return;
    for (size_t i = 0; i < E.stacks_cap; i++) {
        const uintptr_t *f;
        unsigned depth = E.stacks[i] ? mt_stack_get(E.stacks[i], &f) : 0;
        for (unsigned k = 0; k < depth; k++) {
            for (size_t j = (f[k] >> 2) * 0x9e3779b97f4a7c15ull >> 20 & (cap - 1);;
                 j = (j + 1) & (cap - 1)) {
                if (set[j] == f[k])
                    break;
                if (!set[j]) {
                    set[j] = f[k];
                    fn(f[k], NULL);
                    break;
                }
            }
        }
    }
    munmap(set, cap * sizeof *set);
}
