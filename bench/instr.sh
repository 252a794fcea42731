#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/instr.sh: the small-ratio targets counted, not timed, in `make
# bench`. The CPU targets of a few percent (sampling 1.03x native, heap
# checks 1.05x, guard pages 1.02x the tracer's) are smaller than this
# shared machine's noise on a timing (the same native run takes 0.7 s or
# 1.05 s); valgrind's counts do not depend on the load. Each pair of arms
# runs once (the counts are deterministic but for the sample draws' seed,
# fixed here):
#   - instructions (callgrind), MEMTRACE_SAMPLE=524288 against native: churn
#     with its tag scopes on 2 threads, and without them (the work off the main thread:
#     under valgrind the cached-CFI unwinder does not know the main
#     thread's stack and libunwind, much slower, would unwind the samples
#     there), sqlite3 (one .read), python3 (pyload.py 20000, a smaller run
#     of the same shape); g++ is left out (about 5 minutes an arm); and
#     churn under bench/floor.c, an interposer that does nothing but forward:
#     the least any preloaded library costs there;
#   - instructions and first-level data-cache misses (cachegrind's
#     simulation), churn on 2 threads under the tracer: heap checks at their
#     defaults against both off and against the quarantine-only floor
#     (MEMTRACE_REDZONE=0: the target, at most +5%), and
#     MEMTRACE_GUARD_SAMPLE=1000 against without. Misses are what the instruction count leaves out: the
#     quarantine's cost is mostly lines gone cold.
# Markdown on stdout.
#
#   bench/instr.sh TRACER_LIB BENCH_DIR
set -u
tracer=$(realpath "$1")
BIN=$(realpath "$2")
SRC=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/memtrace-bench-instr.XXXXXX)
trap 'rm -rf "$work"' EXIT
# A private copy: build/ may be relinked while this runs (run.sh's reason).
cp "$tracer" "$work/libmemtrace.so" || exit 1
tracer=$work/libmemtrace.so

. "$SRC/workloads.sh"

if ! command -v valgrind >/dev/null; then
    echo "instruction counts: SKIP -- valgrind absent (make deps installs it)"
    exit 0
fi

PAIRS=${BENCH_INSTR_PAIRS:-300000}
LIVE=100000
CHURN="$BIN/churn 2 $PAIRS $LIVE"
SQLITE="sqlite3 :memory: .read\\ $SRC/sqlite.sql"
PY="$PYTHON $SRC/pyload.py 20000"

. "$SRC/count.sh"

# pct A B: (A / B - 1) in percent, signed, two decimals.
pct() {
    case "$1 $2" in *-*) echo - ;; *) awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.2f", (a / b - 1) * 100 }' ;; esac
}

sampled=(MEMTRACE_SAMPLE=524288 MEMTRACE_SAMPLE_SEED=1)
line="instructions (callgrind, one run an arm), MEMTRACE_SAMPLE=524288 vs native:"
n=$(vg_count callgrind CHURN_TAGS=1 -- "$CHURN")
s=$(vg_count callgrind CHURN_TAGS=1 LD_PRELOAD="$tracer" "${sampled[@]}" -- "$CHURN")
f=$(vg_count callgrind CHURN_TAGS=1 LD_PRELOAD="$BIN/floor.so" -- "$CHURN")
churn_pct=$(pct "$s" "$n")
line+=" churn (2 threads, tag scopes) ${churn_pct}% (an empty interposer, bench/floor.c: $(pct "$f" "$n")%),"
# Without tag scopes, unsampled blocks are marked in the shadow, not padded.
n=$(vg_count callgrind -- "$CHURN")
s=$(vg_count callgrind LD_PRELOAD="$tracer" "${sampled[@]}" -- "$CHURN")
line+=" churn without tag scopes $(pct "$s" "$n")%,"
n=$(vg_count callgrind -- "$SQLITE")
s=$(vg_count callgrind LD_PRELOAD="$tracer" "${sampled[@]}" -- "$SQLITE")
sqlite_pct=$(pct "$s" "$n")
line+=" sqlite3 (one .read) ${sqlite_pct}%,"
n=$(vg_count callgrind PYTHONMALLOC=malloc -- "$PY")
s=$(vg_count callgrind PYTHONMALLOC=malloc LD_PRELOAD="$tracer" "${sampled[@]}" -- "$PY")
py_pct=$(pct "$s" "$n")
line+=" python3 (pyload.py 20000) ${py_pct}%"
echo "$line"

# The tracer's arms: instructions and data misses (read + write) per pair.
off=($(vg_count cachegrind LD_PRELOAD="$tracer" MEMTRACE_REDZONE=0 MEMTRACE_QUARANTINE=0 -- "$CHURN"))
# The quarantine-only floor: redzones off, every free still held back
# 1,000 frees (the delay's own cost to the program's memory traffic, which
# no check can avoid, with the fill and release checks of a held block).
floor=($(vg_count cachegrind LD_PRELOAD="$tracer" MEMTRACE_REDZONE=0 -- "$CHURN"))
on=($(vg_count cachegrind LD_PRELOAD="$tracer" -- "$CHURN"))
guard=($(vg_count cachegrind LD_PRELOAD="$tracer" MEMTRACE_GUARD_SAMPLE=1000 -- "$CHURN"))
# churn makes PAIRS + LIVE allocations and frees them all (LIVE of them
# at its end).
per_pair() { # per_pair A B: (A - B) per malloc/free pair
    case "$1 $2" in *-*) echo - ;; *) awk -v a="$1" -v b="$2" -v n="$((PAIRS + LIVE))" 'BEGIN { printf "%+.1f", (a - b) / n }' ;; esac
}
echo "instructions and L1 data misses (cachegrind), churn on 2 threads under the tracer ($((PAIRS + LIVE)) malloc/free pairs):"
echo "  heap checks at their defaults vs off: instructions $(pct "${on[0]}" "${off[0]}")% ($(per_pair "${on[0]}" "${off[0]}") a pair), misses $(pct "${on[1]:--}" "${off[1]:--}")% ($(per_pair "${on[1]:--}" "${off[1]:--}") a pair)"
echo "  heap checks at their defaults vs the quarantine-only floor (MEMTRACE_REDZONE=0): instructions $(pct "${on[0]}" "${floor[0]}")% ($(per_pair "${on[0]}" "${floor[0]}") a pair), misses $(pct "${on[1]:--}" "${floor[1]:--}")% ($(per_pair "${on[1]:--}" "${floor[1]:--}") a pair) (target: at most +5%)"
echo "  the floor vs both off: instructions $(pct "${floor[0]}" "${off[0]}")%, misses $(pct "${floor[1]:--}" "${off[1]:--}")%"
# python3, the same target over its floor: pyload.py 5000 (every block
# traced: 20,000 would take minutes an arm) on a thread of its own
# (pyload_thread.py), for the unwinder's reason above.
PYT="$PYTHON $SRC/pyload_thread.py $SRC/pyload.py 5000"
pyq=($(vg_count cachegrind PYTHONMALLOC=malloc LD_PRELOAD="$tracer" MEMTRACE_REDZONE=0 -- "$PYT"))
pyon=($(vg_count cachegrind PYTHONMALLOC=malloc LD_PRELOAD="$tracer" -- "$PYT"))
echo "  python3 (pyload.py 5000 on a thread), heap checks at their defaults vs the quarantine-only floor: instructions $(pct "${pyon[0]}" "${pyq[0]}")%, misses $(pct "${pyon[1]:--}" "${pyq[1]:--}")% (target: at most +5%)"
echo "  MEMTRACE_GUARD_SAMPLE=1000 vs without: instructions $(pct "${guard[0]}" "${on[0]}")%, misses $(pct "${guard[1]:--}" "${on[1]:--}")%"
