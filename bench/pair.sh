#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/pair.sh: the cost of one unsampled malloc/free pair in sample mode,
# counted, not timed: callgrind's instructions on churn (2 threads, no tag
# scopes: the blocks go in the shadow) under the tracer with
# MEMTRACE_SAMPLE=524288, less native's, per pair; beside it the same for
# bench/floor.c, an interposer that only forwards (the least any preloaded
# library adds to a pair). The sampled blocks' own cost is in the figure
# too, spread over the pairs (at this rate a few hundred of 400,000).
# Then the same with churn's tag scopes (CHURN_TAGS=1: a scope's push and
# pop around each malloc, the blocks with trailers). Markdown on stdout.
#
#   bench/pair.sh TRACER_LIB BENCH_DIR
set -u
tracer=$(realpath "$1")
BIN=$(realpath "$2")
work=$(mktemp -d /tmp/memtrace-bench-pair.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp "$tracer" "$work/libmemtrace.so" || exit 1 # build/ may be relinked meanwhile

if ! command -v valgrind >/dev/null; then
    echo "instructions a malloc/free pair: SKIP -- valgrind absent (make deps installs it)"
    exit 0
fi

PAIRS=300000
LIVE=100000 # churn allocates PAIRS + LIVE blocks and frees them all

. "$(dirname "$0")/count.sh"
# irefs ENV...: callgrind's "I refs" of churn under ENV, or "-".
irefs() {
    vg_count callgrind "$@" -- "$BIN/churn" 2 "$PAIRS" "$LIVE"
}

per_pair() { # per_pair A B: (A - B) per pair, one decimal
    case "$1 $2" in *-*) echo - ;; *) awk -v a="$1" -v b="$2" -v n="$((PAIRS + LIVE))" 'BEGIN { printf "%.1f", (a - b) / n }' ;; esac
}

n=$(irefs)
s=$(irefs LD_PRELOAD="$work/libmemtrace.so" MEMTRACE_SAMPLE=524288 MEMTRACE_SAMPLE_SEED=1)
f=$(irefs LD_PRELOAD="$BIN/floor.so")
echo "instructions a malloc/free pair over native (callgrind, churn on 2 threads without tag scopes, $((PAIRS + LIVE)) pairs), MEMTRACE_SAMPLE=524288: $(per_pair "$s" "$n") (an interposer that only forwards, bench/floor.c: $(per_pair "$f" "$n"))"
# With tag scopes (CHURN_TAGS=1, a push and a pop a pair, blocks with
# trailers): the figure of churn's tags arm in bench/instr.sh, per pair.
n=$(irefs CHURN_TAGS=1)
s=$(irefs CHURN_TAGS=1 LD_PRELOAD="$work/libmemtrace.so" MEMTRACE_SAMPLE=524288 MEMTRACE_SAMPLE_SEED=1)
echo "instructions a malloc/free pair with a tag scope's push and pop over native (callgrind, churn on 2 threads with CHURN_TAGS=1), MEMTRACE_SAMPLE=524288: $(per_pair "$s" "$n")"
