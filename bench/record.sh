#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/record.sh: the recording (MEMTRACE_RECORD) in `make
# bench`. Over BENCH_ROUNDS rounds, every workload of bench/run.sh under
# the tracer with and without a recording (in alternating order), the CPU
# (user+sys, the writer thread included) of one over the other; the
# recording's size on churn per event (compressed, stacks, modules and
# symbols included); the file of churn with MEMTRACE_RECORD_CULL_MS
# (BENCH_CULL_MS, default 1000) against without; and memtrace export
# --json's time on the python3 recording. Medians, markdown on stdout,
# then the targets (CPU <= 1.25x the tracer's, <= 12 bytes per event,
# culling >= 10x).
#
#   bench/record.sh TRACER_LIB MEMTRACE_EXPORT BENCH_DIR
set -u
tracer=$(realpath "$1")
export_=$(realpath "$2")
BIN=$(realpath "$3")
SRC=$(cd "$(dirname "$0")" && pwd)
rounds=${BENCH_ROUNDS:-5}
cull=${BENCH_CULL_MS:-1000}
work=$(mktemp -d /tmp/memtrace-bench-record.XXXXXX)
trap 'rm -rf "$work"' EXIT
# Private copies: build/ may be relinked while this runs (run.sh's reason).
cp "$tracer" "$work/libmemtrace.so" && cp "$export_" "$work/memtrace-export" || exit 1
tracer=$work/libmemtrace.so
export_=$work/memtrace-export

. "$SRC/workloads.sh"

field() { sed -n "s/.*\\b$2=\\([^ ]*\\).*/\\1/p" "$1" 2>/dev/null; }
median() {
    sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print a[(NR + 1) / 2];
                                        else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
fmt() { case $1 in -) echo - ;; *) printf '%.2f' "$1" ;; esac; }

# run NAME VARIANT ROUND: measure's line into res.NAME.VARIANT.ROUND.
run() {
    local name=$1 v=$2 r=$3 env=(-e "LD_PRELOAD=$tracer") cmd
    read -a cmd <<< "${CMD[$name]}"
    [ -n "${ENV[$name]:-}" ] && env+=(-e "${ENV[$name]}")
    rm -f "$work/$name.rec"
    case $v in
    record) env+=(-e "MEMTRACE_RECORD=$work/$name.rec") ;;
    cull) env+=(-e "MEMTRACE_RECORD=$work/$name.rec" -e "MEMTRACE_RECORD_CULL_MS=$cull") ;;
    esac
    "$BIN/measure" -t 300 -o "$work/log.$name.$v.$r" "${env[@]}" -- "${cmd[@]}" >"$work/res.$name.$v.$r"
    if [ -f "$work/$name.rec" ]; then
        echo "bytes=$(stat -c %s "$work/$name.rec") events=$(sed -n 's/^memtrace: recording: .* (\([0-9]*\) events).*/\1/p' "$work/log.$name.$v.$r")" \
            >>"$work/res.$name.$v.$r"
        [ "$name" = python3 ] && [ "$v" = record ] && cp "$work/$name.rec" "$work/py.rec"
    fi
    printf '  %-8s %-7s %s\n' "$name" "$v" "$(tr '\n' ' ' <"$work/res.$name.$v.$r")" >&2
}

for ((r = 1; r <= rounds; r++)); do
    echo "record round $r/$rounds" >&2
    for name in "${WORKLOADS[@]}"; do
        if ((r % 2)); then run "$name" tracer "$r"; run "$name" record "$r"
        else run "$name" record "$r"; run "$name" tracer "$r"; fi
    done
    run churn cull "$r"
    if [ -f "$work/py.rec" ]; then
        t0=$(date +%s.%N)
        "$export_" --json "$work/py.rec" -o "$work/py.json" 2>/dev/null &&
            echo "seconds=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }') events=$(field "$work/res.python3.record.$r" events)" \
                >"$work/export.$r"
    fi
done

# ratio NAME A B KEY: per round A's KEY over B's, where both ran.
ratio() {
    for ((r = 1; r <= rounds; r++)); do
        local a="$work/res.$1.$2.$r" b="$work/res.$1.$3.$r"
        grep -q status=ok "$a" 2>/dev/null && grep -q status=ok "$b" 2>/dev/null || continue
        awk -v x="$(field "$a" "$4")" -v y="$(field "$b" "$4")" 'BEGIN { if (y > 0) printf "%.6f\n", x / y }'
    done | median
}
per_event() {
    for ((r = 1; r <= rounds; r++)); do
        awk -v b="$(field "$work/res.churn.record.$r" bytes)" -v e="$(field "$work/res.churn.record.$r" events)" \
            'BEGIN { if (e > 0) printf "%.4f\n", b / e }'
    done | median
}

echo
echo "## The recording (MEMTRACE_RECORD, tracer library)"
echo
echo "| workload | CPU with a recording / without | events | file MB | bytes per event |"
echo "|---|---|---|---|---|"
for name in "${WORKLOADS[@]}"; do
    ev=$(for ((r = 1; r <= rounds; r++)); do field "$work/res.$name.record.$r" events; done | median)
    by=$(for ((r = 1; r <= rounds; r++)); do field "$work/res.$name.record.$r" bytes; done | median)
    echo "| $name | $(fmt "$(ratio "$name" record tracer cpu)") | $ev | $(awk -v b="$by" 'BEGIN { if (b == "-") print "-"; else printf "%.1f", b / 1048576 }') | $(awk -v b="$by" -v e="$ev" 'BEGIN { if (e > 0) printf "%.2f", b / e; else print "-" }') |"
done
cull_ratio=$(ratio churn record cull bytes)
cpu_cull=$(ratio churn cull tracer cpu)
exp_s=$(for ((r = 1; r <= rounds; r++)); do field "$work/export.$r" seconds; done | median)
echo
echo "churn with MEMTRACE_RECORD_CULL_MS=$cull: the file $(fmt "$cull_ratio")x smaller, CPU $(fmt "$cpu_cull")x the tracer's"
echo "memtrace export --json of the python3 recording ($(field "$work/export.1" events) events): $(fmt "$exp_s") s (median)"
echo
echo "(CPU is wall-clock-free but this machine's load still moves it; instruction counts"
echo "under callgrind are steadier.)"
echo
check() { # LABEL CONDITION VALUE
    if [ "$3" = - ]; then echo "NO DATA: $1"
    elif awk -v v="$3" "BEGIN { exit !($2) }"; then echo "PASS: $1 -- $(fmt "$3")"
    else echo "FAIL: $1 -- $(fmt "$3")"; fi
}
for name in "${WORKLOADS[@]}"; do
    check "$name: recording CPU <= 1.25x the tracer's" "v <= 1.25" "$(ratio "$name" record tracer cpu)"
done
check "churn: <= 12 bytes per event on disk" "v <= 12" "$(per_event)"
check "churn: culling ($cull ms) cuts the file >= 10x" "v >= 10" "$cull_ratio"
