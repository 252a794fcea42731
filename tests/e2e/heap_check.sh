#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `memtrace check` and `memtrace break-on-error` in gdb
# (tests/progs/heap_core.c): on a live process stopped at checkpoint() and
# on a core written there with gcore, the check lists the block
# overflowed by 4 bytes into its redzone and the block written after its
# free (in the quarantine), each with the exact size, offset and marked
# file:line, then the summary line; on the core of glibc's abort
# ("free(): invalid next size (normal)") after an overflow that reached the
# next chunk's header, it names the block that overflowed (which glibc had
# back: from the freed history), where it was allocated and freed. The
# breakpoint stops the program at the report made by free. memtrace reports
# the damaged next header at the free before glibc aborts on it: the core's
# check marks that block "reported before".
set -u
. "$(dirname "$0")/lib.sh"
lib=${MEMTRACE_LIB:-$build/libmemtrace.so}
helper=$root/gdb/memtrace.py
prog=$tests/heap_core
src=tests/progs/heap_core.c
ulimit -S -c 0 # cores only where a check asks for one

# The report in FILE whose first line matches the ERE HEAD, into $work/r.
report() { # FILE HEAD
    awk -v h="$2" 'on && /^memtrace: / { exit }
                   on && !/^  / { exit }
                   $0 ~ "^" h "$" { on = 1 }
                   on { print }' "$1" >"$work/r"
    [ -s "$work/r" ]
}

# Section PREFIX of $work/r has #0 at the marked site.
frame0() { # NAME PREFIX MARKER
    local line
    line=$(site_line "$src" "$3")
    if awk -v p="$2" 'on { print; exit } index($0, p) == 1 { on = 1 }' "$work/r" |
        grep -qE "^  #0 main at (.*/)?$src:$line:[0-9]+\$"; then
        pass "$1: '$2' #0 at heap_core.c:$line (SITE:$3)"
    else
        fail "$1" "'$2' #0 is not at $src:$line: $(cat "$work/r")"
    fi
}

check_live_answer() { # NAME FILE
    local name=$1 out=$2
    if report "$out" "memtrace: heap-buffer-overflow: 4 bytes past the end of a 40-byte block at 0x[0-9a-f]+"; then
        pass "$name: the 40-byte block overflowed by 4 bytes"
        frame0 "$name: overflow" "  allocated by thread 1 (allocation #1) at:" live_block
        has "$name: overflow: detected in memtrace check" "$work/r" "  detected in memtrace check"
    else
        fail "$name: the overflowed block" "$(cat "$out")"
    fi
    if report "$out" "memtrace: write-after-free: 1 byte at offset 8 of a freed 64-byte block at 0x[0-9a-f]+"; then
        pass "$name: the freed 64-byte block written at offset 8"
        frame0 "$name: write after free" "  allocated by thread 1 (allocation #2) at:" freed_block
        frame0 "$name: write after free" "  freed by thread 1 (after allocation #2) at:" freed_free
    else
        fail "$name: the block written after free" "$(cat "$out")"
    fi
    has "$name: the summary line" "$out" \
        "memtrace: check: 2 damaged blocks; 1 live block and 1 quarantined block checked"
}

# ---------------------------------------------------------------- live, then its core
timeout 120 gdb -q -batch -nx "$prog" -ex "set env LD_PRELOAD=$lib" -ex "break checkpoint" \
    -ex "run live" -ex "source $helper" -ex "memtrace check" -ex "gcore $work/live.core" \
    -ex "kill" >"$work/live.out" 2>&1
check_live_answer "live" "$work/live.out"
timeout 120 gdb -q -batch -nx "$prog" "$work/live.core" -ex "source $helper" \
    -ex "memtrace check" >"$work/core.out" 2>&1
check_live_answer "core" "$work/core.out"

# ---------------------------------------------------------------- a block on a guard page
timeout 120 gdb -q -batch -nx "$prog" -ex "set env LD_PRELOAD=$lib" \
    -ex "set env MEMTRACE_GUARD_SAMPLE=1" -ex "break checkpoint" -ex "run guard" \
    -ex "source $helper" -ex "memtrace check" -ex "kill" >"$work/guard.out" 2>&1
if report "$work/guard.out" "memtrace: heap-buffer-overflow: 1 byte past the end of a 100-byte block at 0x[0-9a-f]+"; then
    pass "guard: the block on a guard page, written past its end into its page"
    frame0 "guard" "  allocated by thread 1 (allocation #1) at:" guard_block
else
    fail "guard: the block on a guard page" "$(cat "$work/guard.out")"
fi

# ---------------------------------------------------------------- glibc's abort
mkdir -p "$work/abort"
(cd "$work/abort" && ulimit -S -c unlimited &&
    MEMTRACE_QUARANTINE=0 timeout 60 env LD_PRELOAD="$lib" "$prog" glibc \
        >"$work/abort.out" 2>"$work/abort.err") 2>/dev/null
RC=$?
status "glibc: aborts" 134
has "glibc: glibc's own message" "$work/abort.err" "free(): invalid next size (normal)"
corefile=$(ls "$work"/abort/core* 2>/dev/null | head -1)
if [ -z "$corefile" ]; then
    fail "glibc: core" "no core file (core_pattern: $(cat /proc/sys/kernel/core_pattern))"
else
    timeout 120 gdb -q -batch -nx "$prog" "$corefile" -ex "source $helper" \
        -ex "memtrace check" >"$work/glibc.out" 2>&1
    if report "$work/glibc.out" "memtrace: heap-buffer-overflow: 8 bytes at offset [0-9]+, [0-9]+ bytes past the end of a 2000-byte block at 0x[0-9a-f]+"; then
        pass "glibc core: names the 2000-byte block that overflowed"
        frame0 "glibc core" "  allocated by thread 1 (allocation #1) at:" overflowed
        frame0 "glibc core" "  freed by thread 1 (after allocation #2) at:" free_overflowed
        if grep -qE "^  detected in memtrace check \(glibc's chunk header at 0x[0-9a-f]+, after the block, holds 0x4141414141414141; reported before, detected in free\)\$" "$work/r"; then
            pass "glibc core: the damaged header and what it holds"
        else
            fail "glibc core: the header" "$(cat "$work/r")"
        fi
    else
        fail "glibc core: the overflowed block" "$(cat "$work/glibc.out")"
    fi
    has "glibc core: the summary line" "$work/glibc.out" \
        "memtrace: check: 1 damaged block (1 reported before); 1 live block and 0 quarantined blocks checked"
fi

# ---------------------------------------------------------------- break-on-error
timeout 120 gdb -q -batch -nx "$prog" -ex "source $helper" -ex "memtrace break-on-error" \
    -ex "set env LD_PRELOAD=$lib" -ex "set env MEMTRACE_QUARANTINE=0" -ex "run glibc" -ex "bt" \
    -ex "kill" >"$work/break.out" 2>&1
has "break-on-error: the breakpoint" "$work/break.out" \
    "stops at each heap error report (memtrace_on_error)"
has "break-on-error: stopped there" "$work/break.out" "memtrace_on_error ("
line=$(site_line "$src" free_overflowed)
if grep -qE "in main \(.*\) at (.*/)?$src:$line\$" "$work/break.out"; then
    pass "break-on-error: the stack reaches the free at heap_core.c:$line"
else
    fail "break-on-error: the stack" "$(cat "$work/break.out")"
fi
lacks "break-on-error: stopped before glibc's abort" "$work/break.out" "invalid next size"

finish heap_check
