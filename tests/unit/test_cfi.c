/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The .eh_frame decoder (src/store/cfi.c) on hand-built .eh_frame_hdr/.eh_frame
 * images: each rule form it accepts, each it must refuse, the outermost
 * frame, gaps, and damaged records (read inside the given bounds only; the
 * image sits at the end of a page followed by an inaccessible one, so a
 * read past it would crash the test). The oracle for real code is the check
 * mode (tests/e2e/unwind_check.sh), which compares with libunwind. */
#include "store/cfi.h"

#include <criterion/criterion.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Layout of an image: hdr at 0, table at 12, CIE at 0x100, FDEs after it;
 * the "code" the FDEs describe is at TEXT (never read). */
enum { IMG = 4096, CIE_AT = 0x100, TEXT = 0x800 };

typedef struct {
    uint8_t *base; /* IMG bytes, the last ones of a mapped page */
    size_t at;     /* write position */
    unsigned fdes;
    struct {
        int32_t loc, fde;
    } table[16];
} image;

static uint8_t *map_image(void)
{
    long page = sysconf(_SC_PAGESIZE);
    uint8_t *p =
        mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(p, MAP_FAILED);
    cr_assert_eq(mprotect(p + page, (size_t)page, PROT_NONE), 0);
    return p + page - IMG;
}

static void put(image *im, const void *bytes, size_t n)
{
    cr_assert_leq(im->at + n, (size_t)TEXT);
    if (n)
        memcpy(im->base + im->at, bytes, n);
    im->at += n;
}

static void put32(image *im, uint32_t v)
{
    put(im, &v, 4);
}

/* The CIE every test uses: "zR", code 1, data -8, RA r16, pcrel sdata4,
 * CFA = rsp + 8, RA at CFA - 8; AUG replaces "zR" when given (its data must
 * then be the single R byte too). */
static void put_cie(image *im, const char *aug)
{
    im->at = CIE_AT;
    uint8_t body[] = { 0, 0, 0, 0, 1 };
    const char *a = aug ? aug : "zR";
    uint8_t rest[] = { 1, 0x78, 16, 1, 0x1b, 0x0c, 7, 8, 0x90, 1, 0, 0 };
    uint32_t len = (uint32_t)(sizeof body + strlen(a) + 1 + sizeof rest);
    put32(im, len);
    put(im, body, sizeof body);
    put(im, a, strlen(a) + 1);
    put(im, rest, sizeof rest);
}

/* An FDE for [TEXT + LO, TEXT + LO + LEN) with instructions INSNS. */
static void put_fde(image *im, unsigned lo, unsigned len, const uint8_t *insns, size_t n)
{
    size_t start = im->at;
    uint32_t body = (uint32_t)(4 + 4 + 4 + 1 + n);
    uint32_t pad = (4 - (body + 4) % 4) % 4;
    put32(im, body + pad);
    put32(im, (uint32_t)(im->at - CIE_AT));      /* back to the CIE */
    put32(im, (uint32_t)((TEXT + lo) - im->at)); /* pc_begin, pc-relative */
    put32(im, len);
    uint8_t zero = 0;
    put(im, &zero, 1); /* augmentation data length */
    put(im, insns, n);
    for (uint32_t i = 0; i < pad; i++)
        put(im, &zero, 1); /* DW_CFA_nop */
    im->table[im->fdes].loc = (int32_t)(TEXT + lo);
    im->table[im->fdes].fde = (int32_t)start;
    im->fdes++;
}

static void finish(image *im)
{
    uint8_t h[] = { 1, 0x1b, 0x03, 0x3b };
    memcpy(im->base, h, 4);
    int32_t eh = CIE_AT - 4;
    memcpy(im->base + 4, &eh, 4);
    uint32_t n = im->fdes;
    memcpy(im->base + 8, &n, 4);
    memcpy(im->base + 12, im->table, n * 8);
}

static mt_cfi_rule rule_at(const image *im, unsigned ret_offset)
{
    uintptr_t b = (uintptr_t)im->base;
    return mt_cfi_rule_in(b, b, b + IMG, b + TEXT + ret_offset);
}

static image *fresh(void)
{
    static image im;
    memset(&im, 0, sizeof im);
    im.base = map_image();
    put_cie(&im, NULL);
    return &im;
}

/* push rbp; mov rbp, rsp; ...: the usual frame-pointer prologue. */
static const uint8_t fp_prologue[] = {
    0x41, 0x0e, 16, /* advance 1; def_cfa_offset 16 */
    0x86, 2,        /* rbp at cfa-16 */
    0x43, 0x0d, 6,  /* advance 3; def_cfa_register rbp */
};

Test(cfi, frame_pointer_function)
{
    image *im = fresh();
    put_fde(im, 0, 0x40, fp_prologue, sizeof fp_prologue);
    finish(im);
    /* A call at offset 0x10 returns to 0x15: CFA = rbp + 16, rbp at CFA-16. */
    cr_assert_eq(rule_at(im, 0x15), mt_cfi_standard(true, 16, 16));
    /* Inside the prologue, after the push: CFA = rsp + 16. */
    cr_assert_eq(rule_at(im, 0x2), mt_cfi_standard(false, 16, 16));
    /* At the first instruction (a return address one past it). */
    cr_assert_eq(rule_at(im, 0x1), mt_cfi_standard(false, 8, 0));
}

Test(cfi, remember_and_restore_state)
{
    image *im = fresh();
    const uint8_t insns[] = {
        0x41, 0x0e, 16,   0x86, 2, 0x43, 0x0d, 6, /* the fp prologue, to 0x4 */
        0x50, 0x0a, 0x0c, 7,    8,                /* advance to 0x14; remember; CFA = rsp+8 */
        0x41, 0x0b,                               /* advance to 0x15; restore */
    };
    put_fde(im, 0, 0x40, insns, sizeof insns);
    finish(im);
    cr_assert_eq(rule_at(im, 0x15), mt_cfi_standard(false, 8, 16), "in the epilogue row");
    cr_assert_eq(rule_at(im, 0x16), mt_cfi_standard(true, 16, 16), "after restore_state");
}

Test(cfi, outermost_frame)
{
    image *im = fresh();
    const uint8_t undefined_ra[] = { 0x07, 16 }; /* like libc's _start, clone3 */
    const uint8_t undefined_rbp[] = { 0x07, 6 };
    put_fde(im, 0, 0x10, undefined_ra, sizeof undefined_ra);
    put_fde(im, 0x10, 0x10, undefined_rbp, sizeof undefined_rbp);
    finish(im);
    cr_assert_eq(rule_at(im, 0x5), MT_CFI_LAST);
    cr_assert_eq(rule_at(im, 0x15), MT_CFI_LAST);
}

Test(cfi, forms_the_rule_cannot_express)
{
    image *im = fresh();
    const uint8_t expr_cfa[] = { 0x0f, 2, 0x77, 8 }; /* CFA by expression (PLT) */
    const uint8_t ra_in_reg[] = { 0x09, 16, 0 };     /* RA in rax */
    const uint8_t rbp_in_reg[] = { 0x09, 6, 3 };     /* rbp in rbx */
    const uint8_t rbp_val[] = { 0x14, 6, 2 };        /* val_offset rbp */
    const uint8_t cfa_r12[] = { 0x0c, 12, 16 };      /* CFA = r12 + 16 */
    const uint8_t unknown_op[] = { 0x1d };           /* not a DW_CFA op */
    const uint8_t ra_elsewhere[] = { 0x90, 2 };      /* RA at CFA-16 */
    put_fde(im, 0x00, 0x10, expr_cfa, sizeof expr_cfa);
    put_fde(im, 0x10, 0x10, ra_in_reg, sizeof ra_in_reg);
    put_fde(im, 0x20, 0x10, rbp_in_reg, sizeof rbp_in_reg);
    put_fde(im, 0x30, 0x10, rbp_val, sizeof rbp_val);
    put_fde(im, 0x40, 0x10, cfa_r12, sizeof cfa_r12);
    put_fde(im, 0x50, 0x10, unknown_op, sizeof unknown_op);
    put_fde(im, 0x60, 0x10, ra_elsewhere, sizeof ra_elsewhere);
    finish(im);
    for (unsigned f = 0; f < 7; f++)
        cr_assert_eq(rule_at(im, f * 0x10 + 5), MT_CFI_FALLBACK, "FDE %u", f);
}

Test(cfi, signal_frame_cie)
{
    static image im;
    im.base = map_image();
    put_cie(&im, "zRS");
    put_fde(&im, 0, 0x10, NULL, 0);
    finish(&im);
    cr_assert_eq(rule_at(&im, 0x5), MT_CFI_FALLBACK);
}

Test(cfi, addresses_without_fde)
{
    image *im = fresh();
    put_fde(im, 0x10, 0x10, fp_prologue, sizeof fp_prologue);
    put_fde(im, 0x40, 0x10, fp_prologue, sizeof fp_prologue);
    finish(im);
    cr_assert_eq(rule_at(im, 0x5), MT_CFI_NO_FDE, "before the first FDE");
    cr_assert_eq(rule_at(im, 0x25), MT_CFI_NO_FDE, "in the gap between two");
    cr_assert_eq(rule_at(im, 0x60), MT_CFI_NO_FDE, "past the last");
    cr_assert_eq(rule_at(im, 0x45), mt_cfi_standard(true, 16, 16));
    /* A module without .eh_frame_hdr. */
    mt_cfi_module m = { .eh_frame_hdr = 0 };
    cr_assert_eq(mt_cfi_rule_for(&m, 0x1234), MT_CFI_NO_FDE);
}

Test(cfi, damaged_records_stay_inside_bounds)
{
    image *im = fresh();
    put_fde(im, 0, 0x40, fp_prologue, sizeof fp_prologue);
    finish(im);
    uintptr_t b = (uintptr_t)im->base;
    size_t fde = (size_t)im->table[0].fde;
    /* An FDE whose length runs past the image's end. */
    uint32_t huge = IMG;
    memcpy(im->base + fde, &huge, 4);
    cr_assert_eq(rule_at(im, 0x15), MT_CFI_FALLBACK);
    /* A CIE pointer outside the image. */
    uint32_t len = 4 + 4 + 4 + 1 + sizeof fp_prologue;
    len += (4 - (len + 4) % 4) % 4;
    memcpy(im->base + fde, &len, 4);
    uint32_t far = 0x7fffffff;
    memcpy(im->base + fde + 4, &far, 4);
    cr_assert_eq(rule_at(im, 0x15), MT_CFI_FALLBACK);
    /* An expression block longer than the FDE. */
    image *im2 = fresh();
    const uint8_t long_block[] = { 0x0f, 0x7f };
    put_fde(im2, 0, 0x40, long_block, sizeof long_block);
    finish(im2);
    cr_assert_eq(rule_at(im2, 0x15), MT_CFI_FALLBACK);
    /* A table of another form, and a hdr of another version. */
    im2->base[3] = 0x1b;
    cr_assert_eq(rule_at(im2, 0x15), MT_CFI_FALLBACK);
    im2->base[3] = 0x3b;
    im2->base[0] = 2;
    cr_assert_eq(rule_at(im2, 0x15), MT_CFI_FALLBACK);
    /* The hdr itself at the very end of the readable range. */
    cr_assert_eq(mt_cfi_rule_in(b + IMG - 2, b, b + IMG, b + TEXT + 0x15), MT_CFI_FALLBACK);
}

/* A header at the end of one segment, with a gap (PROT_NONE, as the loader
 * leaves between PT_LOAD segments) before the next: a ULEB128 pointer
 * encoding never ends inside the segment. The decoder used to read on into
 * the gap (SIGSEGV); it must give up. */
Test(cfi, header_at_the_end_of_a_segment)
{
    long page = sysconf(_SC_PAGESIZE);
    uint8_t *p =
        mmap(NULL, (size_t)page * 3, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(p, MAP_FAILED);
    uint8_t *hdr = p + page - 20;
    const uint8_t h[] = { 1, 0x01, 0x03, 0x3b }; /* eh_frame_ptr as ULEB128 */
    memcpy(hdr, h, 4);
    memset(hdr + 4, 0x80, 16);
    cr_assert_eq(mprotect(p + page, (size_t)page, PROT_NONE), 0);
    mt_cfi_module m = { .lo = (uintptr_t)p,
                        .hi = (uintptr_t)p + 3 * (uintptr_t)page,
                        .eh_frame_hdr = (uintptr_t)hdr,
                        .nseg = 2 };
    m.seg[0].lo = (uintptr_t)p;
    m.seg[0].hi = (uintptr_t)p + (uintptr_t)page;
    m.seg[1].lo = (uintptr_t)p + 2 * (uintptr_t)page;
    m.seg[1].hi = (uintptr_t)p + 3 * (uintptr_t)page;
    cr_assert_eq(mt_cfi_rule_for(&m, m.seg[1].lo + 100), MT_CFI_FALLBACK);
    /* The same with a fixed-size pointer encoding whose table runs past
     * the segment's end. */
    const uint8_t h2[] = { 1, 0x1b, 0x03, 0x3b };
    memcpy(hdr, h2, 4);
    uint32_t count = 1000;
    memcpy(hdr + 8, &count, 4);
    cr_assert_eq(mt_cfi_rule_for(&m, m.seg[1].lo + 100), MT_CFI_FALLBACK);
}

/* Registers libunwind 1.6 does not know (17 and up: the xmm registers an
 * ms_abi function saves) and DW_CFA_val_offset, which it does not decode:
 * the decoder gives up where libunwind would stop. */
Test(cfi, rows_libunwind_cannot_follow)
{
    image *im = fresh();
    const uint8_t xmm6_saved[] = { 0x41, 0x0e, 16, 0x97, 2 }; /* offset r23 (xmm6) */
    const uint8_t val_offset_rbx[] = { 0x14, 3, 2 };
    const uint8_t restore_r20[] = { 0xd4 }; /* restore r20 */
    const uint8_t cfa_in_r40[] = { 0x0c, 40, 8 };
    put_fde(im, 0x00, 0x10, xmm6_saved, sizeof xmm6_saved);
    put_fde(im, 0x10, 0x10, val_offset_rbx, sizeof val_offset_rbx);
    put_fde(im, 0x20, 0x10, restore_r20, sizeof restore_r20);
    put_fde(im, 0x30, 0x10, cfa_in_r40, sizeof cfa_in_r40);
    finish(im);
    for (unsigned f = 0; f < 4; f++)
        cr_assert_eq(rule_at(im, f * 0x10 + 5), MT_CFI_FALLBACK, "FDE %u", f);
    /* Before the xmm6 row, the same function unwinds. */
    cr_assert_eq(rule_at(im, 0x1), mt_cfi_standard(false, 8, 0));
}

/* The loaded modules, through dl_iterate_phdr: libc's code has a module
 * with an .eh_frame_hdr; an address in no module has none. */
Test(cfi, module_of)
{
    mt_cfi_module m;
    cr_assert(mt_cfi_module_of((uintptr_t)&memcpy, &m));
    cr_assert_neq(m.eh_frame_hdr, 0);
    cr_assert(m.lo <= (uintptr_t)&memcpy && (uintptr_t)&memcpy < m.hi);
    cr_assert_gt(m.nseg, 0);
    cr_assert_not(mt_cfi_module_of(0x1000, &m));
}
