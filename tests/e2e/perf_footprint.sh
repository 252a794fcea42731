#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Always-on sampling's own memory, as bounds from the design rather than
# timings (tests/progs/perf_footprint.c, every block sampled at
# MEMTRACE_SAMPLE=1): a thread recording 400 blocks in a region of its
# own grows memtrace's tables by at most the first mappings of that
# region's 16 live-table shards, one page each (two pages each before);
# sampling holds no freed block back unless MEMTRACE_QUARANTINE asks
# (before, 4 MiB a thread: sqlite3's peak 1.26x native); asked, and
# without sampling, the quarantine holds as before. The shadow of
# unsampled blocks (128 MiB of address space a region, 1/32 of the heap's
# pages touched) is kept off transparent huge pages (VmFlags nh), which
# where THP is "always" would turn each touched 4 KiB into 2 MiB. A few
# seconds.
set -u
. "$(dirname "$0")/lib.sh"
prog=$tests/perf_footprint
page=$(getconf PAGESIZE)

# run NAME LIB [VAR=VALUE...]: the program's stdout in $work/NAME.out.
run() {
    local name=$1 lib=$2
    shift 2
    env "$@" LD_PRELOAD="$lib" timeout 60 "$prog" >"$work/$name.out" 2>"$work/$name.err"
    check "$name: exit status" 0 "$?"
}
value() { sed -nE "s/^$2 ([0-9-]+)$/\\1/p" "$work/$1.out"; }

# at_most NAME WHAT LIMIT: NAME's figure WHAT is at most LIMIT.
at_most() {
    local got
    got=$(value "$1" "$2")
    if [ -n "$got" ] && [ "$got" -le "$3" ]; then
        pass "$1: $2 $got, at most $3"
    else fail "$1: $2 at most $3" "got '${got}': $(head -3 "$work/$1.err")"; fi
}
# at_least NAME WHAT LIMIT
at_least() {
    local got
    got=$(value "$1" "$2")
    if [ -n "$got" ] && [ "$got" -ge "$3" ]; then
        pass "$1: $2 $got, at least $3"
    else fail "$1: $2 at least $3" "got '${got}': $(head -3 "$work/$1.err")"; fi
}

for lib in libmemtrace libmemtrace-profiler; do
    run "$lib-sampled" "$build/$lib.so" MEMTRACE_SAMPLE=1 MEMTRACE_SAMPLE_SEED=1 MEMTRACE_EXIT_TOP=0
    # 16 shards of one page: the live table's first mappings, nothing else
    # (the site's stack was stored by the thread's first block)
    at_most "$lib-sampled" table_growth $((16 * page))
    check "$lib-sampled: bytes of freed blocks held" 0 "$(value "$lib-sampled" held)"
done

# Asked for, the quarantine holds sampled blocks: all 256 of 4000 bytes
# fit in 1 MiB with their redzones.
run asked "$build/libmemtrace.so" MEMTRACE_SAMPLE=1 MEMTRACE_SAMPLE_SEED=1 MEMTRACE_QUARANTINE=1048576
at_least asked held $((256 * 4000))
# Without sampling the default (4 MiB a thread) holds them too.
run full "$build/libmemtrace.so"
at_least full held $((256 * 4000))

# Next to nothing sampled: the program's blocks are in the shadow.
run rare "$build/libmemtrace.so" MEMTRACE_SAMPLE=1000000000
shadows=$(grep -c '^vma 131072 ' "$work/rare.out")
if [ "$shadows" -ge 1 ]; then pass "rare: the shadow is mapped ($shadows regions)"
else fail "rare: the shadow is mapped" "no mapping of 131072 kB"; fi
check "rare: shadow regions left to huge pages" 0 "$(grep -c '^vma 131072 -$' "$work/rare.out")"

finish perf_footprint
