#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Sample mode's fast paths, counted: instructions (valgrind's callgrind,
# which counts the same whatever the machine's load) of
# tests/progs/perf_fast.c's steps under the profiler at
# MEMTRACE_SAMPLE=1000000000, less native's, per step: a malloc/free pair
# (unsampled blocks in the shadow), the same pair inside a tag scope
# entered and left around the malloc (the blocks carry trailers; churn's
# CHURN_TAGS=1 step), and a scope entered and left alone. A step's cost is
# the difference of two runs of 30,000 and 10,000 steps over 20,000: the
# start-up and the exit cancel, and the steps are the same in every run
# (one thread, one scope name, a seeded countdown that samples none of
# them), so each figure is exact to a hundredth. Each must stay at or
# below its budget: the figure measured when the last cut was made, plus
# one instruction; undoing a cut exceeds it (the tag words in base/hot.h's
# struct: tags and scope; the push cache's check a word at a time: tags
# and scope, 8 instructions; the shadow's limit dropped to 0 once tags
# are in use, one load for mt_shadow_wanted: pair and tags, 2; the push
# cache's slot hashed in 32 bits: tags and scope, 2; a tagged free's
# count without the node array's test once tags were seen in use: tags,
# 2; free's shadow byte read first, before the tests of NULL, the
# internal heap, the guard pool, the phase and the allocator: pair, 19). The
# program's output (a sum of bytes read back) is native's. About 10 s.
set -u
. "$(dirname "$0")/lib.sh"
prof=$build/libmemtrace-profiler.so
prog=$tests/perf_fast
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_TAGS MEMTRACE_SIGNAL
if ! command -v valgrind >/dev/null 2>&1; then
    fail "valgrind" "not installed (make deps)"
    finish perf_fast
    exit 1
fi

# MODE BUDGET (instructions a step over native's)
for arm in "pair 112" "tags 200" "scope 52"; do
    set -- $arm
    mode=$1 budget=$2
    counts=()
    for n in 10000 30000; do
        counts+=("$(irefs "$work/$mode.$n.native" -- "$prog" "$mode" $n)")
        counts+=("$(irefs "$work/$mode.$n.prof" LD_PRELOAD="$prof" MEMTRACE_SAMPLE=1000000000 \
            MEMTRACE_SAMPLE_SEED=1 MEMTRACE_INTERVAL_MS=0 -- "$prog" "$mode" $n)")
        check "$mode $n: the program's answer under the profiler" \
            "$(cat "$work/$mode.$n.native")" "$(cat "$work/$mode.$n.prof")"
    done
    step_over "$mode: a step" "$budget" 20000 "${counts[@]}"
done

finish perf_fast
