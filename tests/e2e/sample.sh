#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Sampled tracing (MEMTRACE_SAMPLE) on tests/progs/sample_prog.c:
# unsampled blocks freed and resized quietly through every C allocator's
# function; the one-line answer about an unsampled block; MEMTRACE_SAMPLE=1
# (every byte sampled) gives the full mode's exit report; the estimates of
# a program of known totals; the exact live total after frees (in-process,
# from memtrace_state); seeded runs reproducible; bad settings; the
# leak check's caveat; C++ and jemalloc's API (allocators.sh's programs). Prints one PASS/FAIL line per check and
# "sample: N passed, N failed" last. Takes a few seconds.
set -u
. "$(dirname "$0")/lib.sh"
lib=$build/libmemtrace.so
prof=$build/libmemtrace-profiler.so
prog=$tests/sample_prog
P=tests/progs/sample_prog.c

# Unsampled, sampled and mixed: no memtrace line, exit 0 (contents and
# malloc_usable_size checked by the program).
for rate in 4096 1 1000000000; do
    MEMTRACE_SAMPLE=$rate LD_PRELOAD=$lib "$prog" families >"$work/fam.out" 2>"$work/fam.err"
    rc=$?
    if [ $rc = 0 ] && [ ! -s "$work/fam.err" ]; then
        pass "families at MEMTRACE_SAMPLE=$rate"
    else
        fail "families at MEMTRACE_SAMPLE=$rate" "status $rc: $(head -5 "$work/fam.err")"
    fi
done

# C++'s new and delete in every form (sized, aligned, nothrow), with
# glibc and with jemalloc as the next allocator, and jemalloc's *allocx:
# frees of unsampled blocks go unreported, at a rate that mixes both kinds
# and at one that samples nothing.
for p in cxx_forms cxx_forms_je je_api; do
    for rate in 64 1000000000; do
        MEMTRACE_SAMPLE=$rate LD_PRELOAD=$lib "$tests/$p" >"$work/$p.out" 2>"$work/$p.err"
        rc=$?
        if [ $rc = 0 ] && ! grep -q '^memtrace' "$work/$p.err"; then
            pass "$p at MEMTRACE_SAMPLE=$rate"
        else fail "$p at MEMTRACE_SAMPLE=$rate" "status $rc: $(head -5 "$work/$p.err")"; fi
    done
done

# print_trace on an unsampled block (a 16-byte block at a 1 GB rate: sampled
# with probability 1.6e-8): one line.
MEMTRACE_SAMPLE=1000000000 LD_PRELOAD=$lib "$prog" trace >"$work/tr.out" 2>"$work/tr.err"
p=$(addr_of p "$work/tr.out")
want="memtrace: $p: no sampled block; sampling is on (MEMTRACE_SAMPLE=1000000000): it may be an unsampled heap block, whose stack is not kept"
if [ "$(cat "$work/tr.err")" = "$want" ]; then pass "unsampled block's answer"; else
    fail "unsampled block's answer" "$(cat "$work/tr.err")"; fi

# The same from gdb (memtrace-symbolize reads the tables from outside: the
# rate comes from the state descriptor), and `memtrace top` says it
# estimates.
MEMTRACE_SAMPLE=1000000000 timeout 120 "$build/memtrace" gdb -batch -ex 'break print_trace' \
    -ex run -ex up -ex 'memtrace p' -ex 'memtrace top 3' -- "$prog" trace >"$work/gdb.out" 2>&1
p=$(sed -nE 's/^Breakpoint 1, print_trace \(ptr=(0x[0-9a-f]+)\).*/\1/p' "$work/gdb.out")
has "memtrace EXPR on an unsampled block" "$work/gdb.out" \
    "memtrace: ${p:-none}: no sampled block; sampling is on (MEMTRACE_SAMPLE=1000000000): it may be an unsampled heap block, whose stack is not kept"
has "memtrace top says it estimates" "$work/gdb.out" \
    "memtrace: sampled (MEMTRACE_SAMPLE=1000000000): bytes and blocks are estimates"

# The shared live total follows frees as it follows allocations: 4000
# unsampled blocks of 1000 bytes made, then freed (sample mode's fast path),
# the word memtrace_state publishes read in-process after each phase, each
# within 262144 bytes (the thread's unflushed count) of 4000000, then of 0.
MEMTRACE_SAMPLE=1000000000 LD_PRELOAD=$lib "$prog" drain >"$work/drain.out" 2>"$work/drain.err"
drain=$(sed -nE 's/^@@ live (-?[0-9]+) (-?[0-9]+)$/\1 \2/p' "$work/drain.out")
if [ -n "$drain" ] && awk -v f="${drain% *}" -v e="${drain#* }" 'function abs(x) { return x < 0 ? -x : x }
        BEGIN { exit !(abs(f - 4000000) < 262144 && abs(e) < 262144) }'; then
    pass "live total after frees within a flush ($drain)"
else fail "live total after frees within a flush" "${drain:-no line}: $(head -3 "$work/drain.err")"; fi

# gdb's `memtrace stats` gives the exact totals as the threads last
# flushed them: after sites 2000 (12800000 bytes kept; the peak 4000 more),
# each within 262144 bytes (one thread's unflushed count).
MEMTRACE_SAMPLE=16384 MEMTRACE_SAMPLE_SEED=1 timeout 120 "$build/memtrace" gdb -batch \
    -ex 'break sites' -ex run -ex finish -ex 'memtrace stats' -- "$prog" sites 2000 >"$work/gdbx.out" 2>&1
exact=$(sed -nE 's/^memtrace: sampled, but exact, every block counted: ([0-9]+) bytes live, peak ([0-9]+) bytes \(as the threads last flushed them: within 262144 bytes per thread still running\)$/\1 \2/p' "$work/gdbx.out")
if [ -n "$exact" ] && awk -v l="${exact% *}" -v p="${exact#* }" 'function abs(x) { return x < 0 ? -x : x }
        BEGIN { exit !(abs(l - 12800000) < 262144 && abs(p - 12804000) < 262144) }'; then
    pass "memtrace stats: exact totals within a flush ($exact)"
else fail "memtrace stats: exact totals within a flush" "$(grep '^memtrace' "$work/gdbx.out" | head -5)"; fi

# Every byte sampled: the block is traced, its stack at the site.
MEMTRACE_SAMPLE=1 LD_PRELOAD=$lib "$prog" trace >"$work/tr1.out" 2>"$work/tr1.err"
p=$(addr_of p "$work/tr1.out")
if grep -qF "memtrace: $p: start of a 16-byte block allocated by thread 1" "$work/tr1.err" &&
    grep -qF "#0 main at $(at $P traced)" "$work/tr1.err"; then
    pass "sampled block's answer"
else fail "sampled block's answer" "$(cat "$work/tr1.err")"; fi

# The exit report's sites (pid and times dropped).
sites_of() { grep -v "^memtrace: sampled" "$1" | sed -E 's/pid [0-9]+, at [0-9.]+ s/pid, at/; s/live at [0-9]+ ms/live at/'; }
report() { # OUT RATE SEED N
    MEMTRACE_SAMPLE=$2 MEMTRACE_SAMPLE_SEED=$3 MEMTRACE_INTERVAL_MS=0 MEMTRACE_TOP_BY=allocs \
        LD_PRELOAD=$prof "$prog" sites "$4" 2>"$1" >/dev/null
}
report "$work/full" 0 0 20
report "$work/one" 1 0 20
if [ -s "$work/full" ] && diff <(sites_of "$work/full") <(sites_of "$work/one") >"$work/diff"; then
    pass "MEMTRACE_SAMPLE=1 reports as the full mode"
else fail "MEMTRACE_SAMPLE=1 reports as the full mode" "$(head -20 "$work/diff")"; fi
if grep -qx "memtrace: sampled (MEMTRACE_SAMPLE=1): bytes and blocks are estimates" "$work/one" &&
    ! grep -q "^memtrace: sampled" "$work/full"; then
    pass "sampled reports say they are estimates"
else fail "sampled reports say they are estimates" "$(grep -c sampled "$work/one" "$work/full")"; fi

# Estimates at 16 KiB against the known totals of sites 2000: kept 200000 x
# 64 bytes, freed 20000 x 4000 bytes; within 15% (about 4 standard
# deviations) for each of two seeds.
within() { # NAME VALUE EXACT PERCENT
    if [ -n "$2" ] && awk -v v="$2" -v e="$3" -v p="$4" 'BEGIN { d = v - e; if (d < 0) d = -d; exit !(d * 100 <= e * p) }'; then
        pass "$1 ($2 for $3)"
    else fail "$1" "'$2' not within $4% of $3"; fi
}
site_alloc() { # FILE SITE: the allocated bytes of the report's site whose frame #0 is SITE
    awk -v at="$(at $P "$2")" '/^memtrace: \[/ { line = $0 } index($0, "#0 ") && index($0, at) { print line }' "$1" |
        sed -nE 's/.*since start: ([0-9]+) bytes in.*/\1/p' | head -1
}
for seed in 1 2; do
    report "$work/est$seed" 16384 $seed 2000
    within "kept site's estimate, seed $seed" "$(site_alloc "$work/est$seed" kept)" 12800000 15
    within "freed site's estimate, seed $seed" "$(site_alloc "$work/est$seed" freed)" 80000000 15
    # The totals are not estimates: every block is counted (kept's
    # 12800000 bytes live at exit; at the peak, one of freed's 4000 more).
    check "exact live total and peak, seed $seed" "peak 12804000; 12800000 still live" \
        "$(sed -nE 's/^memtrace: exit report, .*: peak ([0-9]+) bytes live at [0-9]+ ms; ([0-9]+) bytes still live .*/peak \1; \2 still live/p' "$work/est$seed")"
done
# The tracer's pprof profile at exit: Go's convention, scaled values and
# the rate as the period.
if command -v go >/dev/null; then
    MEMTRACE_SAMPLE=16384 MEMTRACE_SAMPLE_SEED=1 MEMTRACE_PPROF=$work/s.pb.gz LD_PRELOAD=$lib \
        "$prog" sites 2000 >/dev/null 2>&1
    HOME=$work PPROF_TMPDIR=$work timeout 120 go tool pprof -raw "$work/s.pb.gz" >"$work/raw" 2>&1
    has "pprof's period is the rate" "$work/raw" "Period: 16384"
    within "pprof's scaled in-use bytes" \
        "$(awk '/^Samples:/ { on = 1; next } on && /: / { sub(/:$/, "", $2); print $2; exit }' "$work/raw")" 12800000 15
fi
report "$work/again1" 16384 1 2000
if diff <(sites_of "$work/est1") <(sites_of "$work/again1") >/dev/null; then
    pass "a seeded run is reproducible"
else fail "a seeded run is reproducible" "seed 1 gave two reports"; fi
if ! diff <(sites_of "$work/est1") <(sites_of "$work/est2") >/dev/null; then
    pass "seeds differ"
else fail "seeds differ" "seeds 1 and 2 gave the same report"; fi

# Bad settings: one line each, and every block traced (the default).
for bad in abc -1 1099511627777; do
    MEMTRACE_SAMPLE=$bad LD_PRELOAD=$lib "$prog" trace >"$work/bad.out" 2>"$work/bad.err"
    p=$(addr_of p "$work/bad.out")
    if [ "$(grep -c '^memtrace: MEMTRACE_SAMPLE=' "$work/bad.err")" = 1 ] &&
        grep -qxF "memtrace: MEMTRACE_SAMPLE=\"$bad\" is not a whole number from 0 to 1099511627776; using 0" "$work/bad.err" &&
        grep -qF "memtrace: $p: start of a 16-byte block" "$work/bad.err"; then
        pass "MEMTRACE_SAMPLE=$bad refused"
    else fail "MEMTRACE_SAMPLE=$bad refused" "$(cat "$work/bad.err")"; fi
done
MEMTRACE_SAMPLE=4096 MEMTRACE_SAMPLE_SEED=x LD_PRELOAD=$lib "$prog" families >/dev/null 2>"$work/seed.err"
if [ "$(cat "$work/seed.err")" = 'memtrace: MEMTRACE_SAMPLE_SEED="x" is not a whole number from 0 to 9223372036854775807; using 0' ]; then
    pass "MEMTRACE_SAMPLE_SEED=x refused"
else fail "MEMTRACE_SAMPLE_SEED=x refused" "$(cat "$work/seed.err")"; fi

# The leak check says what its verdicts mean.
MEMTRACE_SAMPLE=4096 MEMTRACE_LEAK_CHECK=1 LD_PRELOAD=$lib "$prog" sites 20 >/dev/null 2>"$work/leak.err"
has "leak check's caveat" "$work/leak.err" \
    'memtrace: leak check of sampled blocks only (MEMTRACE_SAMPLE=4096): unsampled blocks are neither checked nor scanned'

finish sample
