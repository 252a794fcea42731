#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The tracer at its defaults, what a stack frame adds to a malloc/free
# pair, counted (callgrind's instructions, load-independent): bench/depth.c
# (-O2) recurses on a thread to 10 and to 60 frames, then allocates and
# frees at the leaf, MEMTRACE_DEPTH=64. A pair's cost at a depth is the
# difference of runs of 30,000 and 10,000 pairs over 20,000 (start-up and
# exit cancel); a frame's is what depth 60's pair costs over depth 10's,
# over the 50 frames between. Each capture meets its thread's unwind memo
# at the leaf and still reads back every older frame's saved return
# address (and rbp where it matters), since an outer frame's slot can
# change while every inner one matches (capture_cfi.c, first_changed):
# that pass is the part of a pair that grows with depth, two captures a
# pair. Budgets, the figures measured when the last cut was made plus a
# little: 8.8 instructions a frame (first_changed eight checks a turn,
# 8.72; four a turn with a per-turn bound, 10.32) and the depth
# goal, depth 60's pair at most 1.3x depth 10's (1.273; was 1.321).
# MEMTRACE_UNWIND=check finds 0 mismatches at depth 60. About 15 s.
set -u
. "$(dirname "$0")/lib.sh"
lib=$build/libmemtrace.so
frame_budget=8.8
unset MEMTRACE_SAMPLE MEMTRACE_UNWIND MEMTRACE_REDZONE MEMTRACE_QUARANTINE MEMTRACE_FREED \
    MEMTRACE_OUTPUT MEMTRACE_GUARD_SAMPLE
cd "$work" || exit 1
if ! gcc -O2 -g -pthread -o depth "$root/bench/depth.c"; then
    fail "build bench/depth.c" "the compiler failed"
    finish perf_depth
    exit 1
fi

timeout 120 env LD_PRELOAD="$lib" MEMTRACE_DEPTH=64 MEMTRACE_UNWIND=check ./depth 60 2000 \
    >check.out 2>check.err
check "check mode: exit status" 0 $?
# 2,000 pairs, each capturing its malloc's stack and its free's.
unwind_check "check mode, depth 60" check.err 4000

if ! command -v valgrind >/dev/null 2>&1; then
    fail "valgrind" "not installed (make deps)"
    finish perf_depth
    exit 1
fi

declare -A n
for d in 10 60; do
    for p in 10000 30000; do
        n[$d.$p]=$(irefs $d.$p.out LD_PRELOAD="$lib" MEMTRACE_DEPTH=64 -- ./depth $d $p)
    done
done
case "${n[*]}" in
*-*)
    fail "counted" "a run failed: ${n[*]}; $(head -3 "$work/irefs.err")"
    finish perf_depth
    exit 1
    ;;
esac
read -r pair10 pair60 frame < <(awk -v a1="${n[10.10000]}" -v a2="${n[10.30000]}" \
    -v b1="${n[60.10000]}" -v b2="${n[60.30000]}" \
    'BEGIN { p10 = (a2 - a1) / 20000; p60 = (b2 - b1) / 20000
             printf "%.2f %.2f %.2f\n", p10, p60, (p60 - p10) / 50 }')
if awk -v f="$frame" -v b="$frame_budget" 'BEGIN { exit !(f <= b) }'; then
    pass "a frame: $frame instructions a pair (budget $frame_budget)"
else
    fail "a frame's instructions a pair" "$frame, over the budget of $frame_budget"
fi
ratio=$(awk -v a="$pair10" -v b="$pair60" 'BEGIN { printf "%.3f", b / a }')
if awk -v r="$ratio" 'BEGIN { exit !(r <= 1.3) }'; then
    pass "depth 60 / depth 10: ${ratio}x ($pair60 / $pair10 instructions a pair; at most 1.3x)"
else
    fail "depth 60 / depth 10" "${ratio}x ($pair60 / $pair10 instructions a pair), over 1.3x"
fi

finish perf_depth
