/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libcfi_a.so and libcfi_b.so (tests/progs/dl_cfi.c), built from this file
 * with -DFRAME=32 -DZERO_AT=0x8 and -DFRAME=96 -DZERO_AT=0x28: alloc_here
 * calls malloc from a frame of FRAME bytes below the saved rbp. The two
 * differ only in those numbers, so the call returns to the same offset in
 * both, under different CFA rules. b zeroes the word where a's rule would
 * find the return address, so that a's rule applied to b's frame ends the
 * stack there (a zeroes a word of its own locals, to keep the length). */
#include <stddef.h>

#define STR_(x) #x
#define STR(x) STR_(x)

void *alloc_here(size_t size);
__asm__(".text\n"
        ".globl alloc_here\n"
        ".type alloc_here, @function\n"
        "alloc_here:\n"
        ".cfi_startproc\n"
        "pushq %rbp\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset %rbp, -16\n"
        "subq $" STR(FRAME) ", %rsp\n"
        ".cfi_def_cfa_offset " STR(FRAME) " + 16\n"
        "movq $0, " STR(ZERO_AT) "(%rsp)\n"
        "call malloc@PLT\n"
        "addq $" STR(FRAME) ", %rsp\n"
        ".cfi_def_cfa_offset 16\n"
        "popq %rbp\n"
        ".cfi_def_cfa_offset 8\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size alloc_here, .-alloc_here\n");
