#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/defaults_pair.sh: the cost of one malloc/free pair under the tracer
# at its defaults (free stacks, redzones, quarantine), counted, not timed:
# callgrind's instructions and cachegrind's first-level data misses of
# tests/progs/perf_cpu_pair.c (churn's shape: a random slot of a ring of
# 4,096 blocks freed, a block of 16 to 528 bytes allocated there through
# a call chain of random depth 1 to 8; on a thread, where valgrind lets
# the cfi unwinder work), built here with -O2. Each figure is the
# difference of a run of 30,000 pairs and one of 10,000, over 20,000:
# the start-up and the exit cancel. The target it serves is time (added
# CPU at most a third of heaptrack's, run.sh); this is its load-free part.
# Markdown on stdout.
#
#   bench/defaults_pair.sh TRACER_LIB
set -u
tracer=$(realpath "$1")
SRC=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/memtrace-bench-dpair.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp "$tracer" "$work/libmemtrace.so" || exit 1 # build/ may be relinked meanwhile

if ! command -v valgrind >/dev/null; then
    echo "instructions a malloc/free pair at the defaults: SKIP -- valgrind absent (make deps installs it)"
    exit 0
fi
prog=$work/perf_cpu_pair
gcc -O2 -g -pthread -o "$prog" "$SRC/../tests/progs/perf_cpu_pair.c" || exit 1

. "$SRC/count.sh"
# count TOOL N ENV...: vg_count of N pairs under ENV.
count() {
    local tool=$1 n=$2
    shift 2
    vg_count "$tool" "$@" -- "$prog" "$n"
}

n10=$(count callgrind 10000)
t10=$(count callgrind 10000 LD_PRELOAD="$work/libmemtrace.so")
n30=$(count callgrind 30000)
t30=$(count callgrind 30000 LD_PRELOAD="$work/libmemtrace.so")
cn10=($(count cachegrind 10000))
ct10=($(count cachegrind 10000 LD_PRELOAD="$work/libmemtrace.so"))
cn30=($(count cachegrind 30000))
ct30=($(count cachegrind 30000 LD_PRELOAD="$work/libmemtrace.so"))
echo "a malloc/free pair at the tracer's defaults over native (tests/progs/perf_cpu_pair.c -O2 on a thread, valgrind): $(vg_step "$n10" "$t10" "$n30" "$t30" 20000) instructions (callgrind), $(vg_step "${cn10[1]:--}" "${ct10[1]:--}" "${cn30[1]:--}" "${ct30[1]:--}" 20000) L1 data misses (cachegrind); native's pair: $(awk -v a="$n10" -v b="$n30" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%.1f", (b - a) / 20000 }') instructions"
