#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The tracer at its defaults (free stacks, redzones, quarantine), counted:
# instructions (valgrind's callgrind, which counts the same whatever the
# machine's load) of a malloc/free pair of bench/churn.c's shape
# (tests/progs/perf_cpu_pair.c: a random slot of a ring freed, a block of
# 16 to 528 bytes allocated there through a call chain of random depth 1
# to 8, on a thread), less native's. A pair's cost is the difference of
# two runs of 30,000 and 10,000 pairs over 20,000: the start-up, the ring's
# filling and the exit cancel, and the pairs are the same in every run (a
# seeded PRNG), so the figure is exact to a few hundredths. It must stay
# at or below its budget: the figure measured when the last cut was made,
# plus one instruction; undoing a cut exceeds it (capture_cfi.c: the
# thread's second unwind memo, for its frees' stacks, 2,906 instructions a
# pair with one memo; an interned slot's record frames and depth kept in
# the slot, not asked of the store on every hit, 2,214; then 2,153.5, and
# with a memo's last interned stack returned again without its slot, the
# capture's fast path, the free's early capture, mt_malloc's record and
# mt_free's freed block inline in their callers, the rule table loaded
# only on a miss of the thread's rule cache and the memo's thread-locals
# in one struct, 1,973.3; the sampled free's shadow byte read first,
# sample_fast.h, adds a test of the shadow's limit to every free's entry:
# 1,976.3). The program's output (a sum of bytes read back) is
# native's, and MEMTRACE_UNWIND=check (every capture made by libunwind too,
# the frames and interned ids compared) finds 0 mismatches. About 20 s.
set -u
. "$(dirname "$0")/lib.sh"
lib=$build/libmemtrace.so
prog=$tests/perf_cpu_pair
budget=1977
unset MEMTRACE_SAMPLE MEMTRACE_UNWIND MEMTRACE_REDZONE MEMTRACE_QUARANTINE MEMTRACE_FREED \
    MEMTRACE_OUTPUT MEMTRACE_DEPTH MEMTRACE_GUARD_SAMPLE
cd "$work" || exit 1

out=$(timeout 120 env LD_PRELOAD="$lib" MEMTRACE_UNWIND=check "$prog" 30000 2>check.err)
check "check mode: exit status" 0 $?
check "check mode: the program's answer" "$(timeout 60 "$prog" 30000)" "$out"
# Each pair captures its malloc's stack and its free's.
unwind_check "check mode" check.err 60000

if ! command -v valgrind >/dev/null 2>&1; then
    fail "valgrind" "not installed (make deps)"
    finish perf_cpu_pair
    exit 1
fi

counts=()
for n in 10000 30000; do
    counts+=("$(irefs $n.native.out -- "$prog" $n)")
    counts+=("$(irefs $n.tracer.out LD_PRELOAD="$lib" -- "$prog" $n)")
    check "pair $n: the program's answer under the tracer" "$(cat $n.native.out)" "$(cat $n.tracer.out)"
done
step_over "pair: a malloc/free pair" "$budget" 20000 "${counts[@]}"

finish perf_cpu_pair
