#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/run.sh: the `make bench` harness. Runs every workload under every
# variant (native, memtrace tracer, memtrace profiler, heaptrack), round after
# round, and prints one markdown table of MEDIAN per-round ratios to native.
#
#   bench/run.sh TRACER_LIB PROFILER_LIB BENCH_DIR [OUTPUT.md]
#
# BENCH_ROUNDS (default 5) sets the rounds, BENCH_TIMEOUT (default 60) the
# seconds one run may take (the slowest run takes about 8 s here).
#
# Each round runs the variants of a workload one right after the other,
# starting with a different variant each round, so the noise of this shared
# machine hits every variant alike; only ratios measured within one round are
# compared. A run that crashes, fails or times out is reported in its cell and
# the bench goes on; a variant that timed out on a workload is not run on it
# again. Progress goes to stderr; the report goes to stdout (and OUTPUT.md).
set -u

if [ $# -lt 3 ]; then
    echo "usage: $0 TRACER_LIB PROFILER_LIB BENCH_DIR [OUTPUT.md]" >&2
    exit 2
fi
BIN=$(realpath "$3")
SRC=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${BENCH_ROUNDS:-5}
TIMEOUT=${BENCH_TIMEOUT:-60}

WORK=$(mktemp -d /tmp/memtrace-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

# Benchmark private copies of the libraries: build/ may be relinked while we
# run (a concurrent `make`), and a library caught half-written is silently
# ignored by ld.so, which would measure native under the tracer's name.
snapshot() { # snapshot LIB NAME: copy LIB to $WORK/NAME once it preloads
    local try
    for try in 1 2 3 4 5; do
        cp "$1" "$WORK/$2" 2>/dev/null &&
            LD_PRELOAD="$WORK/$2" "$BIN/lookup" probe 2>&1 | grep -q '^lookup: print_trace found' &&
            return 0
        sleep 2
    done
    echo "bench: $1 cannot be preloaded (or has no print_trace)" >&2
    exit 1
}
snapshot "$1" libmemtrace.so
snapshot "$2" libmemtrace-profiler.so
TRACER=$WORK/libmemtrace.so
PROFILER=$WORK/libmemtrace-profiler.so
# `memtrace leaks` on a core file: the gdb helper (its stub and package) and
# memtrace-symbolize, from next to the tracer library (build/), copied for
# the same reason.
for f in memtrace.py memtrace_gdb memtrace-symbolize; do
    cp -r "$(dirname "$(realpath "$1")")/$f" "$WORK/$f" ||
        { echo "bench: no $f next to $1 (make all builds it)" >&2; exit 1; }
done
LIBS_ID="tracer $(sha256sum < "$TRACER" | cut -c1-12), profiler $(sha256sum < "$PROFILER" | cut -c1-12)"

if [ $# -ge 4 ]; then
    exec > >(tee "$4")
fi

# ------------------------------------------------------------ workloads
. "$SRC/workloads.sh"

VARIANTS=(native tracer profiler)
if command -v heaptrack >/dev/null; then
    VARIANTS+=(heaptrack)
    HEAPTRACK_NOTE=""
else
    HEAPTRACK_NOTE="heaptrack is not installed: its column is left out."
fi

# run_one NAME VARIANT ROUND COMMAND...: measure one run, keep its line.
run_one() {
    local name=$1 variant=$2 round=$3
    shift 3
    local env=() prefix=()
    local e
    for e in ${ENV[$name]:-}; do env+=(-e "$e"); done # VAR=VALUE words
    case $variant in
    tracer) env+=(-e "LD_PRELOAD=$TRACER") ;;
    profiler) env+=(-e "LD_PRELOAD=$PROFILER") ;;
    heaptrack) prefix=(heaptrack -o "$WORK/heaptrack") ;;
    esac
    local log="$WORK/log.$name.$variant.$round"
    if [ -e "$WORK/timedout.$name.$variant" ]; then
        echo "status=skipped_after_timeout" > "$WORK/res.$name.$variant.$round"
        return
    fi
    "$BIN/measure" -t "$TIMEOUT" -o "$log" "${env[@]}" -- "${prefix[@]}" "$@" \
        > "$WORK/res.$name.$variant.$round"
    rm -f "$WORK"/heaptrack*
    # A library that ld.so could not preload would make this a native run.
    if grep -q 'cannot be preloaded' "$log"; then
        sed -i 's/status=[^ ]*/status=not_preloaded/' "$WORK/res.$name.$variant.$round"
    fi
    printf '  %-8s %-9s %s\n' "$name" "$variant" "$(cat "$WORK/res.$name.$variant.$round")" >&2
    if ! grep -q 'status=ok' "$WORK/res.$name.$variant.$round"; then
        tail -n 5 "$log" | sed 's/^/    | /' >&2
        cp "$log" "$WORK/failed.$name.$variant.$round"
    fi
    if grep -q 'status=timeout' "$WORK/res.$name.$variant.$round"; then
        touch "$WORK/timedout.$name.$variant"
    fi
}

# leaks_core ROUND: `lookup leaks` (1,000,000 live blocks, half of them lost)
# stopped under gdb and written to a core file with gcore, then `memtrace
# leaks` on that core in a fresh gdb: the command's own time (gdb's start and
# the core's loading apart) and the whole gdb run's. The verdict must be the
# known one, or the round counts as failed.
leaks_core() {
    local r=$1 t0 t1 s
    local core=$WORK/leaks.core log=$WORK/log.leaks.tracer.$r
    rm -f "$core"
    timeout "$TIMEOUT" gdb -q -batch -nx "$BIN/lookup" -ex "set env LD_PRELOAD=$TRACER" \
        -ex "break checkpoint" -ex "run leaks >/dev/null" -ex "gcore $core" -ex "kill" \
        >"$log" 2>&1
    t0=$(date +%s.%N)
    timeout "$TIMEOUT" gdb -q -batch -nx "$BIN/lookup" "$core" -ex "source $WORK/memtrace.py" \
        -ex "python import time; t0 = time.monotonic()" -ex "memtrace leaks" \
        -ex "python print('leaks_seconds=%.3f' % (time.monotonic() - t0))" >>"$log" 2>&1
    t1=$(date +%s.%N)
    s=$(field "$log" leaks_seconds)
    if [ -n "$s" ] && grep -q '^memtrace: leaks: 16000000 bytes definitely lost in 500000 blocks, 0 bytes indirectly lost in 0 blocks, ' "$log"; then
        echo "status=ok leaks_seconds=$s gdb_seconds=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') scan_seconds=$(sed -n 's/.*scanned in \([0-9.]*\) s$/\1/p' "$log" | head -1)" \
            >"$WORK/res.leaks.tracer.$r"
    else
        echo "status=failed" >"$WORK/res.leaks.tracer.$r"
        cp "$log" "$WORK/failed.leaks.tracer.$r"
    fi
    printf '  %-8s %-9s %s\n' leaks tracer "$(cat "$WORK/res.leaks.tracer.$r")" >&2
    rm -f "$core"
}

# sampled_round ROUND: every workload under the tracer with
# MEMTRACE_SAMPLE=524288 (churn and churn2 with their tag scopes,
# CHURN_TAGS=1), against native of the same round; and the estimates of
# churn and g++ under the profiler, seed ROUND, against one full profiler
# run of each (round 1; exact, so one is enough), sites ranked by bytes
# allocated.
sampled_round() {
    local r=$1 name w
    for name in "${WORKLOADS[@]}"; do
        ENV[${name}_sampled]="MEMTRACE_SAMPLE=524288 ${ENV[$name]:-}"
        case $name in churn | churn2) ENV[${name}_sampled]+=" CHURN_TAGS=1" ;; esac
        read -a cmd <<< "${CMD[$name]}"
        run_one "${name}_sampled" tracer "$r" "${cmd[@]}"
    done
    for w in churn g++; do
        read -a cmd <<< "${CMD[$w]}"
        if [ "$r" = 1 ]; then
            ENV[${w}_exact]="MEMTRACE_INTERVAL_MS=0 MEMTRACE_TOP_BY=allocs MEMTRACE_EXIT_TOP=10 ${ENV[$w]:-}"
            run_one "${w}_exact" profiler "$r" "${cmd[@]}"
        fi
        ENV[${w}_estimate]="MEMTRACE_SAMPLE=524288 MEMTRACE_SAMPLE_SEED=$r MEMTRACE_INTERVAL_MS=0 MEMTRACE_TOP_BY=allocs MEMTRACE_EXIT_TOP=1000000 ${ENV[$w]:-}"
        run_one "${w}_estimate" profiler "$r" "${cmd[@]}"
        # The same at a finer rate: the estimator converging as 1/sqrt(K).
        ENV[${w}_fine]="MEMTRACE_SAMPLE=16384 MEMTRACE_SAMPLE_SEED=$r MEMTRACE_INTERVAL_MS=0 MEMTRACE_TOP_BY=allocs MEMTRACE_EXIT_TOP=1000000 ${ENV[$w]:-}"
        run_one "${w}_fine" profiler "$r" "${cmd[@]}"
    done
}

# field FILE KEY: the value of KEY=value in FILE.
field() {
    sed -n "s/.*\\b$2=\\([^ ]*\\).*/\\1/p" "$1" 2>/dev/null
}

# median: of the numbers on stdin, one a line; "-" when there are none.
median() {
    sort -g | awk '{ a[NR] = $1 }
        END { if (NR == 0) print "-";
              else if (NR % 2) print a[(NR + 1) / 2];
              else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# ratios NAME VARIANT KEY [BASE_NAME BASE_VARIANT]: one ratio a line, one per
# round where both runs succeeded, of KEY of NAME/VARIANT to the base
# (default: the same workload, native).
ratios() {
    local name=$1 variant=$2 key=$3 bname=${4:-$1} bvariant=${5:-native} r a b
    for ((r = 1; r <= ROUNDS; r++)); do
        local f="$WORK/res.$name.$variant.$r" g="$WORK/res.$bname.$bvariant.$r"
        grep -q 'status=ok' "$f" 2>/dev/null && grep -q 'status=ok' "$g" 2>/dev/null || continue
        a=$(field "$f" "$key")
        b=$(field "$g" "$key")
        awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.6f\n", a / b }'
    done
}

fmt() { # fmt NUMBER: two decimals, or "-" as is
    case $1 in -) echo - ;; *) printf '%.2f' "$1" ;; esac
}

failures() { # failures NAME VARIANT: "FAILED 2/5 (signal_11)" or nothing
    local n=0 what="" r
    for ((r = 1; r <= ROUNDS; r++)); do
        local f="$WORK/res.$1.$2.$r"
        if ! grep -q 'status=ok' "$f" 2>/dev/null; then
            n=$((n + 1))
            [ -z "$what" ] && what=$(field "$f" status) # the first reason
        fi
    done
    [ $n -gt 0 ] && echo "FAILED $n/$ROUNDS (${what:-no result})"
}

# ------------------------------------------------------------ the rounds
echo "memtrace bench: $ROUNDS rounds, variants: ${VARIANTS[*]}" >&2
declare -A sampled_cpu
for ((round = 1; round <= ROUNDS; round++)); do
    echo "round $round/$ROUNDS" >&2
    nv=${#VARIANTS[@]}
    for name in "${WORKLOADS[@]}"; do
        read -a cmd <<< "${CMD[$name]}" # no -r: "\ " keeps a space in an argument
        for ((i = 0; i < nv; i++)); do
            variant=${VARIANTS[$(((i + round - 1) % nv))]}
            run_one "$name" "$variant" "$round" "${cmd[@]}"
        done
    done
    # Metadata per block: the same 1,000,000 live 32-byte blocks, with and
    # without memtrace; and print_trace timed inside the tracer.
    for variant in native tracer profiler; do
        run_one hold "$variant" "$round" "$BIN/lookup" hold
    done
    run_one lookup tracer "$round" "$BIN/lookup"
    # Contention on the hot path: churn2's work under the tracer, counting
    # (not timing, so a busy machine does not change it).
    ENV[contention]="CHURN_CONTENDED=1"
    read -a cmd <<< "${CMD[churn2]}"
    run_one contention tracer "$round" "${cmd[@]}"
    # The heap checks' cost and the guard pages' (at the rate
    # meant to be left on), each against a run without them made just
    # before or after it (the order swapped every round): the tracer's
    # runs above are minutes away, and this machine's load drifts by more
    # than the few percent measured (the same python3 run took 4.8 s and
    # 6.7 s in two rounds). _check: the defaults; _nocheck: redzones and
    # the quarantine off; _q: the quarantine only; churn_rz: the redzones only;
    # churn_guard: MEMTRACE_GUARD_SAMPLE=1000, against churn_check.
    ENV[churn_rz]="MEMTRACE_QUARANTINE=0"
    ENV[churn_guard]="MEMTRACE_GUARD_SAMPLE=1000"
    for w in churn python3 sqlite3; do
        ENV[${w}_check]="${ENV[$w]:-}"
        ENV[${w}_nocheck]="${ENV[$w]:-} MEMTRACE_REDZONE=0 MEMTRACE_QUARANTINE=0"
        # The quarantine-only floor: the delay's own cost, which the
        # checks' target (at most 1.05x) is measured over.
        ENV[${w}_q]="${ENV[$w]:-} MEMTRACE_REDZONE=0"
        read -a cmd <<< "${CMD[$w]}"
        arms=(check nocheck q)
        [ "$w" = churn ] && arms=(check guard nocheck rz q)
        ((round % 2)) || arms=($(printf '%s\n' "${arms[@]}" | tac))
        for arm in "${arms[@]}"; do
            run_one ${w}_$arm tracer "$round" "${cmd[@]}"
        done
    done
    sampled_round "$round"
    leaks_core "$round"
    # The pprof profiles written at exit for the g++ workload (tens of
    # thousands of sites): the profiler run again with MEMTRACE_PPROF. A
    # profile's file is created before its stacks are symbolized and last
    # written when it is complete: creation to last write is what writing
    # it took (symbolizing, encoding, compressing).
    rm -f "$WORK"/gxx.pb.gz*
    ENV[gxx_pprof]="MEMTRACE_PPROF=$WORK/gxx.pb.gz"
    read -a cmd <<< "${CMD[g++]}"
    run_one gxx_pprof profiler "$round" "${cmd[@]}"
    for f in gxx.pb.gz gxx.pb.gz.peak; do
        [ -s "$WORK/$f" ] && stat -c '%.9W %.9Y %s' "$WORK/$f" |
            awk '$1 > 0 { printf "seconds=%.6f bytes=%d\n", $2 - $1, $3 }' > "$WORK/pprof.$f.$round"
    done
    if [ ! -e "$WORK/pprof.samples" ] && [ -s "$WORK/gxx.pb.gz" ] && command -v go >/dev/null; then
        HOME=$WORK PPROF_TMPDIR=$WORK go tool pprof -raw "$WORK/gxx.pb.gz" 2>/dev/null |
            awk '/^Samples:/ { on = 1; getline; next } /^Locations/ { on = 0 }
                 on && /:/ { n++ } END { print n + 0 }' > "$WORK/pprof.samples"
    fi
done

# ------------------------------------------------------------ the report
echo "# memtrace bench results"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "- machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), kernel $(uname -r)"
dirty=""
git -C "$SRC/.." diff --quiet HEAD -- src include 2>/dev/null || dirty=" (plus uncommitted changes in src/ or include/)"
echo "- memtrace: $(git -C "$SRC" log -1 --format='%h %s' 2>/dev/null || echo unknown)$dirty"
echo "- libraries measured (sha256): $LIBS_ID"
echo "- heaptrack: $(heaptrack --version 2>/dev/null || echo absent); sqlite3 $(sqlite3 --version | cut -d' ' -f1); $($PYTHON --version 2>&1); $(g++ --version | head -n 1)"
echo "- rounds: $ROUNDS; every cell is the MEDIAN over rounds of the per-round ratio to native"
echo
echo "Each cell: CPU (user+sys) ratio / wall ratio / peak-RSS ratio, to native of the same round."
echo "Native shows its median absolute figures for scale."
echo
header="| workload | native (cpu s / wall s / RSS MB) |"
rule="|---|---|"
for v in "${VARIANTS[@]:1}"; do
    case $v in
    tracer) header+=" memtrace tracer |" ;;
    profiler) header+=" memtrace profiler |" ;;
    heaptrack) header+=" heaptrack |" ;;
    esac
    rule+="---|"
done
echo "$header"
echo "$rule"
for name in "${WORKLOADS[@]}"; do
    abs() { # median of KEY of native runs
        for ((r = 1; r <= ROUNDS; r++)); do
            grep -q 'status=ok' "$WORK/res.$name.native.$r" 2>/dev/null && field "$WORK/res.$name.native.$r" "$1"
        done | median
    }
    rss=$(abs rss_kb)
    [ "$rss" != - ] && rss=$(awk -v k="$rss" 'BEGIN { printf "%.0f", k / 1024 }')
    row="| $name | $(fmt "$(abs cpu)") / $(fmt "$(abs wall)") / $rss $(failures "$name" native)|"
    for v in "${VARIANTS[@]:1}"; do
        c=$(ratios "$name" "$v" cpu | median)
        w=$(ratios "$name" "$v" wall | median)
        m=$(ratios "$name" "$v" rss_kb | median)
        row+=" $(fmt "$c") / $(fmt "$w") / $(fmt "$m") $(failures "$name" "$v")|"
    done
    echo "$row"
done
echo
echo "Workloads: churn = 3,000,000 malloc/free pairs over 100,000 live blocks of 16-528 bytes,"
echo "call depth 1-8, 1 thread; churn2 = the same total work on 2 threads (50,000 live each);"
echo "sqlite3 = 120,000-row in-memory table built by a recursive CTE and queried (twice);"
echo "g++ = cc1plus -O1 on bench/templates.cpp (the compiler proper; heaptrack does not follow"
echo "the g++ driver's children); python3 = bench/pyload.py with PYTHONMALLOC=malloc."
echo "CPU and RSS cover the whole process tree (heaptrack's interpreter and compressor"
echo "included); peak RSS is the largest single process of the tree, not a sum."
[ -n "$HEAPTRACK_NOTE" ] && echo "$HEAPTRACK_NOTE"
echo

# Threads: same total work, 1 thread (churn) against 2 threads (churn2).
speedup_tracer=$(ratios churn tracer wall churn2 tracer | median)
speedup_native=$(ratios churn native wall churn2 native | median)
per_round() { ratios "$@" | awk '{ printf "%s%.2f", (NR > 1 ? " " : ""), $1 }'; }
echo "churn 2 threads vs 1 thread, same total work (wall speedup, median): tracer $(fmt "$speedup_tracer")x, native $(fmt "$speedup_native")x"
echo "  (per round: tracer $(per_round churn tracer wall churn2 tracer); native $(per_round churn native wall churn2 native);"
echo "  a round where native is well under 2x had the second core taken by another job)"

# Contention: memtrace's count of contended lock waits and failed
# compare-and-swaps on churn2's run, per million malloc/free pairs.
contended=$(for ((r = 1; r <= ROUNDS; r++)); do
    grep -q 'status=ok' "$WORK/res.contention.tracer.$r" 2>/dev/null || continue
    sed -n 's/^churn: contended \([0-9][0-9]*\)$/\1/p' "$WORK/log.contention.tracer.$r" |
        awk -v p="$(echo "${CMD[churn2]}" | awk '{ print $3 }')" '{ printf "%.1f\n", $1 * 1e6 / p }'
done | median)
echo "contention, churn on 2 threads (tracer): $(fmt "$contended") contended lock waits or failed compare-and-swaps per million malloc/free pairs (median) $(failures contention tracer)"
echo
# Heap checks: the tracer's churn with redzones and the quarantine at their
# defaults against both off, in the same round.
echo "churn under the tracer, heap checks (redzones + quarantine) at their defaults vs off, back to back (median ratio): CPU $(fmt "$(ratios churn_check tracer cpu churn_nocheck tracer | median)"), peak RSS $(fmt "$(ratios churn_check tracer rss_kb churn_nocheck tracer | median)") $(failures churn_check tracer)$(failures churn_nocheck tracer)"
echo "  split, against both off: redzones only CPU $(fmt "$(ratios churn_rz tracer cpu churn_nocheck tracer | median)"), quarantine only CPU $(fmt "$(ratios churn_q tracer cpu churn_nocheck tracer | median)") $(failures churn_rz tracer)$(failures churn_q tracer)"
for w in python3 sqlite3; do
    echo "$w under the tracer, heap checks at their defaults vs off, back to back: CPU $(fmt "$(ratios ${w}_check tracer cpu ${w}_nocheck tracer | median)"), peak RSS $(fmt "$(ratios ${w}_check tracer rss_kb ${w}_nocheck tracer | median)") $(failures ${w}_check tracer)$(failures ${w}_nocheck tracer)"
done
# The target: the checks over the quarantine-only floor (redzones off, the
# delay kept), per workload; bench/instr.sh counts churn's instructions
# and data misses for the same pair, where timing noise is larger.
declare -A floor_cpu
floor_line=""
for w in churn python3 sqlite3; do
    floor_cpu[$w]=$(ratios ${w}_check tracer cpu ${w}_q tracer | median)
    floor_line+=" $w $(fmt "${floor_cpu[$w]}")x $(failures ${w}_q tracer)"
done
echo "heap checks at their defaults over the quarantine-only floor (MEMTRACE_REDZONE=0), CPU, back to back (median; target 1.05):$floor_line"
guard_cpu=$(ratios churn_guard tracer cpu churn_check tracer | median)
echo "guard pages, MEMTRACE_GUARD_SAMPLE=1000, on churn: CPU $(fmt "$guard_cpu")x the tracer's without them, back to back (median of per-round ratios; target 1.02) $(failures churn_guard tracer)"

# Metadata: (RSS with memtrace - RSS native) / 1,000,000 live blocks.
per_block() {
    for ((r = 1; r <= ROUNDS; r++)); do
        local f="$WORK/res.hold.$1.$r" g="$WORK/res.hold.native.$r"
        grep -q 'status=ok' "$f" 2>/dev/null && grep -q 'status=ok' "$g" 2>/dev/null || continue
        awk -v a="$(field "$f" rss_kb)" -v b="$(field "$g" rss_kb)" \
            'BEGIN { printf "%.2f\n", (a - b) * 1024 / 1000000 }'
    done | median
}
meta_tracer=$(per_block tracer)
meta_profiler=$(per_block profiler)
# memtrace's own figure: metadata_bytes / live_blocks from memtrace_get_stats.
mapped_per_block() {
    for ((r = 1; r <= ROUNDS; r++)); do
        local log="$WORK/log.hold.$1.$r"
        awk -v m="$(field "$log" metadata_bytes)" -v n="$(field "$log" live_blocks)" \
            'BEGIN { if (n > 0) printf "%.2f\n", m / n }'
    done | median
}
echo "metadata per live block: tracer $(fmt "$meta_tracer") bytes, profiler $(fmt "$meta_profiler") bytes $(failures hold tracer)"
echo "  (measured as (peak RSS with memtrace - peak RSS native) / 1,000,000 for a program holding"
echo "  1,000,000 live 32-byte blocks: it includes memtrace's fixed costs, libdw/libunwind pages"
echo "  and the stack store, not only the live table)"
echo "  memtrace's own count of the memory it mapped for its tables (memtrace_get_stats), per"
echo "  live block: tracer $(fmt "$(mapped_per_block tracer)") bytes, profiler $(fmt "$(mapped_per_block profiler)") bytes"

# print_trace timings, from lookup's own output.
# ok_stat NAME FILE KEY: the median of KEY in FILE (res or log) of the
# tracer's NAME runs, over the rounds where NAME ran to the end.
ok_stat() {
    for ((r = 1; r <= ROUNDS; r++)); do
        grep -q 'status=ok' "$WORK/res.$1.tracer.$r" 2>/dev/null || continue
        field "$WORK/$2.$1.tracer.$r" "$3"
    done | median
}
lookup_stat() { ok_stat lookup log "$1"; }
first_ms=$(lookup_stat first_ms)
later_ms=$(lookup_stat later_median_ms)
modules=$(lookup_stat modules)
echo "print_trace with 1,000,000 live blocks, $modules modules loaded (tracer): first call $(fmt "$first_ms") ms, later calls $(fmt "$later_ms") ms (median of 20, median over rounds) $(failures lookup tracer)"

# memtrace leaks on a core file, from leaks_core's results.
leaks_stat() { ok_stat leaks res "$1"; }
leaks_s=$(leaks_stat leaks_seconds)
echo "memtrace leaks on a core file with 1,000,000 live blocks (500,000 lost): $(fmt "$leaks_s") s (the scan alone $(fmt "$(leaks_stat scan_seconds)") s; the whole gdb run, start and core loading included, $(fmt "$(leaks_stat gdb_seconds)") s; median over rounds) $(failures leaks tracer)"

# memtrace view: CPU seconds (user + system, the export it runs included),
# median over rounds. With `memtrace export` (the record branch's), of a
# recording of the g++ workload (over 6 million events, 80,000 sites: its
# JSON is about 500 MB); without, of a timeline of a 1,200,000-event run over
# 20,000 sites of 6 to 30 frames made by tests/e2e/timeline_gen.py. The
# launcher, view/ and memtrace-export are copied from next to the tracer.
view_s=- view_what="nothing: the input could not be made"
LIBDIR_COPY=$(dirname "$(realpath "$1")")
cp -r "$LIBDIR_COPY/memtrace" "$LIBDIR_COPY/view" "$WORK/" &&
    { [ ! -f "$LIBDIR_COPY/memtrace-export" ] || cp "$LIBDIR_COPY/memtrace-export" "$WORK/"; }
view_in=
if "$WORK/memtrace" --help 2>/dev/null | grep -qE '^ +memtrace export '; then
    # shellcheck disable=SC2086 # CMD holds words
    MEMTRACE_RECORD=$WORK/gxx.rec LD_PRELOAD=$TRACER ${CMD[g++]} >/dev/null 2>"$WORK/gxx.rec.err" &&
        view_in=$WORK/gxx.rec &&
        view_what="a recording of the g++ workload ($(sed -n 's/.*(\([0-9]*\) events).*/\1/p' "$WORK/gxx.rec.err") events)"
elif python3 "$SRC/../tests/e2e/timeline_gen.py" big 1200000 20000 "$WORK/timeline.json"; then
    view_in=$WORK/timeline.json
    view_what="a 1,200,000-event timeline ($(($(stat -c %s "$view_in") / 1048576)) MiB of JSON, 20,000 sites)"
fi
if [ -n "$view_in" ]; then
    view_s=$(for ((r = 1; r <= ROUNDS; r++)); do
        TIMEFORMAT='%U %S'
        { time "$WORK/memtrace" view "$view_in" -o "$WORK/view.html" 2>/dev/null; } \
            2>"$WORK/view.time" && awk '{ print $1 + $2 }' "$WORK/view.time"
    done | median)
fi
echo "memtrace view of $view_what: $(fmt "$view_s") s CPU, the page $(($(stat -c %s "$WORK/view.html" 2>/dev/null || echo 0) / 1048576)) MiB (median over rounds)"
pprof_field() { # pprof_field FILE KEY: the median over rounds
    for ((r = 1; r <= ROUNDS; r++)); do field "$WORK/pprof.$1.$r" "$2"; done | median
}
pprof_cpu=$(for ((r = 1; r <= ROUNDS; r++)); do
    a=$(field "$WORK/res.gxx_pprof.profiler.$r" cpu) b=$(field "$WORK/res.g++.profiler.$r" cpu)
    [ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" 'BEGIN { printf "%.6f\n", a - b }'
done | median)
echo "pprof profile at exit, g++ workload (profiler, MEMTRACE_PPROF): $(cat "$WORK/pprof.samples" 2>/dev/null || echo -) samples (call sites),"
echo "  $(awk -v b="$(pprof_field gxx.pb.gz bytes)" 'BEGIN { if (b == "-") print "-"; else printf "%.0f", b / 1024 }') KiB gzipped, written in $(fmt "$(pprof_field gxx.pb.gz seconds)") s;"
echo "  the peak profile: $(awk -v b="$(pprof_field gxx.pb.gz.peak bytes)" 'BEGIN { if (b == "-") print "-"; else printf "%.0f", b / 1024 }') KiB, $(fmt "$(pprof_field gxx.pb.gz.peak seconds)") s"
echo "  (each: from the file's creation to its last write, median over rounds); the run's CPU"
echo "  over the profiler's without MEMTRACE_PPROF in the same round: $(case $pprof_cpu in -) echo - ;; *) printf '%+.2f' "$pprof_cpu" ;; esac) s (median; noisy) $(failures gxx_pprof profiler)"
echo

# Sampling: CPU with MEMTRACE_SAMPLE=524288 against native, the
# threads' scaling under it, the estimates' errors over the rounds' seeds.
echo "sampled tracing, MEMTRACE_SAMPLE=524288 (churn and churn2 with CHURN_TAGS=1), CPU vs native (median of per-round ratios; target 1.03):"
sampled_line=""
for name in "${WORKLOADS[@]}"; do
    sampled_cpu[$name]=$(ratios "${name}_sampled" tracer cpu "$name" native | median)
    sampled_line+=" $name $(fmt "${sampled_cpu[$name]}")x $(failures "${name}_sampled" tracer)"
done
echo " $sampled_line"
speedup_sampled=$(ratios churn_sampled tracer wall churn2_sampled tracer | median)
echo "churn 2 threads vs 1 thread under sampling (wall speedup, median): $(fmt "$speedup_sampled")x, native $(fmt "$speedup_native")x"
accuracy() { # accuracy WORKLOAD RUN RATE: sample_accuracy.py's line over the rounds' seeds
    local est=() r
    for ((r = 1; r <= ROUNDS; r++)); do
        grep -q 'status=ok' "$WORK/res.$1_$2.profiler.$r" 2>/dev/null && est+=("$WORK/log.$1_$2.profiler.$r")
    done
    if grep -q 'status=ok' "$WORK/res.$1_exact.profiler.1" 2>/dev/null && [ ${#est[@]} -gt 0 ]; then
        python3 "$SRC/sample_accuracy.py" --rate "$3" "$WORK/log.$1_exact.profiler.1" "${est[@]}"
    else
        echo "sites_err=- expected_err=- live_err=- live_kind=- sites=0 runs=0"
    fi
}
declare -A acc_sites acc_live
for w in churn g++; do
    a=$(accuracy "$w" estimate 524288)
    acc_sites[$w]=$(field <(echo "$a") sites_err)
    acc_live[$w]=$(field <(echo "$a") live_err)
    echo "estimates on $w, MEMTRACE_SAMPLE=524288, worst over $(field <(echo "$a") runs) seeds: top $(field <(echo "$a") sites) sites' allocated bytes off by at most $(fmt "${acc_sites[$w]}") (relative; one standard deviation 1/sqrt(K) of the top's smallest: $(fmt "$(field <(echo "$a") expected_err)")), live total ($(field <(echo "$a") live_kind), counted exactly) by $(fmt "${acc_live[$w]}")"
    a=$(accuracy "$w" fine 16384)
    echo "estimates on $w, MEMTRACE_SAMPLE=16384, worst over $(field <(echo "$a") runs) seeds: top $(field <(echo "$a") sites) sites' allocated bytes off by at most $(fmt "$(field <(echo "$a") sites_err)") (relative; one standard deviation 1/sqrt(K) of the top's smallest: $(fmt "$(field <(echo "$a") expected_err)"))"
done
echo

# ------------------------------------------------------------ targets
# check LABEL CONDITION TEXT VALUE...: a PASS/FAIL line; CONDITION is an awk
# expression over the VALUEs as v1, v2, ...; any VALUE "-" gives NO DATA.
check() {
    local label=$1 cond=$2 text=$3 vars=() i=1 v
    shift 3
    for v in "$@"; do
        [ "$v" = - ] && { echo "NO DATA: $label -- a run failed"; return; }
        vars+=(-v "v$i=$v")
        i=$((i + 1))
    done
    if awk "${vars[@]}" "BEGIN { exit !($cond) }"; then v=PASS; else v=FAIL; fi
    echo "$v: $label -- $text"
}
echo "## Targets (memtrace tracer)"
echo
if [ -n "$HEAPTRACK_NOTE" ]; then
    echo "SKIP: added CPU at most 1/3 of heaptrack's -- heaptrack absent"
else
    for name in "${WORKLOADS[@]}"; do
        t=$(ratios "$name" tracer cpu | median)
        h=$(ratios "$name" heaptrack cpu | median)
        limit=$(awk -v h="$h" 'BEGIN { printf "%.2f", (h - 1) / 3 }')
        check "$name added CPU <= 1/3 of heaptrack's" "v1 - 1 <= (v2 - 1) / 3" \
            "tracer +$(fmt "$(awk -v t="$t" 'BEGIN { print t - 1 }')"), heaptrack +$(fmt "$(awk -v h="$h" 'BEGIN { print h - 1 }')") (limit +$limit)" "$t" "$h"
    done
fi
for w in churn python3; do
    rss=$(ratios $w tracer rss_kb | median)
    check "$w peak RSS <= 1.5x native" "v1 <= 1.5" "$(fmt "$rss")x" "$rss"
done
for w in churn python3 sqlite3; do
    check "$w heap checks' CPU <= 1.05x the quarantine-only floor" "v1 <= 1.05" \
        "$(fmt "${floor_cpu[$w]}")x" "${floor_cpu[$w]}"
done
# Both cores must be free for this to mean anything: native shows whether they were.
if [ "$speedup_native" != - ] && awk -v n="$speedup_native" 'BEGIN { exit !(n < 1.6) }'; then
    echo "UNRELIABLE: 2 threads >= 1.8x faster than 1 thread (churn2 vs churn) -- tracer $(fmt "$speedup_tracer")x, but native only $(fmt "$speedup_native")x: the second core was busy"
else
    check "2 threads >= 1.8x faster than 1 thread (churn2 vs churn)" "v1 >= 1.8" \
        "tracer $(fmt "$speedup_tracer")x (native $(fmt "$speedup_native")x)" "$speedup_tracer"
fi
check "contention at 2 threads < 1,000 per million pairs" "v1 < 1000" \
    "$(fmt "$contended") per million pairs" "$contended"
for name in "${WORKLOADS[@]}"; do
    p=$(ratios "$name" profiler cpu "$name" tracer | median)
    check "$name profiler CPU within 1.10x of tracer's" "v1 <= 1.10" "$(fmt "$p")x" "$p"
done
for name in "${WORKLOADS[@]}"; do
    check "$name CPU with MEMTRACE_SAMPLE=524288 <= 1.03x native" "v1 <= 1.03" "$(fmt "${sampled_cpu[$name]}")x" "${sampled_cpu[$name]}"
done
check "2 threads scale under sampling as native (churn2 vs churn, within 10%)" "v1 >= 0.9 * v2" \
    "sampled $(fmt "$speedup_sampled")x, native $(fmt "$speedup_native")x" "$speedup_sampled" "$speedup_native"
for w in churn g++; do
    check "$w top 10 sites' estimated allocated bytes within 10%" "v1 <= 0.10" "worst $(fmt "${acc_sites[$w]}")" "${acc_sites[$w]}"
    check "$w estimated live total within 5%" "v1 <= 0.05" "worst $(fmt "${acc_live[$w]}")" "${acc_live[$w]}"
done
check "print_trace first call < 200 ms" "v1 < 200" "$(fmt "$first_ms") ms" "$first_ms"
check "print_trace later calls < 5 ms" "v1 < 5" "$(fmt "$later_ms") ms" "$later_ms"
check "memtrace leaks on a 1,000,000-block core < 5 s" "v1 < 5" "$(fmt "$leaks_s") s" "$leaks_s"
check "memtrace view of a >1,000,000-event run < 30 s CPU" "v1 < 30" "$(fmt "$view_s") s" "$view_s"

if ls "$WORK"/failed.* >/dev/null 2>&1; then
    echo
    echo "## Failed runs (last lines of output)"
    for f in "$WORK"/failed.*; do
        echo
        echo "${f##*/failed.} ($(wc -c < "$f") bytes of output; the last lines):"
        echo '```'
        tail -n 8 "$f" | sed '$a\' # a run killed mid-line has no last newline
        echo '```'
    done
fi
