/* libcfi_a.so (tests/progs/dl_cfi.c): alloc_here calls malloc from a frame of 32 bytes below
 * the saved rbp; libcfi_a.so and libcfi_b.so differ only in that size, so
 * the call returns to the same offset in both, under different CFA rules.
 * b zeroes the word where a's rule would find the return address, so that
 * a's rule applied to b's frame ends the stack there. */
#include <stddef.h>
void *alloc_here(size_t size);
__asm__(".text\n"
        ".globl alloc_here\n"
        ".type alloc_here, @function\n"
        "alloc_here:\n"
        ".cfi_startproc\n"
        "pushq %rbp\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset %rbp, -16\n"
        "subq $32, %rsp\n"
        ".cfi_def_cfa_offset 48\n"
        "movq $0, 0x8(%rsp)\n" /* the same length in both */
        "call malloc@PLT\n"
        "addq $32, %rsp\n"
        ".cfi_def_cfa_offset 16\n"
        "popq %rbp\n"
        ".cfi_def_cfa_offset 8\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size alloc_here, .-alloc_here\n");
