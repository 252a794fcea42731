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
bytes=$(($(gzip -dc "$main" | wc -c) + $(gzip -dc "$peak" | wc -c)))
irefs=$(callgrind_annotate --inclusive=yes --threshold=100 --auto=no "$work/cg.out" 2>/dev/null |
    awk '/:mt_pprof_gzip / { gsub(",", "", $1); print $1; exit }')
if [ -z "$irefs" ] || [ "$bytes" -lt 100000 ]; then
    fail "counted" "mt_pprof_gzip's count '$irefs', $bytes bytes of profile"
else
    per=$(awk -v i="$irefs" -v b="$bytes" 'BEGIN { printf "%.1f", i / b }')
    if awk -v p="$per" -v b="$BUDGET" 'BEGIN { exit !(p <= b) }'; then
        pass "gzip: $per instructions a byte of profile ($bytes bytes; budget $BUDGET)"
    else
        fail "gzip: instructions a byte of profile" "$per ($irefs over $bytes bytes), over the budget of $BUDGET"
    fi
fi

# valgrind reads line tables for .text only: a function the link places in
# .text.steady (src/capture/steady_text.ld) is "???:NAME", so matched by name.
raw_re='^  #[0-9]+ 0x[0-9a-f]+ \(/[^ ]+\+0x[0-9a-f]+\) \(BuildId: [0-9a-f]+\)$'
frames=$(grep -cE "$raw_re" "$work/report.txt")
irefs=$(callgrind_annotate --inclusive=yes --threshold=100 --auto=no "$work/cg.out" 2>/dev/null |
    awk '/:mt_sym_frames / { gsub(",", "", $1); print $1; exit }')
if [ -z "$irefs" ] || [ "$frames" -lt 10000 ]; then
    fail "counted" "mt_sym_frames's count '$irefs', $frames raw frames written"
else
    per=$(awk -v i="$irefs" -v n="$frames" 'BEGIN { printf "%.0f", i / n }')
    if [ "$per" -le "$FRAME_BUDGET" ]; then
        pass "exit report: $per instructions a raw frame ($frames frames; budget $FRAME_BUDGET)"
    else
        fail "exit report: instructions a raw frame" "$per ($irefs over $frames frames), over the budget of $FRAME_BUDGET"
    fi
fi

finish perf_samp_exit
