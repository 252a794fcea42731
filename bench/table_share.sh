#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/table_share.sh: the live table's share of python3's profile under
# the tracer at its defaults (PYTHONMALLOC=malloc, bench/pyload.py), by
# `perf record -e cpu-clock`: the samples in the table's functions
# (mt_live_*, grow, erase, find_slot) over all samples, the median of
# BENCH_ROUNDS runs. Shares of samples hold on a loaded machine where
# times do not. The target: the share falls from 18% (21% measured on a
# shared machine) toward what the entry's own line costs. Markdown on
# stdout.
#
#   bench/table_share.sh TRACER_LIB
set -u
tracer=$(realpath "$1")
SRC=$(cd "$(dirname "$0")" && pwd)
rounds=${BENCH_ROUNDS:-3}
work=$(mktemp -d /tmp/memtrace-bench-share.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp "$tracer" "$work/libmemtrace.so" || exit 1
BIN=/nonexistent # workloads.sh names the bench programs by it; python3 needs none
. "$SRC/workloads.sh"

if ! perf record -q -e cpu-clock -o "$work/probe.data" true >/dev/null 2>&1; then
    echo "live table's share of python3's profile: SKIP -- perf record unavailable"
    exit 0
fi
shares=()
for _ in $(seq "$rounds"); do
    PYTHONMALLOC=malloc LD_PRELOAD="$work/libmemtrace.so" \
        perf record -q -e cpu-clock -o "$work/perf.data" ${CMD[python3]} \
        >/dev/null 2>&1 || continue
    shares+=("$(perf report -i "$work/perf.data" --stdio --sort dso,sym 2>/dev/null |
        awk '$2 == "libmemtrace.so" && $4 ~ /^(mt_live_|grow$|erase$|find_slot)/ {
                 gsub("%", "", $1); s += $1 }
             END { printf "%.1f", s }')")
done
if [ ${#shares[@]} = 0 ]; then
    echo "live table's share of python3's profile: - (no run)"
    exit 0
fi
median=$(printf '%s\n' "${shares[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
echo "live table's share of python3's profile (perf cpu-clock, PYTHONMALLOC=malloc pyload.py, median of ${#shares[@]}): ${median}% of all samples (runs: ${shares[*]}); target: below the 18% measured before the grown tables went onto huge pages"
