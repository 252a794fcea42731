#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# MEMTRACE_UNWIND=check: every stack is captured by both unwinders and
# compared; at its exit each process prints
#   memtrace: unwind check: N captures, M mismatches, F fallbacks
# on the stderr it started with, then, when M > 0, the first mismatches with
# both stacks. Every test program (in the modes the other suites run it, so
# threads, fork, fork+exec, fork from a signal handler, dlopen/dlclose, C++
# new, fibers, wild frame pointers and deep stacks are all covered) and the
# real programs of the reliability suite run here under the tracer library
# in that mode. Each run must exit as it does there, print at least one
# check line (one per process that exits normally: a fork or a compiler
# driver's children print their own), with N > 0 in the last one (the top
# process, which waits for its children), and M = 0 in every one.
# One "ok:" or "FAIL:" line per run, "unwind-check: N passed, N failed"
# last; exits 1 on any failure. MEMTRACE_LIB names another library;
# `unwind_check.sh --self-test` runs only the parser's check on sample text.
set -u
. "$(dirname "$0")/lib.sh"
lib=${MEMTRACE_LIB:-$build/libmemtrace.so}

# ---------------------------------------------------------------- the parser
# verdict ERR: judges the check lines of one run's stderr. On success prints
# "N captures, 0 mismatches, F fallbacks" (summed over the processes, with
# their count when more than one) and returns 0; otherwise prints the
# reason, then the lines concerned, each check line with a mismatch
# followed by what came after it (up to 200 lines, to the next check
# line), and returns 1.
verdict() { # ERR [ZERO_OK]
    awk -v zero_ok="${2:-0}" '
    /^memtrace: unwind check: [0-9]+ captures, [0-9]+ mismatches, [0-9]+ fallbacks$/ && NF == 9 {
        k++; n += $4; m += $6; f += $8; last = $4; after = 0
        if ($6 > 0) { bad++; after = 200; detail = detail "  " $0 "\n" }
        next
    }
    /^memtrace: unwind check: [0-9]/ {
        malformed++; after = 0; detail = detail "  malformed: " $0 "\n"; next
    }
    after > 0 { after--; detail = detail "    " $0 "\n"; next }
    /^memtrace: / && said == "" { said = $0 }
    END {
        if (k == 0 && malformed == 0) {
            printf "no \"memtrace: unwind check:\" line on stderr"
            if (said != "") printf "; memtrace said: %s", said
            printf "\n"
            exit 1
        }
        summary = n " captures, " m " mismatches, " f " fallbacks"
        if (k > 1) summary = summary " (" k " processes)"
        if (malformed > 0) { printf "%d check lines not in the expected form; %s\n%s", malformed, summary, detail; exit 1 }
        if (bad > 0) { printf "%d of %d processes had mismatches: %s\n%s", bad, k, summary, detail; exit 1 }
        if (last == 0 && !zero_ok) { printf "0 captures in the last check line (the top process): %s\n", summary; exit 1 }
        print summary
    }' "$1"
}

# The parser against sample stderr: each case's text, the status it must
# get (0 or 1) and a string its output must hold.
self_test() {
    local bad=0 i=0 want expect text got rc
    while IFS='|' read -r want expect text; do
        i=$((i + 1))
        printf '%b' "$text" >"$work/sample"
        got=$(verdict "$work/sample")
        rc=$?
        if [ "$rc" != "$want" ] || [[ "$got" != *"$expect"* ]]; then
            bad=$((bad + 1))
            echo "  sample $i: status $rc (want $want), output:"
            printf '%s\n' "$got" | sed 's/^/    /'
        fi
    done <<'CASES'
1|no "memtrace: unwind check:" line|program output\n
1|memtrace said: memtrace: MEMTRACE_UNWIND="check" is neither|memtrace: MEMTRACE_UNWIND="check" is neither "libunwind" nor "fp"; using libunwind\n
0|100 captures, 0 mismatches, 2 fallbacks|out\nmemtrace: unwind check: 100 captures, 0 mismatches, 2 fallbacks\n
0|210 captures, 0 mismatches, 1 fallbacks (2 processes)|memtrace: unwind check: 10 captures, 0 mismatches, 0 fallbacks\nmemtrace: unwind check: 200 captures, 0 mismatches, 1 fallbacks\n
1|1 of 1 processes had mismatches: 50 captures, 2 mismatches|memtrace: unwind check: 50 captures, 2 mismatches, 0 fallbacks\nmemtrace: mismatch 1: new #0 0x1 libunwind #0 0x2\n
1|    memtrace: mismatch 1|memtrace: unwind check: 50 captures, 2 mismatches, 0 fallbacks\nmemtrace: mismatch 1\n
1|1 of 2 processes had mismatches|memtrace: unwind check: 5 captures, 1 mismatches, 0 fallbacks\nmemtrace: unwind check: 90 captures, 0 mismatches, 0 fallbacks\n
1|0 captures in the last check line|memtrace: unwind check: 5 captures, 0 mismatches, 0 fallbacks\nmemtrace: unwind check: 0 captures, 0 mismatches, 0 fallbacks\n
1|1 check lines not in the expected form|memtrace: unwind check: 5 captures, 0 mismatches\n
1|1 check lines not in the expected form|memtrace: unwind check: 5 captures, 0 mismatches, 0 fallbacks (pid 7)\n
CASES
    # A mismatch's details are shown, and stop at the next check line.
    printf '%s\n' "memtrace: unwind check: 3 captures, 1 mismatches, 0 fallbacks" "DETAIL-A" \
        "memtrace: unwind check: 9 captures, 0 mismatches, 0 fallbacks" "AFTER" >"$work/sample"
    got=$(verdict "$work/sample")
    if [ "$(printf '%s\n' "$got" | sed -n 2,3p)" != "  memtrace: unwind check: 3 captures, 1 mismatches, 0 fallbacks
    DETAIL-A" ] || [[ "$got" == *AFTER* ]]; then
        bad=$((bad + 1))
        echo "  details: $got"
    fi
    if [ $bad = 0 ]; then
        pass "parser self-test: $((i + 1)) samples judged right"
    else
        fail "parser self-test" "$bad of $((i + 1)) samples judged wrong"
    fi
}

if [ "${1:-}" = --self-test ]; then
    self_test
    finish unwind-check
    exit
fi
self_test

# ---------------------------------------------------------------- one run
# run NAME WANT CMD...: CMD (in the project root, under the library in check
# mode, stderr to a file) must exit WANT within 120 s, then pass verdict.
# ZERO_OK=1 in run's environment: the program allocates nothing traced, so
# 0 captures is its right count.
runs=0
run() {
    local name=$1 want=$2
    shift 2
    runs=$((runs + 1))
    local err=$work/run$runs.err
    local t0=$(date +%s%N)
    (cd "$root" && timeout 120 env LD_PRELOAD="$lib" MEMTRACE_UNWIND=check "$@") \
        >"$work/run$runs.out" 2>"$err"
    local rc=$?
    local ms=$((($(date +%s%N) - t0) / 1000000))
    local secs=$((ms / 1000)).$((ms % 1000 / 100))
    local v
    v=$(verdict "$err" "${ZERO_OK:-0}")
    local ok=$?
    if [ "$rc" != "$want" ]; then
        local why="exit $rc, want $want"
        [ "$rc" = 124 ] && why="$why (124: timed out after 120 s)"
        [ "$rc" = 127 ] && why="$why (127: not found; make deps installs it)"
        failed=$((failed + 1))
        echo "FAIL: $name: $why; $(printf '%s\n' "$v" | head -1), $secs s"
        printf '%s\n' "$v" | tail -n +2
        echo "  command: $*"
        grep -v '^memtrace: unwind check: ' "$err" | tail -5 | sed 's/^/  stderr: /'
    elif [ $ok != 0 ]; then
        failed=$((failed + 1))
        echo "FAIL: $name: $(printf '%s\n' "$v" | head -1), $secs s"
        printf '%s\n' "$v" | tail -n +2
        echo "  command: $*"
    else
        passed=$((passed + 1))
        echo "ok: $name: $v, $secs s"
    fi
}

# ---------------------------------------------------------------- test programs
# tests/progs, as run.sh, profiler.sh, reliability.sh and debug.sh run them;
# all exit 0. Not here: tsan_tables and the unit tests (they link memtrace's
# files, nothing is preloaded), profile_sites signal (it raises
# MEMTRACE_SIGNAL, which only the profiler handles), profile_corners stderr2
# closefrom (it closes memtrace's copy of stderr: nothing can be printed).
# Nor two where libunwind, the reference, is the one that is wrong (the
# cfi side of each is checked against the source in reliability.sh):
# regressions fds closes descriptors 3 to 63 as a daemon does, among them
# the pipe libunwind 1.6 validates addresses with, after which it unwinds
# nothing (0 frames); dl_cfi loads a library where an unloaded one was,
# and libunwind's per-thread trace cache unwinds it with the old one's
# rules.
run "sites (every entry point, a thread, a dlopened library)" 0 "$tests/sites"
run "sites_o2 (always-inline at -O2)" 0 "$tests/sites_o2"
run "sites_cxx (new and new[] in a namespace and a template)" 0 "$tests/sites_cxx"
run "demo" 0 "$tests/demo"
run "stress_api (8 threads x 200,000 operations over the whole API)" 0 "$tests/stress_api"
run "stress_fork (20 forks while 8 threads allocate, then fork+exec)" 0 "$tests/stress_fork"
run "signal_fork (fork from a signal handler interrupting malloc, 300 times)" 0 "$tests/signal_fork"
run "signal_fork grow" 0 "$tests/signal_fork" grow
run "api_corners (the API's corners)" 0 "$tests/api_corners"
run "unload (a block from a dlclosed library)" 0 "$tests/unload"
run "unload leak" 0 "$tests/unload" leak
run "dl_reuse (a library replaced at the same address)" 0 \
    env MEMTRACE_FREED=0 DEBUGINFOD_URLS=http://127.0.0.1:9 build/tests/dl_reuse build/tests
# atfork only forks: it allocates nothing once memtrace is up.
ZERO_OK=1 run "regressions atfork" 0 "$tests/regressions" atfork
for mode in aligned fiber threadfiber getattr wildrbp freeall msabi; do
    run "regressions $mode" 0 "$tests/regressions" $mode
done
run "regressions threadname" 0 env MEMTRACE_FREED=0 "$tests/regressions" threadname
run "rust_threads (Rust std, 4 threads)" 0 "$tests/rust_threads"
for mode in demand periodic threads fork; do
    run "profile_sites $mode" 0 "$tests/profile_sites" $mode
done
run "profile_corners cancel (a thread cancelled after memtrace_report)" 0 \
    "$tests/profile_corners" cancel
run "profile_corners cancel_trace (print_trace of a 250-frame stack, cancelled)" 0 \
    env MEMTRACE_DEPTH=256 "$tests/profile_corners" cancel_trace "$work/ct.out"
ZERO_OK=1 run "profile_corners stderr2 (fd 2 reused for a data file)" 0 \
    "$tests/profile_corners" stderr2 "$work/fd2.data"
run "profile_corners proctitle (argv and environment overwritten)" 0 \
    "$tests/profile_corners" proctitle
run "profile_corners exec (fork+exec 3 children)" 0 "$tests/profile_corners" exec
run "profile_corners peak" 0 "$tests/profile_corners" peak
# profiler.sh runs scale 20 20 (2^20 stacks) for the report's sake; 2^16
# stacks of over 40 frames cover the same unwinding in a twentieth.
run "profile_corners scale 16 20 (65,536 distinct deep stacks)" 0 \
    "$tests/profile_corners" scale 16 20
run "profile_cxx (std::function and a lambda)" 0 "$tests/profile_cxx"
# gdb_sites checks that the allocator hands a freed address out again: the
# quarantine (on by default) would hold it back.
run "gdb_sites (a named thread and a spinning one)" 0 MEMTRACE_QUARANTINE=0 "$tests/gdb_sites"
run "gdb_quiet" 0 "$tests/gdb_quiet"
# The cfi unwinder's memo of the thread's last walk: stacks that share a
# frame's place and return address with the last one, not what is above.
run "unwind_memo (other callers, alloca, a signal handler, longjmp, threads)" 0 \
    "$tests/unwind_memo"
run "gdb_quiet oddname" 0 "$tests/gdb_quiet" oddname
run "gdb_quiet reuse (1,000 frees at one address, 20-frame stacks)" 0 "$tests/gdb_quiet" reuse

# ---------------------------------------------------------------- real programs
# Those of reliability.sh with its inputs, but for python3's: 50,000 dict
# entries instead of 200,000 (check mode unwinds twice per allocation, and
# with PYTHONMALLOC=malloc every object is a malloc). All exit 0.
run "python3" 0 python3 "$root/tests/progs/dicts.py" 50000
run "python3 with PYTHONMALLOC=malloc" 0 env PYTHONMALLOC=malloc python3 "$root/tests/progs/dicts.py" 50000
run "sqlite3 (200,000 rows in memory)" 0 sqlite3 :memory: ".read $root/tests/progs/rows.sql"
# The driver, cc1plus and as print a line each.
run "g++ compile" 0 g++ -O2 -c tests/progs/sites_cxx.cpp -o "$work/cxx.o"
# ld loads the LTO plugin and dlcloses it before it exits; the program
# then dlopens libdl_sites.so from its own directory.
cp "$tests/libdl_sites.so" "$work/"
run "gcc compile and link (then the program runs)" 0 sh -c "gcc -O2 -pthread -o '$work/linked' \
    tests/progs/sites.c -ldl && '$work/linked' >/dev/null"
jq -n '[range(40000) | {id: ., name: "n\(.)", tags: [., (. * 2)]}]' >"$work/big.json"
run "jq ($(($(wc -c <"$work/big.json") / 1000)) kB of JSON)" 0 \
    jq -c '[.[] | select(.id % 7 == 0) | .tags[1]] | add' "$work/big.json"
awk 'BEGIN { print "<root>"; for (i = 0; i < 50000; i++)
             printf "<item id=\"%d\"><name>n%d</name></item>\n", i, i; print "</root>" }' \
    >"$work/big.xml"
run "xmllint ($(($(wc -c <"$work/big.xml") / 1000)) kB of XML)" 0 \
    xmllint --xpath 'count(//item[@id mod 3 = 0])' "$work/big.xml"
run "gdb (batch commands, one in Python)" 0 gdb -nx -batch -ex 'print 6 * 7' -ex 'python print(sum(range(1000)))'
run "node" 0 node -e 'const m = new Map(); for (let i = 0; i < 100000; i++) m.set("k" + i, [i]);
    console.log(m.size, JSON.stringify([...m.keys()].slice(-3)))'

finish unwind-check
