#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The stress programs under a debug build (make DEBUG=1, built into
# build/debug by `make test-debug`): the MT_ASSERT checks of the locks, the
# stores and the hot path run in real programs with threads, forks, forks
# from signal handlers and unloaded libraries. A failed check prints
# "memtrace: assertion failed: ..." and aborts. Prints "debug: N passed, N
# failed".
set -u
. "$(dirname "$0")/lib.sh"
dbg=${1:-$build/debug}
cd "$root" || exit 1

if nm -D --defined-only "$dbg/libmemtrace.so" 2>/dev/null | grep -q . &&
   nm "$dbg/libmemtrace.so" 2>/dev/null | grep -q mt_assert_fail; then
    pass "the debug library has its checks compiled in"
else
    fail "debug library" "no mt_assert_fail in $dbg/libmemtrace.so"
fi

run() { # NAME ENV... PROG ARGS...
    local name=$1
    shift
    timeout 300 env "$@" >"$work/out" 2>"$work/err"
    local rc=$?
    if [ $rc = 0 ] && ! grep -q "memtrace: assertion failed" "$work/err"; then
        pass "$name"
    else
        fail "$name" "exit $rc; $(grep -m3 'assertion failed' "$work/err")"
    fi
}

for lib in "$dbg/libmemtrace.so" "$dbg/libmemtrace-profiler.so"; do
    v=$(basename "$lib" .so)
    run "8 threads x 200,000 operations ($v, debug)" LD_PRELOAD="$lib" MEMTRACE_OUTPUT=/dev/null \
        "$tests/stress_api"
    run "20 forks while 8 threads allocate ($v, debug)" LD_PRELOAD="$lib" MEMTRACE_OUTPUT=/dev/null \
        "$tests/stress_fork"
    run "fork from a signal handler, 300 times ($v, debug)" LD_PRELOAD="$lib" MEMTRACE_INTERVAL_MS=0 \
        MEMTRACE_OUTPUT=/dev/null "$tests/signal_fork"
    run "fork from a signal handler while the peak rises ($v, debug)" LD_PRELOAD="$lib" \
        MEMTRACE_INTERVAL_MS=0 MEMTRACE_OUTPUT=/dev/null "$tests/signal_fork" grow
    run "libraries unloaded and replaced ($v, debug)" LD_PRELOAD="$lib" MEMTRACE_OUTPUT=/dev/null \
        "$tests/dl_reuse" "$tests"
    run "a 2-record freed ring lapped by 8 threads ($v, debug)" LD_PRELOAD="$lib" MEMTRACE_FREED=2 \
        MEMTRACE_OUTPUT=/dev/null "$tests/stress_api"
    # The leak check at exit stops the other threads and reads the tables
    # they were changing; in every forked child too. Status kept (0).
    run "the leak check after 8 threads x 200,000 operations ($v, debug)" LD_PRELOAD="$lib" \
        MEMTRACE_LEAK_CHECK=1 MEMTRACE_LEAK_EXITCODE=0 MEMTRACE_OUTPUT=/dev/null "$tests/stress_api"
    run "the leak check in 20 forks while 8 threads allocate ($v, debug)" LD_PRELOAD="$lib" \
        MEMTRACE_LEAK_CHECK=1 MEMTRACE_LEAK_EXITCODE=0 MEMTRACE_OUTPUT=/dev/null "$tests/stress_fork"
done
finish debug
