#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/pyrss.sh: where the tracer's peak RSS on python3 goes, item by item,
# for the target "peak RSS at most 1.5x native". Runs bench/pyrss.py (the
# python3 workload of `make bench`, PYTHONMALLOC=malloc, with a dump of its
# figures where its RSS peaks) natively, under the tracer at its defaults
# and under the tracer with MEMTRACE_REDZONE=0, alternated, BENCH_ROUNDS
# rounds (default 3); every figure is the median over rounds. Items:
#   live table: the bytes mapped for its shards (the state descriptor);
#   redzones: the heap's growth (its Rss) over the MEMTRACE_REDZONE=0 run's;
#   stack store and freed history: the bytes mapped for them;
#   the peak is measure's (the kernel's VmHWM), as in bench/run.sh.
# Markdown on stdout.
#
#   bench/pyrss.sh TRACER_LIB BENCH_DIR
set -u
tracer=$(realpath "$1")
BIN=$(realpath "$2")
SRC=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${BENCH_ROUNDS:-3}
PYTHON=$(python3 -c 'import sys; print(sys.executable)')
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# arm NAME ROUND [VAR=VALUE...]: one run; its figures in $WORK/NAME.ROUND.
arm() {
    local name=$1 round=$2
    shift 2
    local env=(-e PYTHONMALLOC=malloc)
    local e
    for e in "$@"; do env+=(-e "$e"); done
    local line
    line=$("$BIN/measure" -t 600 "${env[@]}" -- "$PYTHON" "$SRC/pyrss.py" \
        "$WORK/$name.$round.fig")
    echo "peak_kb $(sed -n 's/.*rss_kb=\([0-9]*\).*/\1/p' <<<"$line")" >> "$WORK/$name.$round.fig"
    grep -q 'status=ok' <<<"$line" || echo "pyrss.sh: $name round $round: $line" >&2
}

for r in $(seq 1 "$ROUNDS"); do
    arm native "$r"
    arm tracer "$r" "LD_PRELOAD=$tracer"
    arm norz "$r" "LD_PRELOAD=$tracer" MEMTRACE_REDZONE=0
done

# med NAME FIELD: the median of FIELD over NAME's rounds.
med() {
    cat "$WORK/$1".*.fig | awk -v f="$2" '$1 == f { print $2 }' | sort -n |
        awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print 0 }'
}

mb() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1e6 }'; }
kmb() { awk -v k="$1" 'BEGIN { printf "%.1f", k * 1024 / 1e6 }'; }

native=$(med native peak_kb)
peak=$(med tracer peak_kb)
live=$(med tracer live_mapped)
blocks=$(med tracer live_blocks)
stacks=$(med tracer stack_bytes)
nstacks=$(med tracer stacks)
freed=$(med tracer freed_bytes)
heap=$(med tracer heap_kb)
heap_norz=$(med norz heap_kb)
heap_native=$(med native heap_kb)
extra_kb=$((peak - native))
rz_kb=$((heap - heap_norz))
other_kb=$((extra_kb - rz_kb - (heap_norz - heap_native) - (live + stacks + freed) / 1024))
ratio=$(awk -v a="$peak" -v b="$native" 'BEGIN { printf "%.2f", a / b }')
per_block=$(awk -v a="$live" -v b="$blocks" 'BEGIN { printf "%.1f", b ? a / b : 0 }')
rz_block=$(awk -v a="$rz_kb" -v b="$blocks" 'BEGIN { printf "%.1f", b ? a * 1024 / b : 0 }')
floor=$(awk -v n="$native" -v e="$extra_kb" -v l="$live" \
    'BEGIN { printf "%.2f", (n + e - l / 1024) / n }')
echo "python3 peak RSS by item (bench/pyrss.sh, at the run's peak, median of $ROUNDS rounds):" \
    "native $(kmb "$native") MB, tracer $(kmb "$peak") MB (${ratio}x; target 1.5x), memtrace's extra $(kmb "$extra_kb") MB:"
echo "  live table $(mb "$live") MB ($blocks live blocks: $per_block bytes a block)," \
    "redzones $(kmb "$rz_kb") MB (the heap's growth over MEMTRACE_REDZONE=0: $rz_block bytes a block)," \
    "rest of the heap's growth $(kmb $((heap_norz - heap_native))) MB," \
    "stack store $(mb "$stacks") MB ($nstacks stacks), freed history $(mb "$freed") MB," \
    "other $(kmb "$other_kb") MB"
echo "  without any live table the tracer would be at ${floor}x native"
