#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `memtrace check` (gdb, live and on the core) finds an underflow of a live
# block on a guard page placed against the next guard page, where the
# write faults on no page (tests/progs/errs_guard_check.c): the page's
# bytes before the block are checked, as the library checks them at the
# free; so does the check at exit, live blocks' included.
# AddressSanitizer, the oracle, reports the same write.
set -u
. "$(dirname "$0")/lib.sh"
lib=${MEMTRACE_LIB:-$build/libmemtrace.so}
helper=$root/gdb/memtrace.py
prog=$tests/errs_guard_check
src=tests/progs/errs_guard_check.c

# The report of the block at ADDR in FILE (the line naming it, the next
# three: allocation stack's first frame, detected in ...) is an underflow
# by N bytes, allocated at SITE:block or SITE:block_again.
underflow_listed() { # NAME FILE ADDR N
    local s=bytes
    [ "$4" = 1 ] && s=byte
    if grep -qxF "memtrace: heap-buffer-underflow: $4 $s before the start of a 100-byte block at $3" "$2"; then
        pass "$1: listed as an underflow by $4"
    else
        fail "$1" "no underflow by $4 of the block at $3: $(cat "$2")"
    fi
    local first
    first=$(awk -v p="  allocated by thread 1 (allocation #" 'on { print; exit } index($0, p) == 1 { on = 1 }' "$2")
    if echo "$first" | grep -qE "^  #0 main at (.*/)?$src:($(site_line "$src" block)|$(site_line "$src" block_again)):[0-9]+\$"; then
        pass "$1: its allocation at SITE:block"
    else
        fail "$1: allocation" "'$first' is not main at SITE:block: $(cat "$2")"
    fi
    has "$1: the summary counts it" "$2" "memtrace: check: 1 damaged block;"
}

# ---------------------------------------------------------------- the oracle
asan=$work/errs_guard_check_asan
if gcc -O0 -g -fsanitize=address -o "$asan" "$root/$src" 2>"$work/asan_build.err"; then
    ASAN_OPTIONS=detect_leaks=0 timeout 60 "$asan" 1 >"$work/asan.out" 2>&1
    has "asan: reports the write" "$work/asan.out" "ERROR: AddressSanitizer: heap-buffer-overflow"
    if grep -qE "is located 1 bytes (to the left of|before) 100-byte region" "$work/asan.out"; then
        pass "asan: 1 byte before the 100-byte block"
    else
        fail "asan" "not 1 byte before a 100-byte region: $(cat "$work/asan.out")"
    fi
else
    fail "asan: build" "$(cat "$work/asan_build.err")"
fi

# ---------------------------------------------------------------- live, in gdb
timeout 120 gdb -q -batch -nx "$prog" -ex "set env LD_PRELOAD=$lib" \
    -ex "set env MEMTRACE_GUARD_SAMPLE=1" -ex "run 1" -ex "source $helper" -ex "memtrace check" \
    -ex "kill" >"$work/live.out" 2>&1
addr=$(sed -n 's/^block //p' "$work/live.out")
if [ -z "$addr" ]; then
    fail "live" "the program did not run: $(cat "$work/live.out")"
else
    underflow_listed live "$work/live.out" "$addr" 1
fi

# ---------------------------------------------------------------- the core of run --check
mkdir -p "$work/core"
(cd "$work/core" && ulimit -S -c unlimited && timeout 60 "$build/memtrace" run --check "$prog" 7 \
    >"$work/core.out" 2>"$work/core.err") 2>/dev/null
RC=$?
status "core: aborted with the block live" 134
lacks "core: no report before the check (the write faulted on no page)" "$work/core.err" "memtrace:"
addr=$(sed -n 's/^block //p' "$work/core.out")
core=$(ls "$work"/core/core* 2>/dev/null | head -1)
if [ -z "$core" ] || [ -z "$addr" ]; then
    fail "core" "no core file or no address (core_pattern: $(cat /proc/sys/kernel/core_pattern))"
else
    timeout 120 gdb -q -batch -nx "$prog" "$core" -ex "source $helper" -ex "memtrace check" \
        >"$work/core.gdb" 2>&1
    underflow_listed core "$work/core.gdb" "$addr" 7
fi

# ---------------------------------------------------------------- at exit
for mode in default check; do
    if [ $mode = check ]; then
        (cd "$work" && ulimit -c 0 && timeout 60 "$build/memtrace" run --check "$prog" 2 exit \
            >"$work/exit_$mode.out" 2>"$work/exit_$mode.err") 2>/dev/null
        RC=$?
        status "exit, --check: aborts at the report" 134
    else
        timeout 60 env LD_PRELOAD="$lib" MEMTRACE_GUARD_SAMPLE=1 "$prog" 2 exit \
            >"$work/exit_$mode.out" 2>"$work/exit_$mode.err"
        RC=$?
        status "exit, guard pages alone: the run fails" 1
    fi
    addr=$(sed -n 's/^block //p' "$work/exit_$mode.out")
    if grep -qxF "memtrace: heap-buffer-underflow: 2 bytes before the start of a 100-byte block at $addr" \
        "$work/exit_$mode.err" && [ -n "$addr" ]; then
        pass "exit, $mode: reported as an underflow by 2"
    else
        fail "exit, $mode" "no underflow by 2 of the block at '$addr': $(cat "$work/exit_$mode.err")"
    fi
    has "exit, $mode: detected in exit" "$work/exit_$mode.err" "  detected in exit by thread 1 at:"
done

finish errs_guard_check
