#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The sampled profiler's exit, counted: instructions (valgrind's callgrind,
# the same whatever the machine's load) of the pprof files' gzip
# (src/report/pprof_gzip.c's mt_pprof_gzip, inclusive: protobuf-c's
# packing and zlib's deflate) per byte of the profiles it encodes, on
# tests/progs/perf_samp_exit.c's 4096 stacks (MEMTRACE_SAMPLE=1,
# MEMTRACE_SYMBOLIZE=later, as bench/sampled.sh's always-on arm writes
# them at exit). The figure does not depend on addresses or load; it must
# stay at or below its budget, the figure measured when the cut was made
# (127 a byte) and a tenth: protobuf-c appends a few bytes at a time, and
# deflating each append as it came cost 431 a byte (gathering them in the
# sink's buffer undone). Then the exit report's text: instructions of
# its frames (src/symbolize/sym_frames.c's mt_sym_frames, inclusive) per
# raw frame line written ("  #N 0xPC (PATH+0xOFF) (BuildId: HEX)"): 1694
# when the cut was made, budget a tenth more; five vsnprintf calls a
# frame (src/report/format.c's put_raw as it was) cost 5085. The
# profiles read back whole (gzip -t), the program's answer is native's.
# About 20 s.
set -u
. "$(dirname "$0")/lib.sh"
prof=$build/libmemtrace-profiler.so
prog=$tests/perf_samp_exit
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_PPROF_EVERY MEMTRACE_SAMPLE \
    MEMTRACE_SAMPLE_SEED MEMTRACE_INTERVAL_MS MEMTRACE_SYMBOLIZE MEMTRACE_SIGNAL MEMTRACE_TAGS
if ! command -v valgrind >/dev/null 2>&1 || ! command -v callgrind_annotate >/dev/null 2>&1; then
    fail "valgrind" "not installed (make deps)"
    finish perf_samp_exit
    exit 1
fi
BUDGET=140        # instructions a byte of profile
FRAME_BUDGET=1870 # instructions a raw frame of the exit report

out=$(env LD_PRELOAD="$prof" MEMTRACE_SAMPLE=1 MEMTRACE_INTERVAL_MS=0 MEMTRACE_SYMBOLIZE=later \
    MEMTRACE_PPROF="$work/p.pb.gz" MEMTRACE_OUTPUT="$work/report.txt" \
    timeout 300 valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" \
    "$prog" 4096 2>"$work/err")
RC=$?
status "under callgrind" 0
check "the program's answer" "4096 blocks kept" "$out"
# The program's files carry its pid (valgrind's launcher, preloaded too,
# took the plain name).
main=$(ls "$work"/p.pb.gz.[0-9]* 2>/dev/null | grep -v '\.peak$' | head -1)
peak=$main.peak
if [ -z "$main" ] || [ -z "$peak" ] || ! gzip -t "$main" "$peak" 2>/dev/null; then
    fail "the pprof files" "missing or not gzip: $(ls "$work"); $(head -3 "$work/err")"
    finish perf_samp_exit
    exit 1
fi
pass "the pprof files read back"

# within FN COUNT MIN BUDGET NAME UNIT: FN's inclusive instructions in the
# callgrind profile per one of COUNT UNITs (at least MIN), held to BUDGET.
# valgrind reads line tables for .text only: a function the link places in
# .text.steady (src/capture/steady_text.ld) is "???:FN", so matched by name.
within() {
    local fn=$1 count=$2 min=$3 budget=$4 name=$5 unit=$6 irefs per
    irefs=$(callgrind_annotate --inclusive=yes --threshold=100 --auto=no "$work/cg.out" 2>/dev/null |
        awk -v f=":$fn " 'index($0, f) { gsub(",", "", $1); print $1; exit }')
    if [ -z "$irefs" ] || [ "$count" -lt "$min" ]; then
        fail "counted" "$fn's count '$irefs', $count of a $unit"
        return
    fi
    per=$(awk -v i="$irefs" -v n="$count" 'BEGIN { printf "%.1f", i / n }')
    if awk -v p="$per" -v b="$budget" 'BEGIN { exit !(p <= b) }'; then
        pass "$name: $per instructions a $unit ($count; budget $budget)"
    else
        fail "$name: instructions a $unit" "$per ($irefs over $count), over the budget of $budget"
    fi
}

bytes=$(($(gzip -dc "$main" | wc -c) + $(gzip -dc "$peak" | wc -c)))
within mt_pprof_gzip "$bytes" 100000 "$BUDGET" gzip "byte of profile"
raw_re='^  #[0-9]+ 0x[0-9a-f]+ \(/[^ ]+\+0x[0-9a-f]+\) \(BuildId: [0-9a-f]+\)$'
within mt_sym_frames "$(grep -cE "$raw_re" "$work/report.txt")" 10000 "$FRAME_BUDGET" "exit report" "raw frame"

finish perf_samp_exit
