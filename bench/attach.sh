#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/attach.sh: `memtrace attach` in `make bench`. The pause
# an attach and a detach cause (the launcher's "it was stopped for N ms",
# gdb attached to churn's 2 threads waiting to start), and the per-call
# cost once attached: churn's work time native, preloaded, attached, and
# attached then detached before the work (its frees stay on memtrace's,
# finding no record: the cost of a free after a detach, against native),
# over BENCH_ROUNDS rounds; medians, as a markdown table on stdout. When
# heaptrack is installed, `heaptrack -p` on the same program the same way
# (its work time, and how long its attach takes from the command's start
# to its "injection finished").
#
#   bench/attach.sh LAUNCHER CHURN
set -u
mt=$1
churn=$2
rounds=${BENCH_ROUNDS:-5}
args=(2 2000000 100000)
work=$(mktemp -d /tmp/memtrace-bench-attach.XXXXXX)
trap 'rm -rf "$work"' EXIT

# run VARIANT ROUND: churn's work time in s; for attached, also the pauses.
run() {
    local f=$work/go.$1.$2 err=$work/err.$1.$2 pid
    rm -f "$f"
    case $1 in
    native) CHURN_WAIT=$f "$churn" "${args[@]}" >/dev/null 2>"$err" & ;;
    preloaded) CHURN_WAIT=$f LD_PRELOAD=$(dirname "$mt")/libmemtrace.so "$churn" "${args[@]}" >/dev/null 2>"$err" & ;;
    *) CHURN_WAIT=$f "$churn" "${args[@]}" >/dev/null 2>"$err" & ;;
    esac
    pid=$!
    until grep -q waiting "$err" 2>/dev/null; do sleep 0.01; done
    local t0=$(date +%s%N) hpid=
    if [ "$1" = attached ]; then
        "$mt" attach "$pid" 2>>"$work/pause.attach" || touch "$work/failed"
        echo $((($(date +%s%N) - t0) / 1000000)) >>"$work/wall.attached"
    elif [ "$1" = detached ]; then
        { "$mt" attach "$pid" && "$mt" detach "$pid"; } 2>/dev/null || touch "$work/failed"
    elif [ "$1" = heaptrack ]; then
        # Its data file lands in the working directory whatever -o says.
        (cd "$work" && exec heaptrack -p "$pid" -o "$work/ht.$2") >"$work/ht.log.$2" 2>&1 &
        hpid=$!
        until grep -q "injection finished" "$work/ht.log.$2" 2>/dev/null; do
            kill -0 "$hpid" 2>/dev/null || break
            sleep 0.01
        done
        echo $((($(date +%s%N) - t0) / 1000000)) >>"$work/wall.heaptrack"
    fi
    touch "$f"
    wait "$pid"
    [ -z "$hpid" ] || wait "$hpid"
    rm -f "$work"/ht.*.zst "$work"/ht.*.gz "$work"/heaptrack.*
    sed -n 's/^churn: work \([0-9.]*\) s$/\1/p' "$err"
}
variants=(native preloaded attached detached)
command -v heaptrack >/dev/null && variants+=(heaptrack)
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for r in $(seq "$rounds"); do
    for v in "${variants[@]}"; do
        run "$v" "$r" >>"$work/time.$v"
    done
    # A detach's pause: on a process attached and waiting.
    rm -f "$work/go.d"
    CHURN_WAIT=$work/go.d "$churn" 1 1000 100 >/dev/null 2>"$work/err.d" &
    pid=$!
    until grep -q waiting "$work/err.d" 2>/dev/null; do sleep 0.01; done
    "$mt" attach "$pid" 2>/dev/null
    "$mt" detach "$pid" 2>>"$work/pause.detach"
    touch "$work/go.d"
    wait "$pid"
done
pause() { sed -n 's/.*it was stopped for \([0-9]*\) ms)$/\1/p' "$1" | median; }
if [ -e "$work/failed" ]; then
    echo
    echo "memtrace attach failed here (ptrace not permitted?): no attach figures."
    sed -n 's/^memtrace: //p' "$work/pause.attach" | sort -u | head -3
    exit 0
fi
n=$(median <"$work/time.native")
p=$(median <"$work/time.preloaded")
a=$(median <"$work/time.attached")
echo
echo "### memtrace attach ($rounds rounds, medians)"
echo
echo "| | churn ${args[*]}: work time | ratio to native |"
echo "|---|---|---|"
echo "| native | $n s | 1.00 |"
echo "| preloaded tracer | $p s | $(awk -v a="$p" -v b="$n" 'BEGIN { printf "%.2f", a / b }') |"
echo "| attached tracer | $a s | $(awk -v a="$a" -v b="$n" 'BEGIN { printf "%.2f", a / b }') |"
d=$(median <"$work/time.detached")
echo "| attached, then detached | $d s | $(awk -v a="$d" -v b="$n" 'BEGIN { printf "%.2f", a / b }') |"
if [ -s "$work/time.heaptrack" ]; then
    h=$(median <"$work/time.heaptrack")
    echo "| heaptrack -p | $h s | $(awk -v a="$h" -v b="$n" 'BEGIN { printf "%.2f", a / b }') |"
fi
# Each thread did PAIRS/THREADS frees (and as many native mallocs).
echo
echo "A free after a detach (memtrace's, finding no record): $(awk -v a="$d" -v b="$n" \
    -v k="$((args[1] / args[0]))" 'BEGIN { printf "%+.1f", (a - b) * 1e9 / k }') ns per call against native."
echo
echo "Pause (the process stopped by gdb, as the launcher says): attach $(pause "$work/pause.attach") ms,"
echo "detach $(pause "$work/pause.detach") ms. The attach command's wall time: memtrace attach"
echo "$(median <"$work/wall.attached") ms$([ -s "$work/wall.heaptrack" ] && echo ", heaptrack -p until \"injection finished\" $(median <"$work/wall.heaptrack") ms")."
