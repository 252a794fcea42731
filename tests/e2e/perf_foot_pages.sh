#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# What the always-on profiler (MEMTRACE_SAMPLE=524288,
# MEMTRACE_SYMBOLIZE=later) keeps resident of read-only file mappings
# (tests/progs/perf_foot_pages.c reads its own smaps and pagemap): a read
# fault maps the 64 KiB around it, so code and tables touched once stay
# resident for the whole run.
#   - Start-up gives back the file pages it mapped
#     (src/runtime/startup_pages.h): at main, nothing of liblzma's and
#     libgcc_s's code (loaded under libunwind, run by none of a sampled
#     run's steady state) is mapped; 64 KiB of each was before.
#   - The library's code that runs after start-up sits together, ahead of
#     .text (src/capture/steady_text.ld): after a churn of small blocks,
#     no page of the library's code lies past the 64 KiB after the end of
#     its .text.steady section (before, its pages were spread over all of
#     .text: 316 KiB of 360 resident on churn).
#   - The tables of .bss sit ahead of it (src/capture/steady_text.ld,
#     -fdata-sections), its small variables together: after the churn,
#     at most 16 pages of the library's writable data (.data, .bss and
#     the tables' touched pages) are mapped; 22 were, the small variables
#     spread among the tables.
#   - A live-table shard's first table is 256 bytes, one sixteenth of a
#     page shared with its neighbours (src/store/live_table.c): a thread
#     recording 7 blocks in a region of its own (every block sampled,
#     tests/progs/perf_footprint.c 7) grows memtrace's tables by at most
#     7 first tables; it was a page per shard they landed in.
# Under a second.
set -u
. "$(dirname "$0")/lib.sh"
prog=$tests/perf_foot_pages
prof=$build/libmemtrace-profiler.so
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_PPROF_EVERY MEMTRACE_SAMPLE \
    MEMTRACE_SYMBOLIZE MEMTRACE_UNWIND MEMTRACE_RECORD MEMTRACE_GUARD_SAMPLE MEMTRACE_INTERVAL_MS

out=$work/out
# No periodic report (its code is in the list too, but whether one runs
# depends on the machine's speed).
timeout 60 env LD_PRELOAD="$prof" MEMTRACE_SAMPLE=524288 MEMTRACE_SYMBOLIZE=later MEMTRACE_INTERVAL_MS=0 \
    "$prog" libmemtrace-profiler.so liblzma.so libgcc_s.so >"$out" 2>"$work/err"
check "exit status" 0 "$?"

# libgcc_s is memtrace's own DT_NEEDED (-fexceptions); liblzma comes with
# libunwind on Debian, and is left out of the count where it does not.
for l in libgcc_s.so liblzma.so; do
    got=$(awk -v l="$l" '$1 == "start" && $2 == l && $3 == "r-xp" { print $4 }' "$out")
    [ "$l" = liblzma.so ] && [ -z "$got" ] && continue
    check "$l: its code mapped at main, KiB" 0 "${got:-absent}"
done

# .text.steady's end in the file: [Nr] Name Type Address Off Size ...
end=$(readelf -SW "$prof" | sed -nE 's/.*\] \.text\.steady +PROGBITS +[0-9a-f]+ ([0-9a-f]+) ([0-9a-f]+) .*/\1 \2/p' |
    { read -r o s && echo $((0x$o + 0x$s)); })
if [ -n "$end" ]; then
    pass "the library has a .text.steady section (ends at file offset $end)"
else fail "the library has a .text.steady section" "$(readelf -SW "$prof" | grep text)"; fi
n=0 past=0
while read -r _ off; do
    n=$((n + 1))
    [ $((0x$off)) -ge $((${end:-0} + 65536)) ] && past=$((past + 1))
done < <(grep '^page ' "$out")
if [ "$n" -gt 0 ] && [ "$past" = 0 ]; then
    pass "after the churn: $n pages of code mapped, none past .text.steady's end + 64 KiB"
else fail "after the churn: no page of code past .text.steady's end + 64 KiB" \
    "$past of $n pages: $(grep '^page' "$out" | tail -5 | tr '\n' ' ')"; fi

# The library's writable data ends where .bss does (the last section).
data_end=$(readelf -SW "$prof" | sed -nE 's/.*\] \.bss +NOBITS +([0-9a-f]+) [0-9a-f]+ ([0-9a-f]+) .*/\1 \2/p' |
    { read -r a s && echo $((0x$a + 0x$s)); })
nd=0
while read -r _ a; do
    [ $((0x$a)) -lt "${data_end:-0}" ] && nd=$((nd + 1))
done < <(grep '^data ' "$out")
if [ -n "$data_end" ] && [ "$nd" -gt 0 ] && [ "$nd" -le 16 ]; then
    pass "after the churn: $nd pages of the library's writable data mapped, at most 16"
else fail "after the churn: at most 16 pages of the library's writable data mapped" \
    "$nd below $data_end: $(grep '^data' "$out" | tr '\n' ' ')"; fi

for lib in libmemtrace libmemtrace-profiler; do
    timeout 60 env LD_PRELOAD="$build/$lib.so" MEMTRACE_SAMPLE=1 MEMTRACE_SAMPLE_SEED=1 \
        MEMTRACE_EXIT_TOP=0 "$tests/perf_footprint" 7 >"$work/$lib.table" 2>"$work/$lib.table.err"
    check "$lib: table program's exit status" 0 "$?"
    got=$(sed -nE 's/^table_growth ([0-9]+)$/\1/p' "$work/$lib.table")
    if [ -n "$got" ] && [ "$got" -le $((7 * 256)) ]; then
        pass "$lib: 7 sampled blocks in a new region grow the tables by $got bytes, at most 7 * 256"
    else fail "$lib: 7 sampled blocks grow the tables by at most 7 * 256 bytes" \
        "got '$got': $(head -3 "$work/$lib.table.err")"; fi
done

finish perf_foot_pages
