/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pprof writer (see pprof.h): samples are gathered unsymbolized, then
 * mt_pprof_write interns strings, functions, locations and mappings while
 * symbolizing each distinct address once, builds protobuf-c's message tree
 * and streams its encoding through zlib's gzip deflate to the file
 * (pprof_gzip.c). All
 * memory, the message tree and zlib's state included, comes from the
 * caller's mt_pprof_heap. protobuf-c allocates only to unpack, which this
 * file never does: packing writes through our ProtobufCBuffer. */
#include "report/pprof.h"

#include "base/common.h"
#include "report/pprof_gzip.h"
#include "report/pprof_index.h"

#include <profile.pb-c.h> /* generated into build/proto from pprof's profile.proto */

#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ samples */

struct sample {
    uint64_t key;
    uintptr_t *frames;
    unsigned depth;
    uint32_t thread;   /* 0: no single thread */
    char *thread_name; /* NULL: none */
    char *tag;         /* the tag scope's path, "tag" label; NULL: none */
    mt_pprof_values v;
};

/* A function: string numbers of its name, mangled name and file. */
struct function {
    int64_t name, system_name, file;
};

struct location {
    uintptr_t address;
    uint64_t mapping;            /* id, 0: none */
    uint32_t first_line, nlines; /* in lines[] */
};

struct line {
    uint64_t function; /* id */
    int64_t line;
};

struct mapping {
    Dwfl_Module *mod; /* NULL: a raw mapping (MEMTRACE_SYMBOLIZE=later) */
    bool raw;
    uint64_t start, limit, offset;
    int64_t file, build_id;
};

struct mt_pprof {
    mt_pprof_heap heap;
    bool with_alloc;
    uint64_t period; /* mt_pprof_set_period: 0 = 1 */
    bool failed;     /* out of memory while writing */

    struct sample *samples;
    size_t nsamples, samples_cap;
    struct mt_pprof_index sample_ix; /* by key */

    char **strings;
    size_t nstrings, strings_cap;
    struct mt_pprof_index string_ix;

    struct function *functions;
    size_t nfunctions, functions_cap;
    struct mt_pprof_index function_ix;

    struct location *locations;
    size_t nlocations, locations_cap;
    struct mt_pprof_index location_ix; /* by address */

    struct line *lines;
    size_t nlines, lines_cap;

    struct mapping *mappings;
    size_t nmappings, mappings_cap;
    size_t last_mapping; /* the mapping found last, checked first */
    uintptr_t main_addr; /* mt_pprof_main's; 0: unknown */
    /* MEMTRACE_SYMBOLIZE=later: Locations carry the address of the call
     * (ret - 1) and their Mapping only, for pprof to symbolize. */
    bool raw;
};

static uint64_t sample_hash(const void *ctx, uint32_t n)
{
    return mt_pprof_mix(((const mt_pprof *)ctx)->samples[n].key);
}

mt_pprof *mt_pprof_new(const mt_pprof_heap *heap, bool with_alloc)
{
    mt_pprof *p = heap->alloc(sizeof *p);
    if (!p)
        return NULL;
    memset(p, 0, sizeof *p);
    p->heap = *heap;
    p->with_alloc = with_alloc;
    return p;
}

void mt_pprof_set_period(mt_pprof *p, uint64_t bytes)
{
    p->period = bytes;
}

size_t mt_pprof_samples(const mt_pprof *p)
{
    return p->nsamples;
}

bool mt_pprof_add(mt_pprof *p, uint64_t key, const uintptr_t *frames, unsigned depth,
                  const mt_fmt_thread *thread, const mt_pprof_values *values)
{
    const mt_pprof_heap *h = &p->heap;
    struct mt_pprof_index *ix = &p->sample_ix;
    size_t at = 0;
    if (ix->cap) {
        for (at = mt_pprof_mix(key) & (ix->cap - 1); ix->slot[at]; at = (at + 1) & (ix->cap - 1)) {
            struct sample *s = &p->samples[ix->slot[at] - 1];
            if (s->key == key) {
                s->v.alloc_objects += values->alloc_objects;
                s->v.alloc_bytes += values->alloc_bytes;
                s->v.inuse_objects += values->inuse_objects;
                s->v.inuse_bytes += values->inuse_bytes;
                return true;
            }
        }
    }
    if (!mt_pprof_index_reserve(h, ix, sample_hash, p) ||
        !mt_pprof_grow(h, (void **)&p->samples, &p->samples_cap, p->nsamples + 1,
                       sizeof *p->samples))
        return false;
    struct sample s = { .key = key, .depth = depth, .v = *values };
    s.frames = h->alloc((depth ? depth : 1) * sizeof *frames);
    if (!s.frames)
        return false;
    memcpy(s.frames, frames, depth * sizeof *frames);
    if (thread) {
        s.thread = thread->number;
        if (thread->name) {
            size_t len = strlen(thread->name);
            s.thread_name = h->alloc(len + 1);
            if (s.thread_name)
                memcpy(s.thread_name, thread->name, len + 1);
        }
    }
    p->samples[p->nsamples] = s;
    for (at = mt_pprof_mix(key) & (ix->cap - 1); ix->slot[at]; at = (at + 1) & (ix->cap - 1))
        ;
    ix->slot[at] = (uint32_t)++p->nsamples;
    ix->count++;
    return true;
}

bool mt_pprof_tag(mt_pprof *p, uint64_t key, const char *tag)
{
    struct mt_pprof_index *ix = &p->sample_ix;
    if (!ix->cap || !tag || !*tag)
        return true;
    size_t at = mt_pprof_mix(key) & (ix->cap - 1), len = strlen(tag);
    while (ix->slot[at] && p->samples[ix->slot[at] - 1].key != key)
        at = (at + 1) & (ix->cap - 1);
    struct sample *s = ix->slot[at] ? &p->samples[ix->slot[at] - 1] : NULL;
    if (s && !s->tag && (s->tag = p->heap.alloc(len + 1)) != NULL)
        memcpy(s->tag, tag, len + 1);
    return !s || s->tag != NULL;
}

/* ------------------------------------------------------------ interning */

static uint64_t string_hash_of(const char *s)
{
    uint64_t x = 0xcbf29ce484222325ull;
    for (; *s; s++)
        x = (x ^ (unsigned char)*s) * 0x100000001b3ull;
    return x;
}

static uint64_t string_hash(const void *ctx, uint32_t n)
{
    return string_hash_of(((const mt_pprof *)ctx)->strings[n]);
}

/* The string table's number of S (copied on first sight); 0 (the empty
 * string) when out of memory, with p->failed set. */
static int64_t intern_string(mt_pprof *p, const char *s)
{
    struct mt_pprof_index *ix = &p->string_ix;
    uint64_t hash = string_hash_of(s);
    if (ix->cap) {
        for (size_t at = hash & (ix->cap - 1); ix->slot[at]; at = (at + 1) & (ix->cap - 1))
            if (strcmp(p->strings[ix->slot[at] - 1], s) == 0)
                return ix->slot[at] - 1;
    }
    size_t len = strlen(s);
    char *copy = p->heap.alloc(len + 1);
    if (!copy || !mt_pprof_index_reserve(&p->heap, ix, string_hash, p) ||
        !mt_pprof_grow(&p->heap, (void **)&p->strings, &p->strings_cap, p->nstrings + 1,
                       sizeof *p->strings)) {
        p->heap.free(copy);
        p->failed = true;
        return 0;
    }
    memcpy(copy, s, len + 1);
    p->strings[p->nstrings] = copy;
    size_t at = hash & (ix->cap - 1);
    while (ix->slot[at])
        at = (at + 1) & (ix->cap - 1);
    ix->slot[at] = (uint32_t)++p->nstrings;
    ix->count++;
    return (int64_t)p->nstrings - 1;
}

static uint64_t function_hash_of(const struct function *f)
{
    return mt_pprof_mix((uint64_t)f->name * 31 + (uint64_t)f->system_name * 17 + (uint64_t)f->file);
}

static uint64_t function_hash(const void *ctx, uint32_t n)
{
    return function_hash_of(&((const mt_pprof *)ctx)->functions[n]);
}

/* The id (number + 1) of function F; 0 when out of memory. */
static uint64_t intern_function(mt_pprof *p, const struct function *f)
{
    struct mt_pprof_index *ix = &p->function_ix;
    uint64_t hash = function_hash_of(f);
    if (ix->cap) {
        for (size_t at = hash & (ix->cap - 1); ix->slot[at]; at = (at + 1) & (ix->cap - 1)) {
            const struct function *g = &p->functions[ix->slot[at] - 1];
            if (g->name == f->name && g->system_name == f->system_name && g->file == f->file)
                return ix->slot[at];
        }
    }
    if (!mt_pprof_index_reserve(&p->heap, ix, function_hash, p) ||
        !mt_pprof_grow(&p->heap, (void **)&p->functions, &p->functions_cap, p->nfunctions + 1,
                       sizeof *p->functions)) {
        p->failed = true;
        return 0;
    }
    p->functions[p->nfunctions] = *f;
    size_t at = hash & (ix->cap - 1);
    while (ix->slot[at])
        at = (at + 1) & (ix->cap - 1);
    ix->slot[at] = (uint32_t)++p->nfunctions;
    ix->count++;
    return p->nfunctions;
}

/* The id of the mapping of the loaded module holding PC, from memory
 * (mt_sym_module_at: no file read); 0 when none holds it. Its file name
 * and build ID are what pprof needs to find the file and symbolize. */
static uint64_t intern_raw_mapping(mt_pprof *p, uintptr_t pc)
{
    for (size_t i = 0; i < p->nmappings; i++) {
        if (pc >= p->mappings[i].start && pc < p->mappings[i].limit) {
            p->last_mapping = i;
            return i + 1;
        }
    }
    static mt_sym_module mod; /* large; the caller holds the symbolizer's lock */
    if (!mt_sym_module_at(pc, &mod))
        return 0;
    if (!mt_pprof_grow(&p->heap, (void **)&p->mappings, &p->mappings_cap, p->nmappings + 1,
                       sizeof *p->mappings)) {
        p->failed = true;
        return 0;
    }
    struct mapping m = { .raw = true, .start = mod.start, .limit = mod.limit, .offset = mod.offset };
    m.file = intern_string(p, mod.path);
    if (mod.build_id[0])
        m.build_id = intern_string(p, mod.build_id);
    p->mappings[p->nmappings] = m;
    p->last_mapping = p->nmappings;
    return ++p->nmappings;
}

/* The id of the mapping of the module holding ADDR (looked up at ADDR - 1,
 * as its rows are); 0 when no module of DWFL holds it (a library unloaded
 * since, resolved from its file: the Location then has no Mapping). */
static uint64_t intern_mapping(mt_pprof *p, mt_sym_state *dwfl, uintptr_t addr)
{
    if (p->nmappings) {
        const struct mapping *m = &p->mappings[p->last_mapping];
        if (addr - 1 >= m->start && addr - 1 < m->limit)
            return p->last_mapping + 1;
    }
    if (mt_sym_raw(dwfl))
        return intern_raw_mapping(p, addr - 1);
    Dwfl_Module *mod = dwfl ? mt_sym_addrmodule(mt_sym_dwfl(dwfl), addr - 1) : NULL;
    if (!mod)
        return 0;
    for (size_t i = 0; i < p->nmappings; i++) {
        if (p->mappings[i].mod == mod) {
            p->last_mapping = i;
            return i + 1;
        }
    }
    Dwarf_Addr start = 0, end = 0;
    const char *mainfile = NULL;
    const char *name = dwfl_module_info(mod, NULL, &start, &end, NULL, NULL, &mainfile, NULL);
    if (!mt_pprof_grow(&p->heap, (void **)&p->mappings, &p->mappings_cap, p->nmappings + 1,
                       sizeof *p->mappings)) {
        p->failed = true;
        return 0;
    }
    struct mapping m = { .mod = mod, .start = start, .limit = end };
    /* The module's lowest address is where its first loadable segment is
     * mapped; that segment starts its file's mapped bytes: offset 0 for
     * the usual layout (the ELF header mapped), which pprof needs only to
     * find the file's addresses for symbolizing, which it need not do. */
    m.offset = 0;
    m.file = intern_string(p, mainfile ? mainfile : name ? name : "");
    const unsigned char *bits;
    GElf_Addr vaddr;
    int len = dwfl_module_build_id(mod, &bits, &vaddr);
    if (len > 0) {
        char hex[2 * 64 + 1];
        int n = len < 64 ? len : 64;
        for (int i = 0; i < n; i++)
            snprintf(hex + 2 * (size_t)i, 3, "%02x", bits[i]);
        m.build_id = intern_string(p, hex);
    }
    p->mappings[p->nmappings] = m;
    p->last_mapping = p->nmappings;
    return ++p->nmappings;
}

void mt_pprof_main(mt_pprof *p, uintptr_t addr)
{
    p->main_addr = addr;
}

/* The main executable's Mapping (interned if no frame used it) becomes
 * id 1, the one that was id 1 takes its place; the Locations follow. */
static void main_mapping_first(mt_pprof *p, mt_sym_state *dwfl)
{
    if (!p->main_addr)
        return;
    uint64_t id = intern_mapping(p, dwfl, p->main_addr + 1); /* looked up at ADDR - 1 */
    if (id <= 1)
        return;
    struct mapping m = p->mappings[0];
    p->mappings[0] = p->mappings[id - 1];
    p->mappings[id - 1] = m;
    p->last_mapping = 0;
    for (size_t i = 0; i < p->nlocations; i++) {
        if (p->locations[i].mapping == 1)
            p->locations[i].mapping = id;
        else if (p->locations[i].mapping == id)
            p->locations[i].mapping = 1;
    }
}

struct rows_ctx {
    mt_pprof *p;
    struct location *loc;
};

/* mt_frames_fn: the rows of one address as the Location's Lines. */
static void put_lines(const mt_frame *rows, unsigned count, void *arg)
{
    struct rows_ctx *c = arg;
    mt_pprof *p = c->p;
    c->loc->first_line = (uint32_t)p->nlines;
    for (unsigned i = 0; i < count; i++) {
        const mt_frame *f = &rows[i];
        char buf[1024];
        const char *name = f->function;
        if (!name && f->module) {
            snprintf(buf, sizeof buf, "%s+0x%lx", f->module, (unsigned long)f->offset);
            name = buf;
        }
        if (!name)
            continue; /* the Location's address says all that is known */
        struct function fn;
        fn.name = intern_string(p, name);
        fn.system_name = f->mangled ? intern_string(p, f->mangled) : fn.name;
        fn.file = intern_string(p, f->file ? f->file : "");
        uint64_t id = intern_function(p, &fn);
        if (!id || !mt_pprof_grow(&p->heap, (void **)&p->lines, &p->lines_cap, p->nlines + 1,
                                  sizeof *p->lines)) {
            p->failed = true;
            return;
        }
        p->lines[p->nlines++] = (struct line){ id, f->file ? f->line : 0 };
    }
    c->loc->nlines = (uint32_t)(p->nlines - c->loc->first_line);
}

static uint64_t location_hash(const void *ctx, uint32_t n)
{
    return mt_pprof_mix(((const mt_pprof *)ctx)->locations[n].address);
}

/* The id of the Location of ADDR, symbolized on first sight; 0 when out of
 * memory. */
static uint64_t intern_location(mt_pprof *p, mt_sym_state *dwfl, bool refresh, uintptr_t addr)
{
    struct mt_pprof_index *ix = &p->location_ix;
    uint64_t hash = mt_pprof_mix(addr);
    if (ix->cap) {
        for (size_t at = hash & (ix->cap - 1); ix->slot[at]; at = (at + 1) & (ix->cap - 1))
            if (p->locations[ix->slot[at] - 1].address == addr)
                return ix->slot[at];
    }
    if (!mt_pprof_index_reserve(&p->heap, ix, location_hash, p) ||
        !mt_pprof_grow(&p->heap, (void **)&p->locations, &p->locations_cap, p->nlocations + 1,
                       sizeof *p->locations)) {
        p->failed = true;
        return 0;
    }
    struct location *loc = &p->locations[p->nlocations];
    *loc = (struct location){ .address = addr };
    if (mt_sym_raw(dwfl)) {
        loc->mapping = intern_raw_mapping(p, addr - 1);
    } else if (dwfl) {
        struct rows_ctx c = { p, loc };
        mt_sym_frames(dwfl, refresh, addr, put_lines, &c);
        loc->mapping = intern_mapping(p, dwfl, addr);
    }
    size_t at = hash & (ix->cap - 1);
    while (ix->slot[at])
        at = (at + 1) & (ix->cap - 1);
    ix->slot[at] = (uint32_t)++p->nlocations;
    ix->count++;
    return p->nlocations;
}

/* ------------------------------------------------------------ the message tree */

/* The text of thread label N (NAME may be NULL) into BUF. */
static const char *thread_text(char *buf, size_t size, uint32_t n, const char *name)
{
    if (name)
        snprintf(buf, size, "%u (%s)", n, name);
    else
        snprintf(buf, size, "%u", n);
    return buf;
}

/* The message tree's pieces, allocated in bulk and freed together. */
struct tree {
    Perftools__Profiles__Profile profile;
    Perftools__Profiles__ValueType types[4], period_type;
    Perftools__Profiles__ValueType *type_ptrs[4];
    Perftools__Profiles__Sample *samples, **sample_ptrs;
    Perftools__Profiles__Label *labels, **label_ptrs;
    uint64_t *location_ids;
    int64_t *values;
    Perftools__Profiles__Location *locations, **location_ptrs;
    Perftools__Profiles__Line *lines, **line_ptrs;
    Perftools__Profiles__Function *functions, **function_ptrs;
    Perftools__Profiles__Mapping *mappings, **mapping_ptrs;
};

static void *alloc_array(mt_pprof *p, size_t n, size_t elem)
{
    void *a = p->heap.alloc((n ? n : 1) * elem);
    if (!a)
        p->failed = true;
    return a;
}

static void tree_free(mt_pprof *p, struct tree *t)
{
    void *parts[] = { t->samples,      t->sample_ptrs, t->labels,    t->label_ptrs,
                      t->location_ids, t->values,      t->locations, t->location_ptrs,
                      t->lines,        t->line_ptrs,   t->functions, t->function_ptrs,
                      t->mappings,     t->mapping_ptrs };
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        p->heap.free(parts[i]);
}

/* Frames with the tail-call frames rebuilt between them, as Location ids,
 * innermost first, into IDS (room for depth * (1 + MT_SYM_TAIL_MAX));
 * returns how many. */
static size_t stack_locations(mt_pprof *p, mt_sym_state *dwfl, bool refresh, const struct sample *s,
                              uint64_t *ids)
{
    size_t n = 0;
    for (unsigned i = 0; i < s->depth; i++) {
        uint64_t own = intern_location(p, dwfl, refresh, s->frames[i]);
        if (dwfl) {
            uintptr_t tail[MT_SYM_TAIL_MAX];
            unsigned ntail = mt_sym_tail_calls(dwfl, s->frames[i], i ? s->frames[i - 1] : 0, tail,
                                               MT_SYM_TAIL_MAX);
            for (unsigned k = 0; k < ntail; k++) {
                uint64_t id = intern_location(p, dwfl, false, tail[k]);
                if (id)
                    ids[n++] = id;
            }
        }
        if (own)
            ids[n++] = own;
    }
    return n;
}

/* String 0 (the format requires ""), then the sample types (all four, or
 * the in-use pair) and the period type into T; returns how many sample
 * types. The strings' order is the file's: keep it. */
static unsigned tree_types(mt_pprof *p, struct tree *t)
{
    intern_string(p, "");
    static const char *const names[4][2] = {
        { "alloc_objects", "count" },
        { "alloc_space", "bytes" },
        { "inuse_objects", "count" },
        { "inuse_space", "bytes" },
    };
    unsigned first = p->with_alloc ? 0 : 2, ntypes = 4 - first;
    for (unsigned i = 0; i < ntypes; i++) {
        t->types[i] = (Perftools__Profiles__ValueType)PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
        t->types[i].type = intern_string(p, names[first + i][0]);
        t->types[i].unit = intern_string(p, names[first + i][1]);
        t->type_ptrs[i] = &t->types[i];
    }
    t->period_type = (Perftools__Profiles__ValueType)PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
    t->period_type.type = intern_string(p, "space");
    t->period_type.unit = intern_string(p, "bytes");
    return ntypes;
}

/* Sample I's values (the last NTYPES of the four) and its labels, thread
 * (string KEYS[0]) and tag (KEYS[1]), the next of T's labels when it has
 * them. */
static void sample_values(mt_pprof *p, struct tree *t, size_t i, unsigned ntypes,
                          const int64_t keys[2], size_t *nlabels)
{
    const struct sample *s = &p->samples[i];
    Perftools__Profiles__Sample *m = &t->samples[i];
    uint64_t all[4] = { s->v.alloc_objects, s->v.alloc_bytes, s->v.inuse_objects,
                        s->v.inuse_bytes };
    m->value = t->values + i * ntypes;
    m->n_value = ntypes;
    for (unsigned k = 0; k < ntypes; k++)
        m->value[k] = (int64_t)all[4 - ntypes + k];
    char text[1100]; /* a number and a name of up to 1024 bytes */
    const char *str[2] = { s->thread ? thread_text(text, sizeof text, s->thread, s->thread_name)
                                     : NULL,
                           s->tag };
    m->label = &t->label_ptrs[*nlabels];
    for (unsigned k = 0; k < 2; k++) {
        if (!str[k])
            continue;
        Perftools__Profiles__Label *l = &t->labels[*nlabels];
        *l = (Perftools__Profiles__Label)PERFTOOLS__PROFILES__LABEL__INIT;
        l->key = keys[k];
        l->str = intern_string(p, str[k]);
        t->label_ptrs[(*nlabels)++] = l;
        m->n_label++;
    }
}

/* The samples into T: symbolizing happens here, through the Locations.
 * Each stack's ids go to SCRATCH (room for the most a stack can have),
 * then to the end of t->location_ids, which grows: the samples point into
 * it only once it is complete (their offsets meanwhile in ID_AT). Out of
 * memory: p->failed. */
static void tree_samples(mt_pprof *p, mt_sym_state *dwfl, bool refresh, struct tree *t,
                         unsigned ntypes, const int64_t keys[2])
{
    t->samples = alloc_array(p, p->nsamples, sizeof *t->samples);
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    t->sample_ptrs = alloc_array(p, p->nsamples, sizeof *t->sample_ptrs);
    t->labels = alloc_array(p, 2 * p->nsamples, sizeof *t->labels);
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    t->label_ptrs = alloc_array(p, 2 * p->nsamples, sizeof *t->label_ptrs);
    t->values = alloc_array(p, p->nsamples * ntypes, sizeof *t->values);
    size_t *id_at = alloc_array(p, p->nsamples, sizeof *id_at);
    uint64_t *scratch =
        alloc_array(p, (size_t)MT_MAX_DEPTH * (1 + MT_SYM_TAIL_MAX), sizeof *scratch);
    size_t used_ids = 0, ids_cap = 0, nlabels = 0;
    for (size_t i = 0; i < p->nsamples && !p->failed; i++) {
        Perftools__Profiles__Sample *m = &t->samples[i];
        *m = (Perftools__Profiles__Sample)PERFTOOLS__PROFILES__SAMPLE__INIT;
        m->n_location_id = stack_locations(p, dwfl, refresh, &p->samples[i], scratch);
        if (!mt_pprof_grow(&p->heap, (void **)&t->location_ids, &ids_cap,
                           used_ids + m->n_location_id, sizeof *t->location_ids)) {
            p->failed = true;
            break;
        }
        memcpy(t->location_ids + used_ids, scratch, m->n_location_id * sizeof *scratch);
        id_at[i] = used_ids;
        used_ids += m->n_location_id;
        sample_values(p, t, i, ntypes, keys, &nlabels);
        t->sample_ptrs[i] = m;
    }
    for (size_t i = 0; i < p->nsamples && !p->failed; i++)
        t->samples[i].location_id = t->location_ids + id_at[i];
    p->heap.free(id_at);
    p->heap.free(scratch);
}

/* The Functions and Mappings the samples interned, into T. */
static void tree_functions_mappings(mt_pprof *p, struct tree *t)
{
    for (size_t i = 0; i < p->nfunctions; i++) {
        Perftools__Profiles__Function *f = &t->functions[i];
        *f = (Perftools__Profiles__Function)PERFTOOLS__PROFILES__FUNCTION__INIT;
        f->id = i + 1;
        f->name = p->functions[i].name;
        f->system_name = p->functions[i].system_name;
        f->filename = p->functions[i].file;
        t->function_ptrs[i] = f;
    }
    for (size_t i = 0; i < p->nmappings; i++) {
        const struct mapping *src = &p->mappings[i];
        Perftools__Profiles__Mapping *m = &t->mappings[i];
        *m = (Perftools__Profiles__Mapping)PERFTOOLS__PROFILES__MAPPING__INIT;
        m->id = i + 1;
        m->memory_start = src->start;
        m->memory_limit = src->limit;
        m->file_offset = src->offset;
        m->filename = src->file;
        m->build_id = src->build_id;
        /* Symbolized here: pprof must not look the addresses up again;
         * raw, pprof symbolizes from the file (by name and build ID). */
        m->has_functions = m->has_filenames = m->has_line_numbers = m->has_inline_frames =
            !src->raw;
        t->mapping_ptrs[i] = m;
    }
}

/* The Locations and their Lines the samples interned, into T. */
static void tree_locations(mt_pprof *p, struct tree *t)
{
    for (size_t i = 0; i < p->nlines; i++) {
        Perftools__Profiles__Line *l = &t->lines[i];
        *l = (Perftools__Profiles__Line)PERFTOOLS__PROFILES__LINE__INIT;
        l->function_id = p->lines[i].function;
        l->line = p->lines[i].line;
        t->line_ptrs[i] = l;
    }
    for (size_t i = 0; i < p->nlocations; i++) {
        const struct location *src = &p->locations[i];
        Perftools__Profiles__Location *l = &t->locations[i];
        *l = (Perftools__Profiles__Location)PERFTOOLS__PROFILES__LOCATION__INIT;
        l->id = i + 1;
        l->mapping_id = src->mapping;
        /* Raw: the call's address, which a symbolizer looks up as is. */
        l->address = src->address - (p->raw && src->address ? 1 : 0);
        l->n_line = src->nlines;
        l->line = t->line_ptrs + src->first_line;
        t->location_ptrs[i] = l;
    }
}

/* The tables the samples filled (the main executable's Mapping first),
 * into T; false when out of memory. */
static bool tree_tables(mt_pprof *p, mt_sym_state *dwfl, struct tree *t)
{
    if (!p->failed)
        main_mapping_first(p, dwfl);
    t->functions = alloc_array(p, p->nfunctions, sizeof *t->functions);
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    t->function_ptrs = alloc_array(p, p->nfunctions, sizeof *t->function_ptrs);
    t->mappings = alloc_array(p, p->nmappings, sizeof *t->mappings);
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    t->mapping_ptrs = alloc_array(p, p->nmappings, sizeof *t->mapping_ptrs);
    t->locations = alloc_array(p, p->nlocations, sizeof *t->locations);
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    t->location_ptrs = alloc_array(p, p->nlocations, sizeof *t->location_ptrs);
    t->lines = alloc_array(p, p->nlines, sizeof *t->lines);
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    t->line_ptrs = alloc_array(p, p->nlines, sizeof *t->line_ptrs);
    if (p->failed)
        return false;
    tree_functions_mappings(p, t);
    tree_locations(p, t);
    return true;
}

/* The Profile message at T's root, over T's pieces and P's strings. */
static void tree_profile(mt_pprof *p, struct tree *t, unsigned ntypes, int64_t default_type,
                         int64_t time_ns, int64_t duration_ns)
{
    Perftools__Profiles__Profile *pr = &t->profile;
    *pr = (Perftools__Profiles__Profile)PERFTOOLS__PROFILES__PROFILE__INIT;
    pr->n_sample_type = ntypes;
    pr->sample_type = t->type_ptrs;
    pr->n_sample = p->nsamples;
    pr->sample = t->sample_ptrs;
    pr->n_mapping = p->nmappings;
    pr->mapping = t->mapping_ptrs;
    pr->n_location = p->nlocations;
    pr->location = t->location_ptrs;
    pr->n_function = p->nfunctions;
    pr->function = t->function_ptrs;
    pr->n_string_table = p->nstrings;
    pr->string_table = p->strings;
    pr->time_nanos = time_ns;
    pr->duration_nanos = duration_ns;
    pr->period_type = &t->period_type;
    /* Go's convention for a sampled heap profile: the values are scaled
     * already, the period is the sampling rate. */
    pr->period = p->period ? (int64_t)p->period : 1;
    pr->default_sample_type = default_type;
}

const char *mt_pprof_write(mt_pprof *p, mt_sym_state *dwfl, bool refresh, int fd, int64_t time_ns,
                           int64_t duration_ns)
{
    struct tree t;
    memset(&t, 0, sizeof t);
    unsigned ntypes = tree_types(p, &t);
    bool tagged = false;
    for (size_t i = 0; i < p->nsamples && !tagged; i++)
        tagged = p->samples[i].tag != NULL;
    int64_t keys[2] = { intern_string(p, "thread"), tagged ? intern_string(p, "tag") : 0 };
    int64_t default_type = intern_string(p, "inuse_space");
    p->raw = mt_sym_raw(dwfl);
    tree_samples(p, dwfl, refresh, &t, ntypes, keys);
    if (!tree_tables(p, dwfl, &t)) {
        tree_free(p, &t);
        return "out of memory";
    }
    tree_profile(p, &t, ntypes, default_type, time_ns, duration_ns);
    const char *err = mt_pprof_gzip(&p->heap, &t.profile.base, fd);
    tree_free(p, &t);
    return err;
}

void mt_pprof_free(mt_pprof *p)
{
    if (!p)
        return;
    const mt_pprof_heap *h = &p->heap;
    for (size_t i = 0; i < p->nsamples; i++) {
        h->free(p->samples[i].frames);
        h->free(p->samples[i].thread_name);
        h->free(p->samples[i].tag);
    }
    for (size_t i = 0; i < p->nstrings; i++)
        h->free(p->strings[i]);
    void *parts[] = { p->samples,   p->sample_ix.slot,   p->strings,   p->string_ix.slot,
                      p->functions, p->function_ix.slot, p->locations, p->location_ix.slot,
                      p->lines,     p->mappings };
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        h->free(parts[i]);
    mt_pprof_heap heap = *h;
    heap.free(p);
}
