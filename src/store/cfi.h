/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Compact unwind rules decoded from a loaded module's .eh_frame (x86-64).
 *
 * Almost every return address of ordinary compiled code unwinds by one rule
 * of this form: CFA = rsp + N or rbp + N; the return address at CFA - 8;
 * rbp either unchanged or saved at CFA - M. mt_cfi_rule_for decodes the rule
 * that holds at a return address, reading only the module's mapped
 * .eh_frame_hdr and .eh_frame (found through PT_GNU_EH_FRAME), checking every
 * read against the module's mapped segments, allocating nothing and taking
 * no lock. Whatever the form cannot express (PLT stubs, signal frames,
 * stack-realigning code, register-held return addresses, no CFI at all) is
 * MT_CFI_FALLBACK: the caller unwinds that capture another way. */
#ifndef MT_CFI_H
#define MT_CFI_H

#include <stdbool.h>
#include <stdint.h>

/* A rule in one word. Never 0, so that 0 can mean "not known" in a table.
 *   bits 0-1   kind (MT_CFI_STANDARD, MT_CFI_LAST, MT_CFI_FALLBACK)
 *   bit  4     with MT_CFI_FALLBACK: no FDE (MT_CFI_NO_FDE)
 *   bit  2     CFA is rbp + offset (else rsp + offset)
 *   bit  3     rbp is saved at CFA - rbp_slot (else unchanged)
 *   bits 16-31 rbp_slot, bytes below the CFA
 *   bits 32-63 CFA offset, signed */
typedef uint64_t mt_cfi_rule;

enum {
    MT_CFI_STANDARD = 1, /* the form above */
    MT_CFI_LAST = 2,     /* return address undefined: the outermost frame */
    MT_CFI_FALLBACK = 3, /* not expressible: unwind this capture otherwise */
};

/* A return address with no FDE (a gap in the table, a module without
 * .eh_frame_hdr, code in no module): a fallback, except that with rbp 0 the
 * frame is the outermost one, as libunwind decides for such frames (the
 * x86-64 ABI marks the end of the chain with a null rbp; the loader's
 * _dl_start_user, which runs library constructors, has no FDE). */
#define MT_CFI_NO_FDE ((mt_cfi_rule)MT_CFI_FALLBACK | 1u << 4)

static inline unsigned mt_cfi_kind(mt_cfi_rule r)
{
    return (unsigned)(r & 3);
}
static inline bool mt_cfi_cfa_is_rbp(mt_cfi_rule r)
{
    return (r >> 2) & 1;
}
static inline bool mt_cfi_rbp_saved(mt_cfi_rule r)
{
    return (r >> 3) & 1;
}
static inline uintptr_t mt_cfi_rbp_slot(mt_cfi_rule r)
{
    return (uintptr_t)((r >> 16) & 0xffff);
}
static inline intptr_t mt_cfi_cfa_offset(mt_cfi_rule r)
{
    return (intptr_t)(int32_t)(uint32_t)(r >> 32);
}

static inline mt_cfi_rule mt_cfi_standard(bool cfa_rbp, int32_t cfa_offset, unsigned rbp_slot)
{
    return MT_CFI_STANDARD | (uint64_t)cfa_rbp << 2 | (uint64_t)(rbp_slot != 0) << 3 |
           (uint64_t)(rbp_slot & 0xffff) << 16 | (uint64_t)(uint32_t)cfa_offset << 32;
}

#define MT_CFI_MAX_SEGMENTS 8

/* What mt_cfi_rule_for needs of one loaded module: its PT_LOAD segments
 * (readable memory, as mapped) and its .eh_frame_hdr. */
typedef struct {
    uintptr_t lo, hi;       /* [lo, hi): the span of all its PT_LOAD segments */
    uintptr_t eh_frame_hdr; /* run-time address, 0 if it has none */
    unsigned nseg;
    struct {
        uintptr_t lo, hi;
    } seg[MT_CFI_MAX_SEGMENTS];
} mt_cfi_module;

/* The loaded module whose PT_LOAD span holds PC, from dl_iterate_phdr
 * (takes the loader's lock: never call it holding a lock of memtrace that a
 * thread inside dlopen could be waiting for). False if none. */
bool mt_cfi_module_of(uintptr_t pc, mt_cfi_module *out);

/* The loader's count of libraries unloaded so far (dl_iterate_phdr's
 * dlpi_subs): it moves on every unload, through dlclose or not (glibc's
 * own iconv modules, a dlopen that failed half-way). Takes the loader's
 * lock, as mt_cfi_module_of does. */
unsigned long long mt_cfi_loader_subs(void);

/* The rule for unwinding from a frame whose return address is RET (the
 * row of the FDE holding RET - 1, the call instruction) in module M. */
mt_cfi_rule mt_cfi_rule_for(const mt_cfi_module *m, uintptr_t ret);

/* The same from a raw .eh_frame_hdr image: HDR is its run-time address, and
 * every byte the decoder reads must lie in [LO, HI). For tests. */
mt_cfi_rule mt_cfi_rule_in(uintptr_t hdr, uintptr_t lo, uintptr_t hi, uintptr_t ret);

#endif
