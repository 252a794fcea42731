/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Atomic access to words shared between threads, or read by a thread that
 * does not hold the lock that guards them (reports, the gdb helper's model
 * of a reader that may run at any instant). In the style of mimalloc's
 * mi_atomic_*: every such word is declared mt_atomic(T), so a plain access
 * cannot slip in unnoticed, and every access names its ordering.
 *
 * Conventions, checked in review:
 * - relaxed: counters and statistics, and words whose readers tolerate any
 *   value the word held (each use says why);
 * - release store / acquire load: publication: everything written before
 *   the store is visible to a thread whose load sees it. Each release names
 *   the acquire it pairs with, in a comment at one of the two;
 * - a deliberate race (a reader without the lock) says what it pairs with
 *   and what the reader does with a stale or torn value.
 * Words inside mapped records (stack-store headers, freed-ring stamps, index
 * slots) are not declared _Atomic (their memory is raw words published to
 * other processes' readers too); they go through the same macros, which
 * take a plain pointer as well. */
#ifndef MT_ATOMIC_H
#define MT_ATOMIC_H

#define mt_atomic(T) _Atomic(T)

/* P as a pointer to the plain type of *P: the __atomic builtins take plain
 * words (gcc takes _Atomic ones too, clang refuses them). A comma
 * expression's type is its operand's with qualifiers and _Atomic dropped,
 * and without integer promotion. mt_atomic(T) has T's size and alignment
 * for every T used here (integers and pointers). */
#define mt_atomic_plain_(p) ((__typeof__((void)0, *(p)) *)(p))

#define mt_atomic_load_relaxed(p) __atomic_load_n(mt_atomic_plain_(p), __ATOMIC_RELAXED)
#define mt_atomic_load_acquire(p) __atomic_load_n(mt_atomic_plain_(p), __ATOMIC_ACQUIRE)
#define mt_atomic_store_relaxed(p, x) __atomic_store_n(mt_atomic_plain_(p), (x), __ATOMIC_RELAXED)
#define mt_atomic_store_release(p, x) __atomic_store_n(mt_atomic_plain_(p), (x), __ATOMIC_RELEASE)

/* Read-modify-write; each returns the value before. */
#define mt_atomic_add_relaxed(p, x) __atomic_fetch_add(mt_atomic_plain_(p), (x), __ATOMIC_RELAXED)
#define mt_atomic_sub_relaxed(p, x) __atomic_fetch_sub(mt_atomic_plain_(p), (x), __ATOMIC_RELAXED)
#define mt_atomic_add_release(p, x) __atomic_fetch_add(mt_atomic_plain_(p), (x), __ATOMIC_RELEASE)
#define mt_atomic_exchange_acq_rel(p, x) \
    __atomic_exchange_n(mt_atomic_plain_(p), (x), __ATOMIC_ACQ_REL)
#define mt_atomic_exchange_acquire(p, x) \
    __atomic_exchange_n(mt_atomic_plain_(p), (x), __ATOMIC_ACQUIRE)
#define mt_atomic_exchange_relaxed(p, x) \
    __atomic_exchange_n(mt_atomic_plain_(p), (x), __ATOMIC_RELAXED)

/* Compare-and-swap; *EXPECTED gets the current value when it fails. */
#define mt_atomic_cas_acq_rel(p, expected, desired)                                \
    __atomic_compare_exchange_n(mt_atomic_plain_(p), (expected), (desired), false, \
                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
#define mt_atomic_cas_acquire(p, expected, desired)                                \
    __atomic_compare_exchange_n(mt_atomic_plain_(p), (expected), (desired), false, \
                                __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)
#define mt_atomic_cas_weak_relaxed(p, expected, desired)                          \
    __atomic_compare_exchange_n(mt_atomic_plain_(p), (expected), (desired), true, \
                                __ATOMIC_RELAXED, __ATOMIC_RELAXED)
#define mt_atomic_cas_weak_release(p, expected, desired)                          \
    __atomic_compare_exchange_n(mt_atomic_plain_(p), (expected), (desired), true, \
                                __ATOMIC_RELEASE, __ATOMIC_RELAXED)

/* Sequentially consistent: for the few words whose readers must agree on
 * one order of stores to different words (recording.c's toggles). */
#define mt_atomic_load_seq_cst(p) __atomic_load_n(mt_atomic_plain_(p), __ATOMIC_SEQ_CST)
#define mt_atomic_store_seq_cst(p, x) __atomic_store_n(mt_atomic_plain_(p), (x), __ATOMIC_SEQ_CST)
#define mt_atomic_cas_seq_cst(p, expected, desired)                                \
    __atomic_compare_exchange_n(mt_atomic_plain_(p), (expected), (desired), false, \
                                __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)

#define mt_atomic_fence_acquire() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define mt_atomic_fence_release() __atomic_thread_fence(__ATOMIC_RELEASE)

#endif
