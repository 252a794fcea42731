/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Libraries loaded on first need (lazy_libs.h): the trampolines, the
 * loader and the start-up policy. x86-64 only, as the package is. */
#include "base/lazy_libs.h"

#include "base/common.h"
#include "base/config.h"
#include "base/output.h"

#include <dlfcn.h>
#include <elfutils/libdw.h>
#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

/* lazy_libs.def's LIB */
enum { MT_LIB_DW, MT_LIB_Z, MT_LIB_ZSTD, MT_LIB_COUNT };

/* Each function's pointer: NULL until its library is loaded, then the
 * function (or its library's failure stub), stored with release. */
#define MT_LAZY(lib, name) void *mt_lazy_p_##name MT_HIDDEN;
#include "base/lazy_libs.def"
#undef MT_LAZY

/* NAME's trampoline: jumps through its pointer with every argument
 * register intact; while the pointer is NULL, to mt_lazy_first with the
 * pointer's address in r11 (a scratch register no call passes anything
 * in). The frame is the caller's: a plain jump, the stack untouched. */
#define MT_LAZY(lib, name)                               \
    __asm__(".pushsection .text\n"                       \
            ".p2align 4\n"                               \
            ".globl " #name "\n"                         \
            ".hidden " #name "\n"                        \
            ".type " #name ", @function\n" #name ":\n"   \
            ".cfi_startproc\n"                           \
            "\tmovq mt_lazy_p_" #name "(%rip), %r11\n"   \
            "\ttestq %r11, %r11\n"                       \
            "\tjz 1f\n"                                  \
            "\tjmp *%r11\n"                              \
            "1:\tleaq mt_lazy_p_" #name "(%rip), %r11\n" \
            "\tjmp mt_lazy_first\n"                      \
            ".cfi_endproc\n"                             \
            ".size " #name ", .-" #name "\n"             \
            ".popsection\n");
#include "base/lazy_libs.def"
#undef MT_LAZY

void *mt_lazy_resolve(void **slot) MT_HIDDEN;

/* The first call of a function whose library is not loaded yet: saves the
 * argument registers (rax: the vector count of a variadic call; the eight
 * vector argument registers), resolves through mt_lazy_resolve and jumps
 * to what it returned, the arguments restored. Entered with the stack as
 * the caller left it (rsp = 8 mod 16): seven pushes realign it. */
__asm__(".pushsection .text\n"
        ".p2align 4\n"
        ".type mt_lazy_first, @function\n"
        "mt_lazy_first:\n"
        ".cfi_startproc\n"
        "\tpushq %rdi\n\t.cfi_adjust_cfa_offset 8\n"
        "\tpushq %rsi\n\t.cfi_adjust_cfa_offset 8\n"
        "\tpushq %rdx\n\t.cfi_adjust_cfa_offset 8\n"
        "\tpushq %rcx\n\t.cfi_adjust_cfa_offset 8\n"
        "\tpushq %r8\n\t.cfi_adjust_cfa_offset 8\n"
        "\tpushq %r9\n\t.cfi_adjust_cfa_offset 8\n"
        "\tpushq %rax\n\t.cfi_adjust_cfa_offset 8\n"
        "\tsubq $128, %rsp\n\t.cfi_adjust_cfa_offset 128\n"
        "\tmovdqu %xmm0, 0(%rsp)\n"
        "\tmovdqu %xmm1, 16(%rsp)\n"
        "\tmovdqu %xmm2, 32(%rsp)\n"
        "\tmovdqu %xmm3, 48(%rsp)\n"
        "\tmovdqu %xmm4, 64(%rsp)\n"
        "\tmovdqu %xmm5, 80(%rsp)\n"
        "\tmovdqu %xmm6, 96(%rsp)\n"
        "\tmovdqu %xmm7, 112(%rsp)\n"
        "\tmovq %r11, %rdi\n"
        "\tcall mt_lazy_resolve\n"
        "\tmovq %rax, %r11\n"
        "\tmovdqu 0(%rsp), %xmm0\n"
        "\tmovdqu 16(%rsp), %xmm1\n"
        "\tmovdqu 32(%rsp), %xmm2\n"
        "\tmovdqu 48(%rsp), %xmm3\n"
        "\tmovdqu 64(%rsp), %xmm4\n"
        "\tmovdqu 80(%rsp), %xmm5\n"
        "\tmovdqu 96(%rsp), %xmm6\n"
        "\tmovdqu 112(%rsp), %xmm7\n"
        "\taddq $128, %rsp\n\t.cfi_adjust_cfa_offset -128\n"
        "\tpopq %rax\n\t.cfi_adjust_cfa_offset -8\n"
        "\tpopq %r9\n\t.cfi_adjust_cfa_offset -8\n"
        "\tpopq %r8\n\t.cfi_adjust_cfa_offset -8\n"
        "\tpopq %rcx\n\t.cfi_adjust_cfa_offset -8\n"
        "\tpopq %rdx\n\t.cfi_adjust_cfa_offset -8\n"
        "\tpopq %rsi\n\t.cfi_adjust_cfa_offset -8\n"
        "\tpopq %rdi\n\t.cfi_adjust_cfa_offset -8\n"
        "\tjmp *%r11\n"
        ".cfi_endproc\n"
        ".size mt_lazy_first, .-mt_lazy_first\n"
        /* What a function of a library that failed to load returns. */
        ".p2align 4\n"
        ".type mt_lazy_fail_null, @function\n"
        "mt_lazy_fail_null:\n"
        "\txorl %eax, %eax\n"
        "\tret\n"
        ".size mt_lazy_fail_null, .-mt_lazy_fail_null\n"
        ".type mt_lazy_fail_minus1, @function\n"
        "mt_lazy_fail_minus1:\n"
        "\tmovq $-1, %rax\n"
        "\tret\n"
        ".size mt_lazy_fail_minus1, .-mt_lazy_fail_minus1\n"
        ".popsection\n");

void mt_lazy_fail_null(void) MT_HIDDEN;
void mt_lazy_fail_minus1(void) MT_HIDDEN;

static const struct {
    void **slot;
    const char *name;
    unsigned lib;
} fns[] = {
#define MT_LAZY(lib, name) { &mt_lazy_p_##name, #name, lib },
#include "base/lazy_libs.def"
#undef MT_LAZY
};

/* The libraries by SONAME, as the link against them used to record them
 * in DT_NEEDED (Debian 12's; libdw's handle also finds libelf's functions,
 * its dependency). */
static const struct {
    const char *soname;
    const char *what; /* what is off without it */
    void (*fail)(void);
} libs[MT_LIB_COUNT] = {
    [MT_LIB_DW] = { "libdw.so.1", "no symbolization in the process", mt_lazy_fail_null },
    [MT_LIB_Z] = { "libz.so.1", "no pprof files", mt_lazy_fail_minus1 },
    [MT_LIB_ZSTD] = { "libzstd.so.1", "no recordings", mt_lazy_fail_null },
};

/* Per library: its handle once loaded; whether a load failed (said once). */
static void *handles[MT_LIB_COUNT];
static int failed[MT_LIB_COUNT];

/* Loads LIB and fills its functions' pointers: true when it is loaded
 * (now or before). Safe from any thread; not from a signal handler. */
static bool load(unsigned lib)
{
    if (__atomic_load_n(&handles[lib], __ATOMIC_ACQUIRE))
        return true;
    if (__atomic_load_n(&failed[lib], __ATOMIC_ACQUIRE))
        return false;
    /* Two threads may both get here: dlopen counts the second open, and
     * both store the same addresses. */
    void *h = dlopen(libs[lib].soname, RTLD_NOW | RTLD_LOCAL);
    void *fail = (void *)(uintptr_t)libs[lib].fail;
    unsigned missing = 0;
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        if (fns[i].lib != lib)
            continue;
        void *f = h ? dlsym(h, fns[i].name) : NULL;
        if (h && !f && !missing++) /* one line a library */
            mt_warn("%s has no %s: %s", libs[lib].soname, fns[i].name, libs[lib].what);
        __atomic_store_n(fns[i].slot, f ? f : fail, __ATOMIC_RELEASE);
    }
    if (!h) {
        int was = 0;
        if (__atomic_compare_exchange_n(&failed[lib], &was, 1, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            const char *why = dlerror();
            mt_warn("cannot load %s (%s): %s", libs[lib].soname, why ? why : "?", libs[lib].what);
        }
        return false;
    }
    void *none = NULL;
    if (!__atomic_compare_exchange_n(&handles[lib], &none, h, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        dlclose(h); /* another thread's open stands; this one only counted */
    if (lib == MT_LIB_DW) {
        /* This thread's thread-local storage of both (see lazy_libs.h):
         * each reads its error code, none yet. */
        (void)dwarf_errno();
        (void)elf_errno();
    }
    return true;
}

void *mt_lazy_resolve(void **slot)
{
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        if (fns[i].slot != slot)
            continue;
        load(fns[i].lib);
        void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        return f ? f : (void *)(uintptr_t)libs[fns[i].lib].fail;
    }
    return (void *)(uintptr_t)mt_lazy_fail_null; /* not reached: every slot is in fns */
}

void mt_lazy_libs_start(void)
{
    if (mt_cfg.symbolize != MT_SYMBOLIZE_LATER) {
        for (unsigned lib = 0; lib < MT_LIB_COUNT; lib++)
            load(lib);
        return;
    }
    /* later: libdw and zlib wait for a report that needs them (a name
     * asked for through the API; a pprof file, at exit or from the
     * reporter's thread); libzstd is called inside malloc when a
     * recording's buffer fills. */
    const char *record = mt_setting_env("MEMTRACE_RECORD");
    if (record && *record)
        load(MT_LIB_ZSTD);
}
