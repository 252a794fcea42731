#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# What a live block costs in memory under the tracer at its defaults
# (tests/progs/perf_rss.c; the budget bench/pyrss.sh accounts for on
# python3): glibc's chunk grows by exactly the 16-byte redzone and no
# more (mallinfo2's bytes in use: a block of 8 bytes not at all, its
# chunk's slack holds the redzone already; 24, 32 and 40 bytes by 16,
# the least a chunk of 16-byte steps can grow by to hold 16 bytes more:
# asking for less than the redzone's bytes, to use the chunk's own slack,
# saves nothing), and the live table maps 40 to 51 bytes a live block
# (32-byte records at a load of 64% to 80%, live_table.c), read from
# memtrace_get_stats for 200,000 live blocks.
set -u
. "$(dirname "$0")/lib.sh"
prog=$tests/perf_rss
tracer=$build/libmemtrace.so
n=200000

for size in 8 24 32 40; do
    native=$(timeout 60 "$prog" $n $size)
    traced=$(timeout 60 env LD_PRELOAD="$tracer" "$prog" $n $size)
    nh=$(awk '$1 == "heap" { print $2 }' <<<"$native")
    th=$(awk '$1 == "heap" { print $2 }' <<<"$traced")
    want=$((nh + 16))
    [ "$size" -le 8 ] && want=$nh
    check "$size-byte blocks: the chunk native, traced" "$nh $want" "$nh $th"
    check "$size-byte blocks: live blocks recorded" "live $n" "$(grep '^live ' <<<"$traced")"
    table=$(awk '$1 == "table" { print $2 }' <<<"$traced")
    if awk -v t="$table" 'BEGIN { exit !(t >= 40 && t <= 51) }'; then
        pass "$size-byte blocks: the live table's bytes a block ($table) within 40 to 51"
    else
        fail "$size-byte blocks: the live table's bytes a block" "$table, not within 40 to 51"
    fi
done

finish perf_rss
