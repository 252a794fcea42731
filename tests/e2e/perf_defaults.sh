#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The tracer at its defaults, where its per-call work was cut:
#   - interning through the thread's memo (src/capture/capture_cfi.c,
#     interned_slot): many stacks through one allocating function at one
#     depth, pairs of them equal in their innermost three frames
#     (tests/progs/perf_defaults.c), are stored as exactly the 32
#     allocation stacks and the one free stack they are, and under
#     MEMTRACE_UNWIND=check (every capture also made by libunwind and the
#     interned ids compared) with 0 mismatches;
#   - the free's prefetch of the block's end (mt_live_prefetch_size) is
#     asserted exactly in the unit tests (test_live_table.c); the checks it
#     serves keep their answers in heap_errors.sh and the errs family.
set -u
. "$(dirname "$0")/lib.sh"
lib=$build/libmemtrace.so
prog=$tests/perf_defaults
unset MEMTRACE_SAMPLE MEMTRACE_UNWIND MEMTRACE_REDZONE MEMTRACE_QUARANTINE
cd "$work" || exit 1

out=$(timeout 120 env LD_PRELOAD="$lib" "$prog" 2>err)
check "defaults: exit status" 0 $?
check "defaults: the stacks stored" "stacks 33" "$out"

out=$(timeout 300 env LD_PRELOAD="$lib" MEMTRACE_UNWIND=check "$prog" 2>check.err)
check "check mode: exit status" 0 $?
check "check mode: the stacks stored" "stacks 33" "$out"
unwind_check "check mode" check.err 128000

finish perf_defaults
