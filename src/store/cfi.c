/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The .eh_frame decoder behind cfi.h: the .eh_frame_hdr search table finds
 * the FDE, and a small call-frame-instruction interpreter runs its CIE's
 * and its own instructions up to the return address's row, tracking only
 * the CFA, rbp and the return-address column. Formats: the LSB's
 * "Exception Frame" chapter and DWARF 4, section 6.4. */
#include "store/cfi.h"

#include "base/common.h"

#include <link.h>
#include <stddef.h>
#include <string.h>

/* x86-64 DWARF register numbers. libunwind 1.6 knows registers 0 to 16
 * only: an instruction naming a higher one (the xmm registers an ms_abi
 * function saves) makes it stop at that frame, so the decoder gives up on
 * such a row rather than walk on where libunwind would not. */
enum { REG_RBP = 6, REG_RSP = 7, REG_RA = 16, REGS = 17 };

/* Where a tracked register is, after a row's instructions. */
enum { AT_SAME, AT_UNDEF, AT_CFA_OFFSET, AT_OTHER };
typedef struct {
    int how;
    int64_t offset; /* AT_CFA_OFFSET: saved at CFA + offset */
} reg_rule;

typedef struct {
    int cfa_reg; /* REG_RSP or REG_RBP, or -1: not expressible */
    int64_t cfa_offset;
    reg_rule rbp, ra;
} row;

/* The memory the decoder may read. */
typedef struct {
    const mt_cfi_module *m;
} span;

/* The end of the mapped segment holding P, 0 if none does. */
static uintptr_t segment_end(const span *s, uintptr_t p)
{
    for (unsigned i = 0; i < s->m->nseg; i++)
        if (p >= s->m->seg[i].lo && p < s->m->seg[i].hi)
            return s->m->seg[i].hi;
    return 0;
}

/* Whether [P, P + LEN), LEN > 0, lies inside one mapped segment. */
static bool readable(const span *s, uintptr_t p, uintptr_t len)
{
    uintptr_t end = segment_end(s, p);
    return end && len <= end - p;
}

/* A read position inside one checked range [p, end); ok turns false on the
 * first read past the end, and every later read returns 0. */
typedef struct {
    uintptr_t p, end;
    bool ok;
} cursor;

static void need(cursor *c, uintptr_t n)
{
    if (c->ok && c->end - c->p < n)
        c->ok = false;
}

static void skip(cursor *c, uint64_t n)
{
    need(c, (uintptr_t)n);
    if (c->ok && n <= c->end - c->p)
        c->p += (uintptr_t)n;
}

static uint64_t read_fixed(cursor *c, unsigned n)
{
    need(c, n);
    if (!c->ok)
        return 0;
    uint64_t v = 0;
    memcpy(&v, (const void *)c->p, n); /* little-endian */
    c->p += n;
    return v;
}

static uint64_t uleb(cursor *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0; c->ok; shift += 7) {
        uint8_t b = (uint8_t)read_fixed(c, 1);
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            break;
    }
    return v;
}

static int64_t sleb(cursor *c)
{
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b = 0;
    do {
        b = (uint8_t)read_fixed(c, 1);
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (c->ok && (b & 0x80));
    if (shift < 64 && (b & 0x40))
        v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}

/* DW_EH_PE pointer encodings. */
enum {
    PE_ABSPTR = 0x00,
    PE_ULEB128 = 0x01,
    PE_UDATA2 = 0x02,
    PE_UDATA4 = 0x03,
    PE_UDATA8 = 0x04,
    PE_SLEB128 = 0x09,
    PE_SDATA2 = 0x0a,
    PE_SDATA4 = 0x0b,
    PE_SDATA8 = 0x0c,
    PE_PCREL = 0x10,
    PE_DATAREL = 0x30,
    PE_INDIRECT = 0x80,
    PE_OMIT = 0xff,
};

/* Reads a pointer in encoding ENC. DATAREL is relative to DATA (the
 * .eh_frame_hdr for its table). An application other than absolute,
 * pc-relative or data-relative makes the cursor fail; PE_INDIRECT is
 * returned undereferenced (only skipped personality pointers use it). */
static uintptr_t read_encoded(cursor *c, uint8_t enc, uintptr_t data)
{
    if (enc == PE_OMIT)
        return 0;
    uintptr_t at = c->p, v;
    switch (enc & 0x0f) {
    case PE_ABSPTR: v = (uintptr_t)read_fixed(c, 8); break;
    case PE_ULEB128: v = (uintptr_t)uleb(c); break;
    case PE_UDATA2: v = (uintptr_t)read_fixed(c, 2); break;
    case PE_UDATA4: v = (uintptr_t)read_fixed(c, 4); break;
    case PE_UDATA8: v = (uintptr_t)read_fixed(c, 8); break;
    case PE_SLEB128: v = (uintptr_t)sleb(c); break;
    case PE_SDATA2: v = (uintptr_t)(int16_t)read_fixed(c, 2); break;
    case PE_SDATA4: v = (uintptr_t)(int32_t)read_fixed(c, 4); break;
    case PE_SDATA8: v = (uintptr_t)read_fixed(c, 8); break;
    default: c->ok = false; return 0;
    }
    switch (enc & 0x70) {
    case 0: break;
    case PE_PCREL: v += at; break;
    case PE_DATAREL: v += data; break;
    default: c->ok = false; return 0;
    }
    return v;
}

/* An encoding's size when fixed (for the search table), 0 otherwise. */
static unsigned encoded_size(uint8_t enc)
{
    switch (enc & 0x0f) {
    case PE_UDATA2:
    case PE_SDATA2: return 2;
    case PE_UDATA4:
    case PE_SDATA4: return 4;
    case PE_ABSPTR:
    case PE_UDATA8:
    case PE_SDATA8: return 8;
    default: return 0;
    }
}

/* A CIE or FDE record at P: its content range (after the length field). */
static bool record_at(const span *s, uintptr_t p, cursor *body)
{
    if (!readable(s, p, 4))
        return false;
    uint32_t len32;
    memcpy(&len32, (const void *)p, 4);
    uintptr_t start = p + 4;
    uint64_t len = len32;
    if (len32 == 0xffffffffu) {
        if (!readable(s, p + 4, 8))
            return false;
        memcpy(&len, (const void *)(p + 4), 8);
        start = p + 12;
    }
    if (len32 == 0 || len > (1u << 30) || !readable(s, start, (uintptr_t)len))
        return false;
    *body = (cursor){ .p = start, .end = start + (uintptr_t)len, .ok = true };
    return true;
}

typedef struct {
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_enc;
    bool has_aug_data; /* 'z': FDEs carry an augmentation length */
    bool signal;       /* 'S': a signal frame */
    cursor insns;      /* initial instructions */
} cie_info;

static bool parse_cie(const span *s, uintptr_t p, cie_info *ci)
{
    cursor c;
    if (!record_at(s, p, &c))
        return false;
    if (read_fixed(&c, 4) != 0) /* CIE id in .eh_frame */
        return false;
    uint8_t version = (uint8_t)read_fixed(&c, 1);
    if (version != 1 && version != 3)
        return false;
    char aug[8];
    unsigned n = 0;
    for (;;) {
        char ch = (char)read_fixed(&c, 1);
        if (!c.ok || n == sizeof aug)
            return false;
        aug[n++] = ch;
        if (ch == 0)
            break;
    }
    if (aug[0] != 0 && aug[0] != 'z')
        return false; /* "eh" and other old forms: not produced today */
    ci->code_align = uleb(&c);
    ci->data_align = sleb(&c);
    ci->ra_reg = version == 1 ? read_fixed(&c, 1) : uleb(&c);
    ci->fde_enc = PE_ABSPTR;
    ci->has_aug_data = aug[0] == 'z';
    ci->signal = false;
    if (ci->has_aug_data) {
        uint64_t alen = uleb(&c);
        cursor data = c;
        skip(&c, alen); /* c: the initial instructions */
        for (const char *a = aug + 1; *a && data.ok; a++) {
            switch (*a) {
            case 'R': ci->fde_enc = (uint8_t)read_fixed(&data, 1); break;
            case 'L': read_fixed(&data, 1); break;
            case 'P': {
                uint8_t penc = (uint8_t)read_fixed(&data, 1);
                read_encoded(&data, penc & 0x7f, 0);
                break;
            }
            case 'S': ci->signal = true; break;
            case 'B': break;
            default: data.ok = false; break; /* unknown: its data's size is unknown */
            }
        }
        if (!data.ok || data.p > c.p)
            return false;
    }
    ci->insns = c;
    return c.ok;
}

/* Runs call-frame instructions from C, starting from row R (INIT: the row
 * after the CIE's instructions, for DW_CFA_restore; NULL while running the
 * CIE's own, where a restore has no defined meaning), until the location
 * passes TARGET. LOC is the row's starting location. False: an instruction
 * the decoder does not know, a register libunwind does not know, or
 * DW_CFA_val_offset, which libunwind 1.6 does not decode (the rule then is
 * not trusted). */
__attribute__((nonnull(5))) static bool run_cfa(cursor c, const cie_info *ci, uintptr_t loc,
                                                uintptr_t target, row *r, const row *init)
{
    enum { STACK = 8 };
    row saved[STACK];
    unsigned depth = 0;
    while (c.ok && c.p < c.end) {
        uint8_t op = (uint8_t)read_fixed(&c, 1);
        uint64_t reg = 0, delta = 0;
        int64_t off = 0;
        reg_rule *rr = NULL;
        if (!c.ok)
            break;
        switch (op >> 6) {
        case 1: /* DW_CFA_advance_loc */ delta = op & 0x3f; goto advance;
        case 2: /* DW_CFA_offset */
            reg = op & 0x3f;
            off = (int64_t)uleb(&c) * ci->data_align;
            goto set_offset;
        case 3: /* DW_CFA_restore */ reg = op & 0x3f; goto restore;
        }
        switch (op) {
        case 0x00: /* nop */ break;
        case 0x01: /* set_loc */
            loc = read_encoded(&c, ci->fde_enc, 0);
            if (loc > target)
                return c.ok;
            break;
        case 0x02: delta = read_fixed(&c, 1); goto advance;
        case 0x03: delta = read_fixed(&c, 2); goto advance;
        case 0x04: delta = read_fixed(&c, 4); goto advance;
        case 0x05: /* offset_extended */
            reg = uleb(&c);
            off = (int64_t)uleb(&c) * ci->data_align;
            goto set_offset;
        case 0x06: /* restore_extended */ reg = uleb(&c); goto restore;
        case 0x07: /* undefined */
        case 0x08: /* same_value */
            reg = uleb(&c);
            if (reg >= REGS)
                return false;
            rr = reg == REG_RBP ? &r->rbp : reg == ci->ra_reg ? &r->ra : NULL;
            if (rr)
                *rr = (reg_rule){ op == 0x07 ? AT_UNDEF : AT_SAME, 0 };
            break;
        case 0x09: /* register */
            reg = uleb(&c);
            if (uleb(&c) >= REGS)
                return false;
            goto set_other;
        case 0x0a: /* remember_state */
            if (depth == STACK)
                return false;
            saved[depth++] = *r;
            break;
        case 0x0b: /* restore_state */
            if (depth == 0)
                return false;
            *r = saved[--depth];
            break;
        case 0x0c: /* def_cfa */
            reg = uleb(&c);
            r->cfa_reg = reg < REGS ? (int)reg : -1;
            r->cfa_offset = (int64_t)uleb(&c);
            break;
        case 0x0d: /* def_cfa_register */
            reg = uleb(&c);
            r->cfa_reg = reg < REGS ? (int)reg : -1;
            break;
        case 0x0e: /* def_cfa_offset */ r->cfa_offset = (int64_t)uleb(&c); break;
        case 0x0f: /* def_cfa_expression */
            skip(&c, uleb(&c));
            r->cfa_reg = -1;
            break;
        case 0x10: /* expression */
        case 0x16: /* val_expression */
            reg = uleb(&c);
            skip(&c, uleb(&c));
            goto set_other;
        case 0x11: /* offset_extended_sf */
            reg = uleb(&c);
            off = sleb(&c) * ci->data_align;
            goto set_offset;
        case 0x12: /* def_cfa_sf */
            reg = uleb(&c);
            r->cfa_reg = reg < REGS ? (int)reg : -1;
            r->cfa_offset = sleb(&c) * ci->data_align;
            break;
        case 0x13: /* def_cfa_offset_sf */ r->cfa_offset = sleb(&c) * ci->data_align; break;
        case 0x14: /* val_offset */
        case 0x15: /* val_offset_sf */ return false;
        case 0x2e: /* GNU_args_size */ uleb(&c); break;
        case 0x2f: /* GNU_negative_offset_extended */
            reg = uleb(&c);
            off = -(int64_t)uleb(&c) * ci->data_align;
            goto set_offset;
        default: return false;
        }
        continue;
    advance:
        loc += (uintptr_t)(delta * ci->code_align);
        if (loc > target)
            return c.ok;
        continue;
    set_offset:
        if (reg >= REGS)
            return false;
        rr = reg == REG_RBP ? &r->rbp : reg == ci->ra_reg ? &r->ra : NULL;
        if (rr)
            *rr = (reg_rule){ AT_CFA_OFFSET, off };
        continue;
    set_other:
        if (reg >= REGS)
            return false;
        rr = reg == REG_RBP ? &r->rbp : reg == ci->ra_reg ? &r->ra : NULL;
        if (rr)
            *rr = (reg_rule){ AT_OTHER, 0 };
        continue;
    restore:
        if (reg >= REGS || !init)
            return false;
        if (reg == REG_RBP)
            r->rbp = init->rbp;
        else if (reg == ci->ra_reg)
            r->ra = init->ra;
        continue;
    }
    return c.ok && c.p == c.end;
}

/* Sets *FDE to the FDE for PC through the .eh_frame_hdr binary-search
 * table, 0 if the table has none. False: the table cannot be read, or has
 * another form than the sorted 4-byte data-relative pairs linkers write. */
static bool find_fde(const span *s, uintptr_t hdr, uintptr_t pc, uintptr_t *fde)
{
    *fde = 0;
    if (!readable(s, hdr, 4))
        return false;
    const uint8_t *h = (const uint8_t *)hdr;
    if (h[0] != 1 || h[3] != (PE_DATAREL | PE_SDATA4))
        return false;
    /* Every read stays inside the segment holding the header. */
    cursor c = { .p = hdr + 4, .end = segment_end(s, hdr), .ok = true };
    if (!encoded_size(h[1]) || !encoded_size(h[2]))
        return false;
    read_encoded(&c, h[1], hdr); /* eh_frame_ptr */
    uintptr_t count = read_encoded(&c, h[2], hdr);
    if (!c.ok || h[2] == PE_OMIT || count == 0 || count > (1u << 28) || count * 8 > c.end - c.p)
        return false;
    const int32_t *table = (const int32_t *)c.p;
    intptr_t rel = (intptr_t)(pc - hdr);
    /* Largest initial location <= PC. */
    uintptr_t lo = 0, hi = count;
    while (hi - lo > 1) {
        uintptr_t mid = lo + (hi - lo) / 2;
        if ((intptr_t)table[2 * mid] <= rel)
            lo = mid;
        else
            hi = mid;
    }
    *fde = (intptr_t)table[2 * lo] > rel ? 0 : hdr + (uintptr_t)(intptr_t)table[2 * lo + 1];
    return true;
}

static mt_cfi_rule rule_in_span(const span *s, uintptr_t hdr, uintptr_t ret)
{
    uintptr_t pc = ret - 1;
    uintptr_t fde;
    cursor c;
    if (!find_fde(s, hdr, pc, &fde))
        return MT_CFI_FALLBACK;
    if (!fde)
        return MT_CFI_NO_FDE;
    if (!record_at(s, fde, &c))
        return MT_CFI_FALLBACK;
    uintptr_t id_at = c.p;
    uint32_t cie_off = (uint32_t)read_fixed(&c, 4);
    if (cie_off == 0 || cie_off > id_at)
        return MT_CFI_FALLBACK; /* a CIE, not an FDE */
    cie_info ci;
    if (!parse_cie(s, id_at - cie_off, &ci) || ci.signal || ci.ra_reg != REG_RA)
        return MT_CFI_FALLBACK;
    uintptr_t begin = read_encoded(&c, ci.fde_enc, 0);
    uintptr_t range = read_encoded(&c, ci.fde_enc & 0x0f, 0);
    if (!c.ok)
        return MT_CFI_FALLBACK;
    if (pc < begin || pc - begin >= range)
        return MT_CFI_NO_FDE; /* PC lies in a gap between FDEs */
    if (ci.has_aug_data) {
        skip(&c, uleb(&c));
        if (!c.ok)
            return MT_CFI_FALLBACK;
    }
    row r = { .cfa_reg = -1, .rbp = { AT_SAME, 0 }, .ra = { AT_SAME, 0 } };
    if (!run_cfa(ci.insns, &ci, begin, UINTPTR_MAX, &r, NULL))
        return MT_CFI_FALLBACK;
    row init = r;
    if (!run_cfa(c, &ci, begin, pc, &r, &init))
        return MT_CFI_FALLBACK;
    /* The outermost frame, as libunwind (dwarf_step, x86_64 unw_step)
     * decides it: the return address or rbp is undefined. */
    if (r.ra.how == AT_UNDEF || r.rbp.how == AT_UNDEF)
        return MT_CFI_LAST;
    if ((r.cfa_reg != REG_RSP && r.cfa_reg != REG_RBP) || r.cfa_offset < 8 ||
        r.cfa_offset > INT32_MAX || r.ra.how != AT_CFA_OFFSET || r.ra.offset != -8)
        return MT_CFI_FALLBACK;
    unsigned slot = 0;
    if (r.rbp.how == AT_CFA_OFFSET) {
        if (r.rbp.offset > -16 || r.rbp.offset < -0xfff8 || (r.rbp.offset & 7))
            return MT_CFI_FALLBACK;
        slot = (unsigned)-r.rbp.offset;
    } else if (r.rbp.how != AT_SAME) {
        return MT_CFI_FALLBACK;
    }
    return mt_cfi_standard(r.cfa_reg == REG_RBP, (int32_t)r.cfa_offset, slot);
}

mt_cfi_rule mt_cfi_rule_for(const mt_cfi_module *m, uintptr_t ret)
{
    if (!m->eh_frame_hdr)
        return MT_CFI_NO_FDE;
    span s = { m };
    return rule_in_span(&s, m->eh_frame_hdr, ret);
}

mt_cfi_rule mt_cfi_rule_in(uintptr_t hdr, uintptr_t lo, uintptr_t hi, uintptr_t ret)
{
    mt_cfi_module m = { .lo = lo, .hi = hi, .eh_frame_hdr = hdr, .nseg = 1 };
    m.seg[0].lo = lo;
    m.seg[0].hi = hi;
    return mt_cfi_rule_for(&m, ret);
}

struct module_query {
    uintptr_t pc;
    mt_cfi_module *out;
    bool found;
};

static int module_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct module_query *q = data;
    uintptr_t lo = UINTPTR_MAX, hi = 0, hdr = 0;
    bool holds = false;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_GNU_EH_FRAME)
            hdr = a;
        if (ph->p_type != PT_LOAD)
            continue;
        if (q->pc >= a && q->pc - a < ph->p_memsz)
            holds = true;
        if (a < lo)
            lo = a;
        if (a + ph->p_memsz > hi)
            hi = a + ph->p_memsz;
    }
    if (!holds)
        return 0;
    mt_cfi_module *m = q->out;
    *m = (mt_cfi_module){ .lo = lo, .hi = hi, .eh_frame_hdr = hdr };
    for (int i = 0; i < info->dlpi_phnum && m->nseg < MT_CFI_MAX_SEGMENTS; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        /* Readable, as mapped; the tail past p_filesz is zero-filled. */
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_R)) {
            uintptr_t a = info->dlpi_addr + ph->p_vaddr;
            m->seg[m->nseg].lo = a;
            m->seg[m->nseg].hi = a + ph->p_memsz;
            m->nseg++;
        }
    }
    q->found = true;
    return 1;
}

static int subs_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        *(unsigned long long *)data = info->dlpi_subs;
    return 1;
}

unsigned long long mt_cfi_loader_subs(void)
{
    unsigned long long subs = 0;
    dl_iterate_phdr(subs_cb, &subs);
    return subs;
}

bool mt_cfi_module_of(uintptr_t pc, mt_cfi_module *out)
{
    struct module_query q = { .pc = pc, .out = out };
    dl_iterate_phdr(module_cb, &q);
    return q.found;
}
