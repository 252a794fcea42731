#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The sampled profiler pays for symbolizing a module's first address during
# the run, from its reporter thread, not at the exit the program waits for
# (src/symbolize/sym_warm.c): libc's separate debug file (libc6-dbg's, whose
# compressed sections libdw inflates whole, ~50 ms) is mapped before main
# returns (tests/progs/perf_profile_exit.c looks in /proc/self/maps), with no
# periodic report to have done it (MEMTRACE_INTERVAL_MS=60000), and the exit
# report's stack is the same text as when every block is traced. Tracing
# every block, nothing is loaded ahead. A few seconds.
set -u
. "$(dirname "$0")/lib.sh"
prof=$build/libmemtrace-profiler.so
prog=$tests/perf_profile_exit
P=tests/progs/perf_profile_exit.c
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_PPROF_EVERY MEMTRACE_SAMPLE \
    MEMTRACE_SAMPLE_SEED MEMTRACE_INTERVAL_MS MEMTRACE_DEBUG_DIR
libc=$(readlink -f /lib/x86_64-linux-gnu/libc.so.6)
libc_id=$(readelf -n "$libc" | awk '/Build ID:/ { print $3; exit }')
if [ ! -f "/usr/lib/debug/.build-id/${libc_id:0:2}/${libc_id:2}.debug" ]; then
    fail "libc's debug file" "needs libc6-dbg (make deps)"
    finish perf_profile_exit
    exit 1
fi
# stack FILE: the exit report's stack of the kept block (its #0 in main).
stack() {
    sed -n '/^memtrace: exit report/,/^memtrace: end of exit report/p' "$1" |
        awk '/^  #0 / { on = / main at / } on && /^  #/'
}

out=$(timeout 60 env LD_PRELOAD="$prof" MEMTRACE_SAMPLE=524288 MEMTRACE_INTERVAL_MS=60000 \
    MEMTRACE_OUTPUT="$work/sampled.txt" "$prog" 2000 2>"$work/sampled.err")
RC=$?
status "sampled" 0
check "sampled: libc's debug file read before main returned" \
    "debug file mapped before exit: yes" "$out"
out=$(timeout 60 env LD_PRELOAD="$prof" MEMTRACE_INTERVAL_MS=60000 \
    MEMTRACE_OUTPUT="$work/full.txt" "$prog" 0 2>"$work/full.err")
RC=$?
status "every block" 0
check "every block: nothing read ahead" "debug file mapped before exit: no" "$out"
check "the exit report's site, its file:line and libc's lines" \
    "  #0 main at $P:$(site_line $P kept):12
  #1 __libc_start_call_main at ../sysdeps/nptl/libc_start_call_main.h:58:16" \
    "$(stack "$work/sampled.txt" | head -2)"
check "the same stack as tracing every block" "$(stack "$work/full.txt")" \
    "$(stack "$work/sampled.txt")"

finish perf_profile_exit
