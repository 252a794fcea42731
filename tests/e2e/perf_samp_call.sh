#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The always-on profiler's call that is not sampled, counted: instructions
# (valgrind's callgrind, the same whatever the machine's load) of an
# allocator call under the profiler as bench/sampled.sh's always-on arm
# runs it (MEMTRACE_SAMPLE=524288, MEMTRACE_SYMBOLIZE=later, seeded; no
# periodic report, whose count under valgrind depends on its slowness),
# less native's, on tests/progs/perf_samp_call.c's mix of malloc, calloc,
# realloc and free of 16 to 528 bytes on a thread. A call's cost is the
# difference of two runs of 30,000 and 10,000 steps over the calls made
# between (the program says how many): the start-up, the ring's filling
# and the exit cancel, and the steps are the same in every run. At 512 KiB
# a sample, almost every call is the fast path's (capture/sample_fast.h),
# so the figure is that path's: it must stay at or below its budget, the
# figure measured when the last cut was made and a tenth (66.6; undoing
# the cut, free and realloc reading the shadow byte only after testing
# for NULL, the internal heap, the guard pool, the phase and the
# allocator, and realloc's old bytes counted after its call: 76.8). The
# program's answer is native's. About 30 s.
set -u
. "$(dirname "$0")/lib.sh"
prof=${PERF_SAMP_CALL_LIB:-$build/libmemtrace-profiler.so}
prog=$tests/perf_samp_call
budget=73
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_PPROF_EVERY MEMTRACE_SAMPLE \
    MEMTRACE_SAMPLE_SEED MEMTRACE_INTERVAL_MS MEMTRACE_SYMBOLIZE MEMTRACE_SIGNAL MEMTRACE_TAGS \
    MEMTRACE_GUARD_SAMPLE
cd "$work" || exit 1
if ! command -v valgrind >/dev/null 2>&1; then
    fail "valgrind" "not installed (make deps)"
    finish perf_samp_call
    exit 1
fi

arm=(LD_PRELOAD="$prof" MEMTRACE_SAMPLE=524288 MEMTRACE_SAMPLE_SEED=1 MEMTRACE_INTERVAL_MS=0
     MEMTRACE_SYMBOLIZE=later MEMTRACE_PPROF="$work/p.pb.gz")
counts=()
for n in 10000 30000; do
    counts+=("$(irefs $n.native -- "$prog" $n)")
    counts+=("$(irefs $n.prof "${arm[@]}" -- "$prog" $n)")
    check "steps $n: the program's answer under the profiler" "$(cat $n.native)" "$(cat $n.prof)"
done
# The program's first word: the allocator calls it made.
c1=$(awk '{ print $1 }' 10000.native)
c2=$(awk '{ print $1 }' 30000.native)
if [ -n "$c1" ] && [ -n "$c2" ]; then
    step_over "per call: an unsampled call ($((c2 - c1)) calls)" "$budget" $((c2 - c1)) "${counts[@]}"
else
    fail "per call: counted" "no call count from the program: $(cat 10000.native 30000.native)"
fi

finish perf_samp_call
