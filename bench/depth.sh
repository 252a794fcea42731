#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/depth.sh: the cost of a malloc/free pair against the stack's depth
# (bench/depth.c: a thread recurses to DEPTH frames, then allocates and
# frees at the leaf), at depth 10 and 60, native and under the tracer at
# its defaults with MEMTRACE_DEPTH=64. Target: the pair at depth 60 costs
# at most 1.3x the pair at depth 10.
#   - ns a pair: BENCH_ROUNDS rounds, each running the four arms back to
#     back (alternated, so that load moves them together); medians, with
#     the spread (lowest-highest) of the tracer's;
#   - instructions a pair (callgrind, load-independent): each depth run
#     at two pair counts, the difference divided by the difference in
#     pairs (start-up and exit cancel out). The work is on a thread of the
#     program's own, whose stack the cached-CFI unwinder knows under
#     valgrind too (bench/instr.sh says why the main thread's is not).
# Markdown on stdout.
#
#   bench/depth.sh TRACER_LIB BENCH_DIR
set -u
tracer=$(realpath "$1")
BIN=$(realpath "$2")
ROUNDS=${BENCH_ROUNDS:-5}
PAIRS=${BENCH_DEPTH_PAIRS:-1000000}
work=$(mktemp -d /tmp/memtrace-bench-depth.XXXXXX)
trap 'rm -rf "$work"' EXIT
# A private copy: build/ may be relinked while this runs (run.sh's reason).
cp "$tracer" "$work/libmemtrace.so" || exit 1
tracer=$work/libmemtrace.so

# ns ENV...: the "X.X ns a pair" figure of one run, or "-".
ns() {
    env "$@" "$BIN/depth" "${depth}" "$PAIRS" 2>/dev/null |
        awk '/^depth: / { print $(NF - 3); ok = 1 } END { if (!ok) print "-" }'
}
median() { tr ' ' '\n' | grep -v '^-*$' | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread() { tr ' ' '\n' | grep -v '^-*$' | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR) printf "%s-%s", lo, hi; else print "-" }'; }

declare -A T
for ((r = 0; r < ROUNDS; r++)); do
    for depth in 10 60; do
        T[native$depth]+=" $(ns)"
        T[tracer$depth]+=" $(ns LD_PRELOAD="$tracer" MEMTRACE_DEPTH=64)"
    done
done
n10=$(echo ${T[native10]} | median); n60=$(echo ${T[native60]} | median)
t10=$(echo ${T[tracer10]} | median); t60=$(echo ${T[tracer60]} | median)
ratio() { case "$1 $2" in *-*) echo - ;; *) awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }' ;; esac; }
echo "malloc/free pair against stack depth (bench/depth.c, MEMTRACE_DEPTH=64, medians of $ROUNDS alternated rounds):"
echo "  depth 10: tracer ${t10} ns ($(echo ${T[tracer10]} | spread)), native ${n10} ns;" \
     "depth 60: tracer ${t60} ns ($(echo ${T[tracer60]} | spread)), native ${n60} ns;" \
     "depth 60 / depth 10: $(ratio "$t60" "$t10")x (target <= 1.3x)"

if ! command -v valgrind >/dev/null; then
    echo "  instructions: SKIP -- valgrind absent (make deps installs it)"
    exit 0
fi
# instr DEPTH PAIRS: callgrind's "I refs" of one tracer run, or "-".
. "$(dirname "$0")/count.sh"
instr() {
    vg_count callgrind LD_PRELOAD="$tracer" MEMTRACE_DEPTH=64 -- "$BIN/depth" "$1" "$2"
}
LO=10000 HI=30000
per_pair() { # DEPTH: instructions a pair
    local a b
    a=$(instr "$1" $LO); b=$(instr "$1" $HI)
    case "$a $b" in *-*) echo - ;; *) echo $(((b - a) / (HI - LO))) ;; esac
}
i10=$(per_pair 10); i60=$(per_pair 60)
echo "  instructions a pair (callgrind, tracer): depth 10 ${i10}, depth 60 ${i60}," \
     "depth 60 / depth 10: $(ratio "$i60" "$i10")x (target <= 1.3x)"
