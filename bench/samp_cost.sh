#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/samp_cost.sh: where the always-on profiler's cost goes, counted,
# not timed: callgrind's instructions (the same whatever the machine's
# load) of sqlite3 and clang++ (bench/workloads.sh's commands) natively,
# under bench/floor.c (an interposer that only forwards: the least any
# preloaded library adds) and under the profiler as bench/sampled.sh's
# always-on arm runs it (MEMTRACE_SAMPLE=524288, MEMTRACE_PPROF at exit,
# MEMTRACE_SYMBOLIZE=later; seeded). The profiler's instructions over
# native's are split into start-up (its constructor and first
# allocation's mt_start), exit (the exit handlers' instructions over
# native's: the exit report and the pprof files), the reporter thread
# (its reports: under valgrind the program runs some 50 times slower, so
# it makes that many more periodic reports than natively; per report
# too), and the rest, the entry points' own work, per call of the
# allocator (malloc, free, realloc, calloc, as native's run calls
# libc's). Children: how many programs the workload execs besides its
# own (strace; clang++ -c compiles in its own process). Markdown on
# stdout. About 15 minutes on a quiet machine (clang++ under callgrind);
# SAMP_COST_NAMES=sqlite3 for one workload.
#
#   bench/samp_cost.sh PROFILER_LIB BENCH_DIR
set -u
BIN=$(realpath "$2")
SRC=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/memtrace-bench-samp-cost.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp "$1" "$work/profiler.so" || exit 1 # build/ may be relinked meanwhile
if ! command -v valgrind >/dev/null || ! command -v callgrind_annotate >/dev/null; then
    echo "the sampled profiler's cost, decomposed: SKIP -- valgrind absent (make deps installs it)"
    exit 0
fi
. "$SRC/workloads.sh"

. "$SRC/count.sh"
# run NAME ARM: callgrind's profile of NAME under ARM in $work/NAME.ARM.cg,
# valgrind's report in .cg.err; its total instructions on stdout, or "-".
run() {
    local env=()
    case $2 in
    floor) env=(LD_PRELOAD="$BIN/floor.so") ;;
    later) env=(LD_PRELOAD="$work/profiler.so" MEMTRACE_SAMPLE=524288 MEMTRACE_SAMPLE_SEED=1
                MEMTRACE_PPROF="$work/p.pb.gz" MEMTRACE_SYMBOLIZE=later) ;;
    esac
    VG_OUT=$work/$1.$2.cg vg_count callgrind "${env[@]}" -- "${CMD[$1]}"
}

# incl NAME ARM REGEX: the inclusive count of the first function whose
# name matches REGEX (0 when none).
# (memtrace's functions are matched by name: valgrind reads line tables
# for .text only, and those the link puts in .text.steady are "???:NAME".)
incl() {
    callgrind_annotate --inclusive=yes --threshold=100 --auto=no "$work/$1.$2.cg" 2>/dev/null |
        awk -v re="$3" '$0 ~ re { gsub(",", "", $1); print $1; found = 1; exit }
                        END { if (!found) print 0 }'
}

# calls NAME: the allocator calls of native's run (calls into libc's
# malloc, free, realloc and calloc, from their callers' lines).
calls() {
    callgrind_annotate --tree=caller --inclusive=yes --threshold=100 --auto=no \
        "$work/$1.native.cg" 2>/dev/null |
        awk '/^ +[0-9,]+ \([ 0-9.]+%\) +< / { n = $0; sub(/.*\(/, "", n); sub(/x\).*/, "", n)
                                              gsub(",", "", n); pending += n; next }
             /\*  \.\/malloc\/\.\/malloc\/malloc\.c:(malloc|free|realloc|calloc) \[/ { s += pending }
             { pending = 0 }
             END { print s + 0 }'
}

execs() {
    local cmd
    read -a cmd <<< "${CMD[$1]}"
    if command -v strace >/dev/null &&
        strace -f -qq -e trace=execve -o "$work/strace" "${cmd[@]}" >/dev/null 2>&1; then
        echo $(($(grep -c 'execve(' "$work/strace") - 1))
    else
        echo "-"
    fi
}

echo "the always-on profiler's cost, counted (callgrind instructions over native's; MEMTRACE_SAMPLE=524288, MEMTRACE_SYMBOLIZE=later, MEMTRACE_PPROF; an interposer that only forwards, bench/floor.c, beside it):"
for name in ${SAMP_COST_NAMES:-sqlite3 clang++}; do
    n=$(run "$name" native)
    f=$(run "$name" floor)
    l=$(run "$name" later)
    case "$n $f $l" in *-*) echo "  $name: a run failed"; continue ;; esac
    c=$(calls "$name")
    start=$(($(incl "$name" later ':mt_constructor \[') + 0))
    # mt_start's own when a malloc ran it before the constructor did
    first=$(incl "$name" later ':mt_start \[')
    under=$(callgrind_annotate --tree=caller --inclusive=yes --threshold=100 --auto=no \
        "$work/$name.later.cg" 2>/dev/null | awk '/< .*mt_constructor/ { n = $1 } 
            /\*  .*:mt_start \[/ { gsub(",", "", n); print n + 0; found = 1; exit } !/</ { n = 0 }
            END { if (!found) print 0 }')
    start=$((start + first - under))
    ex=$(($(incl "$name" later 'exit\.c:__run_exit_handlers ') - $(incl "$name" native 'exit\.c:__run_exit_handlers ')))
    rep=$(incl "$name" later ':reporter_main \[')
    reports=$(grep -c '^memtrace: report [0-9]* (periodic)' "$work/$name.later.cg.err")
    rest=$((l - n - start - ex - rep))
    awk -v name="$name" -v n="$n" -v f="$f" -v l="$l" -v c="$c" -v s="$start" -v e="$ex" \
        -v r="$rep" -v k="$reports" -v rest="$rest" -v x="$(execs "$name")" 'BEGIN {
        printf "  %s: +%.2f%% (floor +%.2f%%; %.0f M over native'"'"'s %.0f M): start-up %.2f M, exit %.2f M, reporter thread %.2f M (%d periodic reports, %.2f M each), the rest %.1f a call over %.2f M calls (floor %.1f); programs exec'"'"'d: %s\n",
            name, (l - n) * 100 / n, (f - n) * 100 / n, (l - n) / 1e6, n / 1e6, s / 1e6, e / 1e6,
            r / 1e6, k, k ? r / k / 1e6 : 0, c ? rest / c : 0, c / 1e6, c ? (f - n) / c : 0, x }'
done
