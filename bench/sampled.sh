#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/sampled.sh: always-on sampling at production cost, as the targets
# state it: the profiler (MEMTRACE_SAMPLE=524288 with a pprof profile at
# exit, MEMTRACE_PPROF) against native, CPU (user+sys, bench/measure) and
# peak RSS, on churn (2 threads, as written, no tag scopes), sqlite3,
# python3 (PYTHONMALLOC=malloc) and clang++ (libLLVM's code in one
# process); the same profiler with MEMTRACE_SYMBOLIZE=later (nothing
# symbolized in the process: raw frames and build IDs, pprof symbolizes),
# and the tracer at the same rate beside them, for comparison. Over
# BENCH_ROUNDS rounds, the four arms of a workload back to back in an
# order that turns each round; medians of the per-round ratios, and the
# spread (lowest-highest). Targets, checked on the `later` arm (the
# always-on configuration): CPU at most 1.03x native on sqlite3 and
# clang++, 1.40x on churn (an interposer that only forwards costs about
# 1.2x there, bench/floor.c); peak RSS at most 1.05x native.
# Markdown on stdout.
#
#   bench/sampled.sh TRACER_LIB PROFILER_LIB BENCH_DIR
set -u
BIN=$(realpath "$3")
SRC=$(cd "$(dirname "$0")" && pwd)
rounds=${BENCH_ROUNDS:-5}
work=$(mktemp -d /tmp/memtrace-bench-sampled.XXXXXX)
trap 'rm -rf "$work"' EXIT
# Private copies: build/ may be relinked while this runs (run.sh's reason).
cp "$1" "$work/tracer.so" && cp "$2" "$work/profiler.so" || exit 1

. "$SRC/workloads.sh"
CMD[churn]="$BIN/churn 2 3000000 100000"
NAMES=(churn sqlite3 python3 clang++)
ARMS=(native profiler later tracer)
S=(-e MEMTRACE_SAMPLE=524288)

# one NAME ARM ROUND: "cpu rss" of one run into $work/NAME.ARM, or nothing
# when it failed.
one() {
    local env=() cmd
    read -a cmd <<< "${CMD[$1]}" # no -r: "\ " keeps a space in an argument
    for e in ${ENV[$1]:-}; do env+=(-e "$e"); done
    case $2 in
    profiler) env+=(-e LD_PRELOAD="$work/profiler.so" "${S[@]}" -e MEMTRACE_PPROF="$work/p.pb.gz") ;;
    later) env+=(-e LD_PRELOAD="$work/profiler.so" "${S[@]}" -e MEMTRACE_PPROF="$work/p.pb.gz"
                 -e MEMTRACE_SYMBOLIZE=later) ;;
    tracer) env+=(-e LD_PRELOAD="$work/tracer.so" "${S[@]}") ;;
    esac
    local out
    if out=$(nice "$BIN/measure" "${env[@]}" -t 900 -o "$work/log" -- "${cmd[@]}"); then
        echo "$out" | sed -nE 's/.* cpu=([0-9.]+) rss_kb=([0-9]+) .*/\1 \2/p' >"$work/$1.$2.$3"
    else
        echo "  $1 $2 round $3: $out" >&2
    fi
}

for r in $(seq "$rounds"); do
    for name in "${NAMES[@]}"; do
        for i in 0 1 2 3; do
            one "$name" "${ARMS[$(((i + r) % 4))]}" "$r"
        done
    done
done

# stat NAME ARM FIELD: the median, lowest and highest over the rounds of
# ARM's FIELD (1 cpu, 2 rss) over native's in the same round.
stat() {
    for r in $(seq "$rounds"); do
        [ -s "$work/$1.$2.$r" ] && [ -s "$work/$1.native.$r" ] || continue
        paste "$work/$1.$2.$r" "$work/$1.native.$r" |
            awk -v f="$3" '{ n = f == 1 ? $3 : $4; if (n > 0) printf "%.4f\n", (f == 1 ? $1 : $2) / n }'
    done | sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) { print "- - -"; exit }
        m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
        printf "%.3f %.3f %.3f\n", m, a[1], a[NR] }'
}
fmt() { # "MEDIAN LO HI" -> "MEDIANx (LO-HI)"
    set -- $1
    [ "$1" = - ] && { echo "-"; return; }
    echo "${1}x (${2}-${3})"
}
target() { case $1 in sqlite3 | clang++) echo 1.03 ;; churn) echo 1.40 ;; *) echo - ;; esac; }

echo "always-on sampling, MEMTRACE_SAMPLE=524288, vs native ($rounds rounds; median of per-round ratios, lowest-highest):"
for arm in later profiler tracer; do
    case $arm in
    later) echo "  the profiler with MEMTRACE_SYMBOLIZE=later (MEMTRACE_PPROF at exit; the targets are checked on this arm):" ;;
    profiler) echo "  the profiler (libmemtrace-profiler.so, MEMTRACE_PPROF at exit, symbolizing in the process):" ;;
    tracer) echo "  the tracer (libmemtrace.so), for comparison:" ;;
    esac
    for name in "${NAMES[@]}"; do
        cpu=$(stat "$name" "$arm" 1)
        rss=$(stat "$name" "$arm" 2)
        line="    $name: CPU $(fmt "$cpu")"
        t=$(target "$name")
        [ "$arm" = later ] && [ "$t" != - ] && line+=" (target $t)"
        line+=", peak RSS $(fmt "$rss")"
        [ "$arm" = later ] && line+=" (target 1.05)"
        echo "$line"
    done
done
fails=0
for name in "${NAMES[@]}"; do
    cpu=$(stat "$name" later 1)
    rss=$(stat "$name" later 2)
    t=$(target "$name")
    if [ "$t" != - ] && ! awk -v v="${cpu%% *}" -v t="$t" 'BEGIN { exit !(v != "-" && v <= t) }'; then
        echo "- FAIL: sampled profiler (MEMTRACE_SYMBOLIZE=later) CPU on $name $(fmt "$cpu") > ${t}x native"
        fails=$((fails + 1))
    fi
    if ! awk -v v="${rss%% *}" 'BEGIN { exit !(v != "-" && v <= 1.05) }'; then
        echo "- FAIL: sampled profiler (MEMTRACE_SYMBOLIZE=later) peak RSS on $name $(fmt "$rss") > 1.05x native"
        fails=$((fails + 1))
    fi
done
[ "$fails" = 0 ] && echo "- PASS: the sampled profiler (MEMTRACE_SYMBOLIZE=later) within its CPU and peak RSS targets"
exit 0
