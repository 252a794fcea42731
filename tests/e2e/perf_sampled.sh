#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Sample mode's exact answers, whatever tells its unsampled blocks apart
# (a shadow byte beside the heap, or a trailer in the block): on
# tests/progs/perf_sampled.c under the profiler, every change of the exact
# live total between two checkpoints (the program's own sum of the sizes
# it asked and freed) and every tag scope's exact live bytes, after frees
# of sampled and unsampled blocks, calloc, realloc (growing, shrinking, in
# place, to 0), aligned blocks, blocks from while recording was off,
# foreign blocks (the next allocator's own), threads freeing each other's
# blocks; at rates that sample some blocks (two seeds), every block and
# none. Then a block whose chunk header was rewritten before its free
# (counted nothing, no crash), and blocks spoilt past their size within
# glibc's slack (counted exactly). Takes a few seconds.
set -u
. "$(dirname "$0")/lib.sh"
prof=$build/libmemtrace-profiler.so
prog=$tests/perf_sampled

# run NAME RATE SEED MODE: the program's stdout in $work/NAME.out, the
# reports in $work/NAME.rep; the exit status checked.
run() {
    rm -f "$work/$1.rep"
    MEMTRACE_OUTPUT="$work/$1.rep" MEMTRACE_INTERVAL_MS=0 MEMTRACE_SAMPLE=$2 MEMTRACE_SAMPLE_SEED=$3 \
        LD_PRELOAD=$prof timeout 120 "$prog" "$4" >"$work/$1.out" 2>"$work/$1.err"
    local rc=$?
    check "$1: exit status" 0 "$rc"
}

# deltas NAME: one line per checkpoint after the first, "CP EXPECTED GOT",
# GOT the change of the report headers' exact live total.
deltas() {
    paste -d' ' <(sed -nE 's/^@@ cp ([a-z-]+) (-?[0-9]+)$/\1 \2/p' "$work/$1.out") \
        <(sed -nE 's/^memtrace: report [0-9]+ \(on request\), .*: ([0-9]+) bytes live at .*/\1/p' \
            "$work/$1.rep") |
        awk 'NR > 1 { print $1, $2, $3 - prev } { prev = $3 }'
}

# checked NAME: each checkpoint's change and each tag's bytes, exact.
checked() {
    local n=0 cp want got
    while read -r cp want got; do
        n=$((n + 1))
        check "$1: $cp: exact live total changed by" "$want" "$got"
    done < <(deltas "$1")
    [ "$n" -gt 0 ] || fail "$1: checkpoints" "none: $(head -3 "$work/$1.err")"
    while read -r _ _ name got want; do
        check "$1: tag $name's exact live bytes" "$want" "$got"
    done < <(grep "^@@ tag " "$work/$1.out")
}

for arm in "mixed1 4096 1" "mixed2 4096 2" "all 1 1" "none 1000000000 1"; do
    set -- $arm
    run "$1" "$2" "$3" main
    checked "$1"
    check "$1: no memtrace line on stderr" "" "$(grep '^memtrace' "$work/$1.err")"
done
# The mixed runs hold both kinds: some of the first phase's blocks
# sampled (recorded), most not.
for r in mixed1 mixed2; do
    k=$(sed -nE 's/^@@ sampled ([0-9]+) 600$/\1/p' "$work/$r.out")
    if [ -n "$k" ] && [ "$k" -gt 0 ] && [ "$k" -lt 600 ]; then
        pass "$r: sampled and unsampled blocks both ($k of 600 sampled)"
    else fail "$r: sampled and unsampled blocks both" "'$k' of 600 sampled"; fi
done

# Sampling nothing, nothing is recorded: an aligned block whose slack is
# too large for the shadow's mark (memalign(64, 1): 39 bytes) or a chunk
# grown in place by realloc carries a trailer in that slack instead.
check "none: no block recorded by realloc and aligned allocations" "realloc 0 aligned 0" \
    "$(sed -nE 's/^@@ recorded ([a-z]+) ([0-9]+)$/\1 \2/p' "$work/none.out" | tr '\n' ' ' | sed 's/ $//')"

# A chunk header rewritten to the next size class (48 -> 64) before the
# free: memtrace cannot know the block's size any more and counts nothing
# (it must not count 56 bytes), and does not crash.
run damaged 1000000000 1 damaged
checked damaged

# Written past their size into glibc's slack: nothing memtrace reads is
# there, every free counted exactly.
run slack 1000000000 1 slack
checked slack

finish perf_sampled
