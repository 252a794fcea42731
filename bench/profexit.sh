#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/profexit.sh: what the sampled profiler adds to a program's exit.
# bench/exitstamp.so (preloaded first) writes the time at which the
# program's main returned (or it called exit) and the CPU time the process
# had used by then; bench/measure gives the process's CPU in all, and the
# script reads the clock once it has been waited for (bash's
# EPOCHREALTIME, no fork in between). The differences are the exit's CPU
# and wall time: the exit handlers (the profiler's exit report, its
# symbolization, its pprof files), the destructors and the kernel's
# teardown. The profiler's (MEMTRACE_SAMPLE=524288, its other settings the
# defaults, the report to a file) less native's, without and with
# MEMTRACE_PPROF, and with MEMTRACE_PPROF and MEMTRACE_SYMBOLIZE=later
# (raw frames, nothing symbolized in the process), on churn (also a short
# run), sqlite3 and clang++ (libLLVM), over BENCH_ROUNDS rounds with the
# four arms alternated;
# medians and the
# spread, markdown on stdout, then the target: at most 20 ms beyond
# native's exit. CPU is the figure to trust on a loaded machine (the wall
# time also waits for a CPU); the target is read on it.
#
#   bench/profexit.sh PROFILER_LIB BENCH_DIR
# (BENCH_DIR holds churn, measure and exitstamp.so)
set -u
profiler=$(realpath "$1")
BIN=$(realpath "$2")
SRC=$(cd "$(dirname "$0")" && pwd)
rounds=${BENCH_ROUNDS:-5}
work=$(mktemp -d /tmp/memtrace-bench-profexit.XXXXXX)
trap 'rm -rf "$work"' EXIT
# A private copy: build/ may be relinked while this runs (run.sh's reason).
cp "$profiler" "$work/profiler.so" && cp "$BIN/exitstamp.so" "$work/exitstamp.so" || exit 1
stamp=$work/exitstamp.so profiler=$work/profiler.so

. "$SRC/workloads.sh"
# churn_short: a run shorter than the first periodic report (1 s), where
# nothing was symbolized before the exit.
CMD[churn_short]="$BIN/churn 1 300000 100000"
NAMES=(churn_short churn sqlite3 clang++)

median() {
    sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print a[(NR + 1) / 2];
                                        else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
spread() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR) printf "%s-%s", lo, hi; else print "-" }'; }

# exit_ms NAME ARM: one run of workload NAME; appends "WALL_MS CPU_MS" from
# its main's return to its end to $work/NAME.ARM (nothing when it failed).
exit_ms() {
    local name=$1 arm=$2 pre=$stamp extra=()
    case $arm in
    prof) pre=$stamp:$profiler extra=(-e MEMTRACE_SAMPLE=524288 -e MEMTRACE_OUTPUT="$work/report") ;;
    pprof) pre=$stamp:$profiler extra=(-e MEMTRACE_SAMPLE=524288 -e MEMTRACE_OUTPUT="$work/report"
                                       -e MEMTRACE_PPROF="$work/p.pb.gz") ;;
    later) pre=$stamp:$profiler extra=(-e MEMTRACE_SAMPLE=524288 -e MEMTRACE_OUTPUT="$work/report"
                                       -e MEMTRACE_PPROF="$work/p.pb.gz" -e MEMTRACE_SYMBOLIZE=later) ;;
    esac
    local envs=()
    for e in ${ENV[$name]:-}; do envs+=(-e "$e"); done
    rm -f "$work/stamp" "$work/report" "$work/p.pb.gz" "$work/p.pb.gz.peak"
    local out
    out=$(cd "$work" && eval "\"\$BIN/measure\" -t 600 -e EXITSTAMP=\"\$work/stamp\" -e LD_PRELOAD=\"\$pre\" \
        \${extra[@]+\"\${extra[@]}\"} \${envs[@]+\"\${envs[@]}\"} -- ${CMD[$name]}")
    local rc=$? end=$EPOCHREALTIME
    if [ "$rc" != 0 ] || [ ! -s "$work/stamp" ]; then
        echo "  $name ($arm): $out" >&2
        return
    fi
    local cpu=${out#*cpu=}
    read -r wall_us cpu_us <"$work/stamp"
    awk -v e="${end/./}" -v s="$wall_us" -v c="${cpu%% *}" -v c0="$cpu_us" \
        'BEGIN { printf "%.1f %.1f\n", (e - s) / 1000, c * 1000 - c0 / 1000 }' >>"$work/$name.$arm"
}

for ((r = 0; r < rounds; r++)); do
    for name in "${NAMES[@]}"; do
        if [ $((r % 2)) = 0 ]; then arms="native prof pprof later"; else arms="later pprof prof native"; fi
        for arm in $arms; do exit_ms "$name" "$arm"; done
    done
done

col() { cut -d' ' -f"$1" "$2" 2>/dev/null; }
for name in "${NAMES[@]}"; do
    nat_wall=$(col 1 "$work/$name.native" | median) nat_cpu=$(col 2 "$work/$name.native" | median)
    echo "profiler exit, MEMTRACE_SAMPLE=524288, $name (medians of $rounds; native's exit: CPU $nat_cpu ms, wall $nat_wall ms):"
    for arm in prof pprof later; do
        f=$work/$name.$arm
        cpu=$(col 2 "$f" | median) wall=$(col 1 "$f" | median)
        added=$(awk -v a="$cpu" -v b="$nat_cpu" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%.1f", a - b }')
        addw=$(awk -v a="$wall" -v b="$nat_wall" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%.1f", a - b }')
        what="without MEMTRACE_PPROF"
        [ "$arm" = pprof ] && what="with MEMTRACE_PPROF"
        [ "$arm" = later ] && what="with MEMTRACE_PPROF and MEMTRACE_SYMBOLIZE=later"
        ok=FAIL
        awk -v v="$added" 'BEGIN { exit !(v != "-" && v <= 20) }' && ok=ok
        echo "- $what: CPU $added ms beyond native's (runs $(col 2 "$f" | spread) ms), wall $addw ms (runs $(col 1 "$f" | spread) ms); target <= 20 ms: $ok"
    done
done
