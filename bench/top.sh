#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/top.sh: `memtrace top` in `make bench`. On a traced process of
# 1,000,000 live blocks (bench/top_target.c):
#  - the CPU one refresh costs the viewer (user + system, from its own
#    run under /usr/bin/time): --batch -n 1 whole (start-up and the modules'
#    symbol tables included), and the added cost of each further refresh
#    ((-n 5 minus -n 1) / 4), with the process at rest and while it frees
#    and allocates as fast as it can (where a shard may be read again);
#  - the process's throughput (free-and-malloc pairs a second) watched
#    every second against unwatched, run one after the other, over
#    BENCH_ROUNDS rounds (the order alternating): the median ratio; and
#    the same per second of the process's own CPU time, which tells what
#    the view costs the process apart from the CPU it takes from it: on a
#    machine whose cores are all busy (a shared one), the viewer's CPU
#    comes out of the process's share, and the first ratio shows that.
# Targets: a refresh at most 0.2 s CPU; throughput at least 0.98x.
#
#   bench/top.sh LAUNCHER TOP_TARGET
set -u
mt=$1
target=$2
lib=$(dirname "$mt")/libmemtrace.so
rounds=${BENCH_ROUNDS:-5}
live=1000000
seconds=6
work=$(mktemp -d /tmp/memtrace-bench-top.XXXXXX)
pids=()
trap 'kill -9 "${pids[@]}" 2>/dev/null; rm -rf "$work"' EXIT

start() { # NAME SECONDS: the target, traced, waiting on $work/go.NAME; PID into $pid
    rm -f "$work/go.$1"
    TOP_WAIT=$work/go.$1 LD_PRELOAD=$lib "$target" "$live" "$2" >"$work/out.$1" 2>&1 &
    pids+=($!)
    pid=
    until [ -n "$pid" ]; do
        sleep 0.1
        pid=$(awk '$1 == "ready" { print $2 }' "$work/out.$1")
        kill -0 "${pids[-1]}" 2>/dev/null || { echo "bench/top.sh: the target failed: $(cat "$work/out.$1")" >&2; exit 1; }
    done
}
cpu() { # N: CPU seconds of memtrace top --batch -n N on $pid
    /usr/bin/time -f '%U %S' -o "$work/time" "$mt" top --batch -n "$1" --interval 0.01 "$pid" >/dev/null 2>"$work/top.err" ||
        { echo -; return; }
    awk '{ printf "%.3f\n", $1 + $2 }' "$work/time"
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (!NR) print "-"; else print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
pairs() { # NAME [WHAT]: the target's pairs_per_s (once it ended: wait first)
    awk -v w="${2:-pairs_per_s}" '$1 == w { print $2 }' "$work/out.$1"
}

: >"$work/one" >"$work/more" >"$work/one_busy" >"$work/more_busy" >"$work/ratio" >"$work/ratio_cpu"
for ((r = 1; r <= rounds; r++)); do
    # At rest, then busy (the work runs while a viewer reads).
    start rest 10
    one=$(cpu 1) five=$(cpu 5)
    echo "$one" >>"$work/one"
    awk -v a="$one" -v b="$five" 'BEGIN { if (a != "-" && b != "-") printf "%.3f\n", (b - a) / 4 }' >>"$work/more"
    touch "$work/go.rest"
    one=$(cpu 1) five=$(cpu 5)
    echo "$one" >>"$work/one_busy"
    awk -v a="$one" -v b="$five" 'BEGIN { if (a != "-" && b != "-") printf "%.3f\n", (b - a) / 4 }' >>"$work/more_busy"
    wait "${pids[-1]}" 2>/dev/null
    # Throughput, watched every second and not, in turn.
    for v in $( ((r % 2)) && echo "alone watched" || echo "watched alone"); do
        start "$v" "$seconds"
        if [ "$v" = watched ]; then
            "$mt" top --batch -n 1000 --interval 1 "$pid" >/dev/null 2>&1 &
            viewer=$!
        fi
        touch "$work/go.$v"
        wait "${pids[-1]}" 2>/dev/null
        eval "pairs_$v=\$(pairs $v)"
        eval "cpu_$v=\$(pairs $v pairs_per_cpu_s)"
        [ "$v" = watched ] && wait "$viewer" 2>/dev/null
    done
    # shellcheck disable=SC2154 # set by eval above
    awk -v w="$pairs_watched" -v a="$pairs_alone" 'BEGIN { if (w != "" && a > 0) printf "%.4f\n", w / a }' >>"$work/ratio"
    # shellcheck disable=SC2154 # set by eval above
    awk -v w="$cpu_watched" -v a="$cpu_alone" 'BEGIN { if (w != "" && a > 0) printf "%.4f\n", w / a }' >>"$work/ratio_cpu"
    echo "bench/top.sh: round $r: alone $pairs_alone, watched $pairs_watched pairs/s; per CPU second $cpu_alone, $cpu_watched" >&2
done
one=$(median <"$work/one") more=$(median <"$work/more")
one_busy=$(median <"$work/one_busy") more_busy=$(median <"$work/more_busy")
ratio=$(median <"$work/ratio") ratio_cpu=$(median <"$work/ratio_cpu")
echo
echo "## memtrace top (bench/top.sh, $rounds rounds, medians)"
echo
echo "a traced process of $live live blocks from 8 sites:"
echo "- CPU of memtrace top --batch -n 1, start-up included: $one s at rest, $one_busy s while the process churns"
echo "- CPU of each further refresh: $more s at rest, $more_busy s while it churns"
echo "- the process's throughput watched every second vs not: ${ratio}x (per-round ratios: $(paste -sd' ' "$work/ratio"))"
echo "- the same per second of the process's own CPU time: ${ratio_cpu}x (per-round: $(paste -sd' ' "$work/ratio_cpu"))"
check() { # LABEL CONDITION VALUE
    if [ "$3" = - ] || [ -z "$3" ]; then echo "NO DATA: $1"; return; fi
    if awk -v v="$3" "BEGIN { exit !($2) }"; then echo "PASS: $1 -- $3"; else echo "FAIL: $1 -- $3"; fi
}
check "one refresh of a 1,000,000-block process <= 0.2 s CPU (-n 1 whole, at rest)" "v <= 0.2" "$one"
check "one refresh <= 0.2 s CPU while the process churns (-n 1 whole)" "v <= 0.2" "$one_busy"
check "throughput watched every second >= 0.98x unwatched" "v >= 0.98" "$ratio"
