#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The always-on profiler's reporter thread, idle: under
# MEMTRACE_SYMBOLIZE=later in sample mode, with no MEMTRACE_SIGNAL, it
# sleeps until the next report is due instead of waking every 10 ms (a
# hundred wake-ups a second, some 2 ms of CPU a second). Counted, not
# timed: tests/progs/perf_samp_wake.c sleeps 1.5 s under the profiler
# (MEMTRACE_SAMPLE=524288, MEMTRACE_INTERVAL_MS=1000) and strace counts
# the reporter thread's futex calls (threads other than main): at most 8
# (its start, one sleep to each due report, the stop at exit), where the
# 10 ms tick made over 50 even on a loaded machine. Its periodic report is
# still made (the 16 MiB block, report 1), and a main that ends with
# pthread_exit still ends the process when its last thread does (status
# 0, the exit report made), at once, not at the next report. With now
# (the symbolizer's warming) and with MEMTRACE_SIGNAL the 10 ms tick stays:
# a signal's report comes within it. A few seconds.
set -u
. "$(dirname "$0")/lib.sh"
prof=$build/libmemtrace-profiler.so
prog=$tests/perf_samp_wake
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_PPROF_EVERY MEMTRACE_SAMPLE \
    MEMTRACE_SAMPLE_SEED MEMTRACE_INTERVAL_MS MEMTRACE_SYMBOLIZE MEMTRACE_SIGNAL MEMTRACE_TAGS
if ! command -v strace >/dev/null 2>&1; then
    fail "strace" "not installed (make deps)"
    finish perf_samp_wake
    exit 1
fi

# wakes NAME: the futex calls of threads other than main in
# $work/NAME.strace (strace -f's lines start with the thread's id; main's
# is the pid its report names: the reporter's first call may come first).
wakes() {
    local pid
    pid=$(sed -n 's/^memtrace: report 1 (periodic), pid \([0-9]*\),.*/\1/p' "$work/$1.rep")
    [ -n "$pid" ] || { echo 0; return; } # no report: "now" fails, and idle's report check
    awk -v main="$pid" '$1 != main && /futex\(/ { n++ } END { print n + 0 }' "$work/$1.strace"
}

# run NAME ARGS...: the program under strace and the profiler (later,
# sampled), its stdout in $work/NAME.out, the reports in NAME.rep.
run() {
    local name=$1
    shift
    env LD_PRELOAD="$prof" MEMTRACE_SAMPLE=524288 MEMTRACE_SYMBOLIZE=later MEMTRACE_INTERVAL_MS=1000 \
        MEMTRACE_OUTPUT="$work/$name.rep" "$@" >"$work/$name.out" 2>"$work/$name.err"
}

run idle timeout 60 strace -f -qq -e trace=futex -o "$work/idle.strace" "$prog" 1500
RC=$?
status "idle" 0
check "idle: the program's answer" "slept" "$(cat "$work/idle.out")"
n=$(wakes idle)
if [ "$n" -le 8 ]; then
    pass "idle: the reporter's futex calls in 1.5 s: $n (at most 8)"
else
    fail "idle: the reporter's futex calls in 1.5 s" "$n, more than 8"
fi
has "idle: the periodic report still made" "$work/idle.rep" "memtrace: report 1 (periodic)"

# main ends with pthread_exit; its thread ends 1 s later: the process
# ends then (well before the next report is due, 1 s after the first).
start=$(date +%s%N)
run exit timeout 60 env MEMTRACE_INTERVAL_MS=5000 "$prog" 200 exit
RC=$?
took=$((($(date +%s%N) - start) / 1000000))
status "pthread_exit" 0
has "pthread_exit: the exit report made" "$work/exit.rep" "memtrace: exit report"
if [ "$took" -lt 4500 ]; then
    pass "pthread_exit: the process ended with its last thread (${took} ms, the report due at 5000)"
else
    fail "pthread_exit: the process ended with its last thread" "${took} ms: at the next report"
fi

# now: the warming polls, as before
env LD_PRELOAD="$prof" MEMTRACE_SAMPLE=524288 MEMTRACE_INTERVAL_MS=1000 MEMTRACE_OUTPUT="$work/now.rep" \
    timeout 60 strace -f -qq -e trace=futex -o "$work/now.strace" "$prog" 1500 >/dev/null 2>&1
n=$(wakes now)
if [ "$n" -gt 20 ]; then
    pass "now: the 10 ms tick stays ($n futex calls)"
else
    fail "now: the 10 ms tick" "$n futex calls"
fi

finish perf_samp_wake
