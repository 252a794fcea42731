#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# What a live block costs in memory under the tracer at its defaults
# (tests/progs/perf_rss.c; the budget bench/pyrss.sh accounts for on
# python3): glibc's chunk grows by exactly the 16-byte redzone and no
# more (mallinfo2's bytes in use: a block of 8 bytes not at all, its
# chunk's slack holds the redzone already; 24, 32 and 40 bytes by 16,
# the least a chunk of 16-byte steps can grow by to hold 16 bytes more:
# asking for less than the redzone's bytes, to use the chunk's own slack,
# saves nothing), and the live table maps 30 to 38.5 bytes a live block
# (24-byte slots at a load of 64% to 80%, live_table.c; 32-byte entries
# took 40 to 50), read from memtrace_get_stats for 200,000 live blocks. A
# block of 9 MiB, too large for a slot (a side record), is recorded,
# answered for and freed as the others.
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
    if awk -v t="$table" 'BEGIN { exit !(t >= 30 && t <= 38.5) }'; then
        pass "$size-byte blocks: the live table's bytes a block ($table) within 30 to 38.5"
    else
        fail "$size-byte blocks: the live table's bytes a block" "$table, not within 30 to 38.5"
    fi
done

src=tests/progs/perf_rss.c
out=$(timeout 60 env LD_PRELOAD="$tracer" "$prog" big 2>&1)
check "a 9 MiB block: its answer" \
    "1 1" "$(grep -c 'start of a 9437184-byte block allocated by thread 1' <<<"$out") $(grep -c "big at $src:$(site_line $src rss_big):" <<<"$out")"
check "a 9 MiB block and a small one: recorded, then freed" "live 2 after 0" \
    "$(grep -E '^(live|after) ' <<<"$out" | tr '\n' ' ' | sed 's/ $//')"

finish perf_rss
