#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `memtrace run --check` and its guard pages (tests/progs/errs_guard.c):
# underflows by 1 and 7 of a left-aligned block fault at the access (the
# exact line), and of a right-aligned one are found at the free (the page
# before the block is a redzone); a read just past the 16-byte padding
# of a 10-, 13-, 24- and 100-byte block faults at the access, and a write
# into the padding is found at the free; every block of 1 to 64 bytes is
# 16-aligned, as glibc's; a realloc resizes a block in its page (its end
# still at the guard page, the rest of the page a redzone); free(p + 8) of a pool block is reported and
# ends the run as glibc would (never goes on); the core --check leaves
# after a fault has the faulting thread's stack (gdb's bt reaches the
# access and main), and the core it leaves after a report at a free still
# knows the block (`memtrace ADDR`, `memtrace check`).
set -u
. "$(dirname "$0")/lib.sh"
mt=$build/memtrace
prog=$tests/errs_guard
src=tests/progs/errs_guard.c
helper=$build/memtrace.py

run() { # NAME ARGS...: `memtrace run --check`, status in RC, stderr in $work/NAME.err
    local name=$1
    shift
    (cd "$work" && ulimit -c 0 && timeout 60 "$mt" run --check "$prog" "$@" \
        >"$work/$name.out" 2>"$work/$name.err") 2>/dev/null
    RC=$?
}

first_line() { # NAME EXPECTED-PATTERN (ERE, the whole line)
    if head -1 "$work/$1.err" | grep -qE "^$2\$"; then
        pass "$1: $(head -1 "$work/$1.err" | sed 's/0x[0-9a-f]*$/0x.../')"
    else
        fail "$1" "first line is not /$2/: $(cat "$work/$1.err")"
    fi
}

# The line after the one starting with PREFIX in $work/NAME.err is frame
# #0 in FUNCTION at the marked line.
frame0() { # NAME PREFIX FUNCTION MARKER
    local line got
    line=$(site_line "$src" "$4")
    got=$(awk -v p="$2" 'on { print; exit } index($0, p) == 1 { on = 1 }' "$work/$1.err")
    if echo "$got" | grep -qE "^  #0 $3 at (.*/)?$src:$line:[0-9]+\$"; then
        pass "$1: '$2' #0 $3 at errs_guard.c:$line"
    else
        fail "$1: '$2'" "#0 is not $3 at $src:$line: $(cat "$work/$1.err")"
    fi
}

fault=" detected in a fault on a guard page by thread 1 at:"

# ---------------------------------------------------------------- underflow, at the access
for n in 1 7; do
    s="byte"
    [ $n = 1 ] || s="bytes"
    run underflow$n underflow $n
    first_line underflow$n "memtrace: heap-buffer-underflow write: $n $s before the start of a 100-byte block at 0x[0-9a-f]+000"
    frame0 underflow$n " $fault" write_at write
    frame0 underflow$n "  allocated by thread 1 (allocation #" block block_again
    status "underflow$n: --check aborts at the access" 134
done

# ---------------------------------------------------------------- underflow of a right-aligned block, at the free
run underflow_right underflow_right 3
first_line underflow_right "memtrace: heap-buffer-underflow: 3 bytes before the start of a 100-byte block at 0x[0-9a-f]+"
frame0 underflow_right "  detected in free by thread 1 at:" main free_underflow
status "underflow_right: --check aborts at the free" 134

# ---------------------------------------------------------------- reads past the end, at the access
for n in 10 13 24 100; do
    at=$(((n + 15) / 16 * 16))
    past=$((at - n))
    s="bytes"
    [ $past = 1 ] && s="byte"
    run overread$n overread $n
    first_line overread$n "memtrace: heap-buffer-overflow read: 1 byte at offset $at, $past $s past the end of a $n-byte block at 0x[0-9a-f]+"
    frame0 overread$n " $fault" read_at read
    status "overread$n: --check aborts at the access" 134
done

# ---------------------------------------------------------------- the padding, at the free
for n in 10 13 24 100; do
    run padding$n padding $n
    first_line padding$n "memtrace: heap-buffer-overflow: 1 byte past the end of a $n-byte block at 0x[0-9a-f]+"
    frame0 padding$n "  detected in free by thread 1 at:" main free_padding
    status "padding$n: --check aborts at the free" 134
done

# ---------------------------------------------------------------- realloc in the block's page
run realloc realloc
status "realloc: grown and shrunk, contents kept" 0
check "realloc: in place, the end at the guard page or the start at the page's" \
    "realloc right: page end|realloc left: page start|errs_guard: went on" "$(tr '\n' '|' <"$work/realloc.out" | sed 's/|$//')"
check "realloc: no report" "" "$(cat "$work/realloc.err")"
run realloc_read realloc_read
first_line realloc_read "memtrace: heap-buffer-overflow read: 1 byte at offset 208, 8 bytes past the end of a 200-byte block at 0x[0-9a-f]+"
frame0 realloc_read " $fault" read_at read
frame0 realloc_read "  allocated by thread 1 (allocation #" main realloc_read
status "realloc_read: --check aborts at the access" 134
run realloc_write realloc_write
first_line realloc_write "memtrace: heap-buffer-overflow: 1 byte past the end of a 40-byte block at 0x[0-9a-f]+"
frame0 realloc_write "  detected in free by thread 1 at:" main free_realloc
status "realloc_write: --check aborts at the free" 134

# ---------------------------------------------------------------- glibc's alignment
run align align
status "align: every block of 1 to 64 bytes 16-aligned" 0
check "align: none misaligned" "align: 0 misaligned" "$(cat "$work/align.out")"

# ---------------------------------------------------------------- free inside a block
run free_inside free_inside
first_line free_inside "memtrace: free of an address 8 bytes inside a 100-byte block at 0x[0-9a-f]+"
frame0 free_inside "  free by thread 1 at:" main free_inside
frame0 free_inside "  allocated by thread 1 (allocation #" main inside_block
status "free_inside: --check aborts" 134
check "free_inside: the program does not go on" "" "$(cat "$work/free_inside.out")"
# The guard pages alone (MEMTRACE_ON_ERROR=continue): as glibc, never on.
(cd "$work" && ulimit -c 0 && timeout 60 env LD_PRELOAD="$build/libmemtrace.so" \
    MEMTRACE_GUARD_SAMPLE=1 "$prog" free_inside >"$work/free_inside_guard.out" \
    2>"$work/free_inside_guard.err") 2>/dev/null
RC=$?
status "free_inside, guard pages alone: aborts as glibc does" 134
has "free_inside, guard pages alone: says why" "$work/free_inside_guard.err" \
    "memtrace: a free of an address of the guard pages that is no block's start: aborting, as the allocator would"
check "free_inside, guard pages alone: the program does not go on" "" \
    "$(cat "$work/free_inside_guard.out")"
(cd "$work" && ulimit -c 0 && timeout 60 "$prog" free_inside >/dev/null 2>&1) 2>/dev/null
check "free_inside: natively, glibc's abort too" 134 "$?"

# ---------------------------------------------------------------- the core after a fault
mkdir -p "$work/core_uaf"
(cd "$work/core_uaf" && ulimit -c unlimited && timeout 60 "$mt" run --check "$prog" uaf \
    >/dev/null 2>"$work/core_uaf.err") 2>/dev/null
RC=$?
status "core_uaf: --check aborts at the fault" 134
corefile=$(ls "$work"/core_uaf/core* 2>/dev/null | head -1)
if [ -z "$corefile" ]; then
    fail "core_uaf" "no core file (core_pattern: $(cat /proc/sys/kernel/core_pattern))"
else
    timeout 120 gdb -q -batch -nx "$prog" "$corefile" -ex "bt" >"$work/core_uaf.bt" 2>&1
    line=$(site_line "$src" write)
    if grep -qE "^#[0-9]+ +(0x[0-9a-f]+ in )?write_at \(.*\) at (.*/)?$src:$line\$" "$work/core_uaf.bt"; then
        pass "core_uaf: bt reaches the access (write_at at errs_guard.c:$line)"
    else
        fail "core_uaf: the access" "not in bt: $(cat "$work/core_uaf.bt")"
    fi
    if grep -qE "^#[0-9]+ +(0x[0-9a-f]+ in )?main \(.*\) at (.*/)?$src:[0-9]+\$" "$work/core_uaf.bt"; then
        pass "core_uaf: bt reaches main"
    else
        fail "core_uaf: main" "not in bt: $(cat "$work/core_uaf.bt")"
    fi
    lacks "core_uaf: bt does not end on memtrace's stack" "$work/core_uaf.bt" "mt_own_stack"
fi

# ---------------------------------------------------------------- the core knows the block
mkdir -p "$work/core_strcpy"
(cd "$work/core_strcpy" && ulimit -c unlimited && timeout 60 "$mt" run --check "$prog" strcpy \
    >"$work/core_strcpy.out" 2>"$work/core_strcpy.err") 2>/dev/null
RC=$?
status "core_strcpy: --check aborts at the free" 134
first_line core_strcpy "memtrace: heap-buffer-overflow: 1 byte past the end of a 10-byte block at 0x[0-9a-f]+"
addr=$(sed -n 's/^block //p' "$work/core_strcpy.out")
corefile=$(ls "$work"/core_strcpy/core* 2>/dev/null | head -1)
if [ -z "$corefile" ] || [ -z "$addr" ]; then
    fail "core_strcpy" "no core file or no address (core_pattern: $(cat /proc/sys/kernel/core_pattern))"
else
    timeout 120 gdb -q -batch -nx "$prog" "$corefile" -ex "source $helper" -ex "memtrace $addr" \
        -ex "memtrace check" >"$work/core_strcpy.gdb" 2>&1
    line=$(site_line "$src" strcpy_block)
    block_of "$addr" "$work/core_strcpy.gdb" >"$work/core_strcpy.block"
    if head -1 "$work/core_strcpy.block" | grep -qE "^memtrace: $addr: start of a 10-byte block allocated by thread 1 \(allocation #[0-9]+\)\$" &&
        sed -n 2p "$work/core_strcpy.block" | grep -qE "^  #0 main at (.*/)?$src:$line:[0-9]+\$"; then
        pass "core_strcpy: memtrace $addr names the block and its allocation (errs_guard.c:$line)"
    else
        fail "core_strcpy: memtrace ADDR" "$(cat "$work/core_strcpy.gdb")"
    fi
    if grep -qE "^memtrace: heap-buffer-overflow: 1 byte past the end of a 10-byte block at $addr\$" \
        "$work/core_strcpy.gdb"; then
        pass "core_strcpy: memtrace check finds the block"
    else
        fail "core_strcpy: memtrace check" "$(cat "$work/core_strcpy.gdb")"
    fi
    has "core_strcpy: memtrace check's summary" "$work/core_strcpy.gdb" \
        "memtrace: check: 1 damaged block (1 reported before);"
fi

finish errs_guard
