#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/clang.sh: the symbolizer on one source built by gcc and by clang
# (bench/symsites.c, -O2 -g; clang writes no .debug_aranges, so its
# compile units are found through the lazily built index of CU ranges).
# Over BENCH_ROUNDS rounds, in alternating order:
#  - the profiler's exit report of 2,000 sites (MEMTRACE_EXIT_TOP=2000),
#    each frame 0 an inline chain of three rows: the run's CPU (user+sys,
#    bench/measure) with the report less the run's with
#    MEMTRACE_EXIT_TOP=0;
#  - the first `memtrace EXPR` (gdb, memtrace-symbolize) on a core of the
#    program holding BENCH_CORE_BLOCKS (default 1,000,000) blocks over the
#    same sites: the CPU of gdb and of its children (memtrace-symbolize,
#    from /proc) over the command.
#  - the profiler's exit report (MEMTRACE_EXIT_TOP's default) of a real
#    compile of bench/templates.cpp: clang++ (libLLVM and libclang-cpp,
#    named from their dynamic symbol tables) against cc1plus (g++'s), the
#    commands of bench/workloads.sh; the CPU of the profiler's exit
#    handlers read in the process around them (bench/exit_cpu.c, preloaded
#    after the profiler), per site written (per frame written also shown:
#    clang's stacks are deeper).
# CPU rather than wall time: on a loaded machine the wall time is mostly
# waiting for a CPU.
# Medians, markdown on stdout, then the target: clang no more than 10%
# slower than gcc on each.
#
#   bench/clang.sh PROFILER_LIB TRACER_LIB MEMTRACE_PY BENCH_DIR
# (BENCH_DIR holds measure, symsites_gcc and symsites_clang)
set -u
profiler=$(realpath "$1")
tracer=$(realpath "$2")
helper=$(realpath "$3")
BIN=$(realpath "$4")
rounds=${BENCH_ROUNDS:-5}
blocks=${BENCH_CORE_BLOCKS:-1000000}
work=$(mktemp -d /tmp/memtrace-bench-clang.XXXXXX)
trap 'rm -rf "$work"' EXIT
SRC=$(cd "$(dirname "$0")" && pwd)
. "$SRC/workloads.sh"
gcc -O2 -shared -fPIC -o "$work/exit_cpu.so" "$SRC/exit_cpu.c" -ldl || exit 1

median() {
    sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print a[(NR + 1) / 2];
                                        else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
now() { date +%s.%N; }
# report CC ROUND: the exit report's CPU seconds into rep.CC.
report() {
    local prog=$BIN/symsites_$1 with without
    rm -f "$work/rep.$1.txt" "$work/rep0.$1.txt" # the profiler appends to MEMTRACE_OUTPUT
    with=$("$BIN/measure" -t 300 -e LD_PRELOAD="$profiler" -e MEMTRACE_INTERVAL_MS=0 \
        -e MEMTRACE_EXIT_TOP=2000 -e MEMTRACE_OUTPUT="$work/rep.$1.txt" -- "$prog" report)
    without=$("$BIN/measure" -t 300 -e LD_PRELOAD="$profiler" -e MEMTRACE_INTERVAL_MS=0 \
        -e MEMTRACE_EXIT_TOP=0 -e MEMTRACE_OUTPUT="$work/rep0.$1.txt" -- "$prog" report)
    if [ "$(grep -c '^memtrace: \[' "$work/rep.$1.txt")" = 2000 ]; then
        awk -v a="${with#*cpu=}" -v b="${without#*cpu=}" 'BEGIN { printf "%.4f\n", a - b }' >>"$work/rep.$1"
    else
        echo "  report $1 round $2: not 2000 sites" >&2
    fi
}
# compile W ROUND: the exit report's CPU seconds of the compile W (g++ or
# clang++), with its sites and frames, as "SECONDS SITES FRAMES" into
# compile.W.
compile() {
    local out=$work/compile.$1.txt cpu=$work/exit_cpu.$1.$2 run
    rm -f "$out" "$cpu"
    # shellcheck disable=SC2086 # CMD's words
    run=$("$BIN/measure" -t 600 -e LD_PRELOAD="$profiler $work/exit_cpu.so" \
        -e EXIT_CPU_LIB="/${profiler##*/}" -e EXIT_CPU_OUT="$cpu" -e MEMTRACE_INTERVAL_MS=0 \
        -e MEMTRACE_OUTPUT="$out" -- ${CMD[$1]})
    local sites frames
    sites=$(grep -c '^memtrace: \[' "$out" 2>/dev/null)
    frames=$(grep -c '^  #' "$out" 2>/dev/null)
    if [ "${run##*status=}" = ok ] && [ -s "$cpu" ] && [ "${sites:-0}" -gt 0 ]; then
        echo "$(awk '{ t += $1 } END { printf "%.4f", t }' "$cpu") $sites $frames" >>"$work/compile.$1"
    else
        echo "  compile $1 round $2: $run, ${sites:-0} sites" >&2
    fi
}
# core CC: the core of the program with its blocks (once a compiler).
core() {
    timeout 600 gdb -q -batch -nx "$BIN/symsites_$1" -ex "set env LD_PRELOAD=$tracer" \
        -ex "break checkpoint" -ex "run core $blocks" -ex "gcore $work/$1.core" -ex kill \
        >"$work/gcore.$1.log" 2>&1
}
# The CPU seconds of gdb and its children, from gdb's Python.
cat >"$work/cpu.py" <<'PY'
import os, time
def cpu_tree():
    t, tick = time.process_time(), os.sysconf("SC_CLK_TCK")
    for tid in os.listdir("/proc/self/task"):
        try:
            kids = open("/proc/self/task/%s/children" % tid).read().split()
        except OSError:
            kids = []
        for k in kids:
            try:
                f = open("/proc/%s/stat" % k).read().rsplit(")", 1)[1].split()
                t += (int(f[11]) + int(f[12])) / tick
            except OSError:
                pass
    return t
PY
# first CC ROUND: the first `memtrace g_last`'s CPU seconds on CC's core into first.CC.
first() {
    local log=$work/first.$1.$2
    timeout 600 gdb -q -batch -nx "$BIN/symsites_$1" "$work/$1.core" -ex "source $helper" \
        -ex "source $work/cpu.py" -ex "python c0 = cpu_tree()" -ex "memtrace g_last" \
        -ex "python print('first_cpu=%.4f' % (cpu_tree() - c0))" >"$log" 2>&1
    if grep -q '^  #0 inner at .*symsites.c:' "$log"; then
        sed -n 's/^first_cpu=//p' "$log" >>"$work/first.$1"
    else
        echo "  first $1 round $2: no answer ($(tail -1 "$log"))" >&2
    fi
}

for cc in gcc clang; do
    [ -x "$BIN/symsites_$cc" ] || { echo "bench/clang.sh: $BIN/symsites_$cc not built" >&2; exit 1; }
    core "$cc"
done
for ((r = 1; r <= rounds; r++)); do
    echo "clang round $r/$rounds" >&2
    if ((r % 2)); then order="gcc clang"; else order="clang gcc"; fi
    for cc in $order; do report "$cc" "$r"; first "$cc" "$r"; done
    if ((r % 2)); then order="g++ clang++"; else order="clang++ g++"; fi
    for w in $order; do compile "$w" "$r"; done
done

rg=$(median <"$work/rep.gcc" 2>/dev/null) rc=$(median <"$work/rep.clang" 2>/dev/null)
fg=$(median <"$work/first.gcc" 2>/dev/null) fc=$(median <"$work/first.clang" 2>/dev/null)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b != "-") printf "%.2f", b / a; else print "-" }'; }
echo
echo "## The symbolizer, gcc vs clang (bench/symsites.c, -O2 -g; $rounds rounds, medians)"
echo
echo "| measure (CPU) | gcc s | clang s | clang / gcc |"
echo "|---|---|---|---|"
echo "| profiler's exit report, 2000 sites | $rg | $rc | $(ratio "$rg" "$rc") |"
echo "| first \`memtrace EXPR\` on a core of $blocks blocks | $fg | $fc | $(ratio "$fg" "$fc") |"
# per W FIELD: the median of the exit report's seconds per site (FIELD 2)
# or per frame (3) over compile.W's rounds, in ms.
per() { awk -v f="$2" '$f > 0 { printf "%.5f\n", 1000 * $1 / $f }' "$work/compile.$1" 2>/dev/null | median; }
col() { awk -v f="$2" '{ print $f }' "$work/compile.$1" 2>/dev/null | median; }
sg=$(per g++ 2) sc=$(per clang++ 2) pg=$(per g++ 3) pc=$(per clang++ 3)
echo
echo "## The profiler's exit report of a compile of bench/templates.cpp: clang++ vs g++ ($rounds rounds, medians)"
echo
echo "| compiler | exit report CPU s | sites | frames | ms a site | ms a frame |"
echo "|---|---|---|---|---|---|"
echo "| g++ (cc1plus) | $(col g++ 1) | $(col g++ 2) | $(col g++ 3) | $sg | $pg |"
echo "| clang++ (libLLVM) | $(col clang++ 1) | $(col clang++ 2) | $(col clang++ 3) | $sc | $pc |"
echo "| clang / gcc | | | | $(ratio "$sg" "$sc") | $(ratio "$pg" "$pc") |"
echo
for m in "exit report:$(ratio "$rg" "$rc")" "first memtrace EXPR on a core:$(ratio "$fg" "$fc")" \
    "exit report of a compile, per site:$(ratio "$sg" "$sc")"; do
    v=${m##*:}
    if [ "$v" != - ] && awk -v v="$v" 'BEGIN { exit !(v <= 1.10) }'; then
        echo "PASS: ${m%:*}: clang <= 1.10x gcc -- $v"
    else
        echo "FAIL: ${m%:*}: clang <= 1.10x gcc -- $v"
    fi
done
