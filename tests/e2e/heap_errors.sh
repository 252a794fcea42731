#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Heap errors: redzones and the quarantine find overflows and
# writes after free, at free, realloc, a thread's end, exit and
# memtrace_check(); each report's first line, sizes, offsets and sites
# are exact, and AddressSanitizer (the same program built with
# -fsanitize=address) is the oracle: the same error, the same sizes, the
# same allocation and free sites. Then the exit status
# (MEMTRACE_ERROR_EXITCODE, MEMTRACE_ON_ERROR=abort), the settings turned
# off, bad values, and a program using every byte it owns: no report.
set -u
source "$(dirname "$0")/lib.sh"
lib=${MEMTRACE_LIB:-$build/libmemtrace.so}
prog=$tests/heap_errors
asan=$tests/heap_errors_asan
src=tests/progs/heap_errors.c

# run NAME CASE [VAR=VALUE...]: the case under memtrace, its stdout and
# stderr in $work/NAME.{out,err}, its status in RC.
run() {
    local name=$1 what=$2
    shift 2
    timeout 60 env LD_PRELOAD="$lib" "$@" "$prog" "$what" >"$work/$name.out" 2>"$work/$name.err"
    RC=$?
}

# The first report in ERR whose first line starts with HEAD, into FILE.
report_to() { # ERR HEAD FILE
    awk -v h="$2" 'on && !/^  / { exit }
                   index($0, h) == 1 { on = 1 }
                   on { print }' "$1" >"$3"
    [ -s "$3" ]
}

# The frame lines of the section of REPORT that starts with PREFIX.
section() { # REPORT PREFIX
    awk -v p="$2" 'on && !/^  #/ && !/^     inlined/ { exit }
                   on { print }
                   index($0, p) == 1 { on = 1 }' "$1"
}

# Frame #0 of section PREFIX of REPORT is at the marked line of $src.
check_site() { # NAME REPORT PREFIX MARKER
    local line
    line=$(site_line "$src" "$4")
    if section "$2" "$3" | head -1 | grep -qE "^  #0 .* at (.*/)?$src:$line(:[0-9]+)?\$"; then
        pass "$1: '$3' #0 at heap_errors.c:$line (SITE:$4)"
    else
        fail "$1" "'$3' #0 is not at $src:$line (SITE:$4): $(cat "$2")"
    fi
}

# The first line of the report: exactly LINE, with the address as 0x...
check_head() { # NAME REPORT LINE
    local got
    got=$(head -1 "$2" | sed -E 's/0x[0-9a-f]+$/0x.../')
    check "$1: first line" "$3" "$got"
}

# ASan's report on the same case: its kind, its "WRITE of size N", where
# the address lies against the region, and the line of frame #1 (#0 is
# ASan's interceptor) of the allocation and free stacks.
asan_run() { # NAME CASE
    ASAN_OPTIONS=detect_leaks=0 timeout 60 "$asan" "$2" >"$work/$1.asan.out" 2>"$work/$1.asan.err"
}
asan_line() { # FILE HEADING: the line of frame #1 after HEADING
    awk -v h="$2" 'index($0, h) == 1 { on = 1; next }
                   on && /^    #1 / { n = split($NF, a, ":"); print a[n]; exit }' "$1"
}
check_asan() { # NAME ASAN-KIND SIZE WHERE ALLOC-MARKER [FREE-MARKER]
    local name=$1 err=$work/$1.asan.err
    check "$name: ASan names the same error" "$2" \
        "$(sed -n 's/.*ERROR: AddressSanitizer: \([a-z-]*\) on address.*/\1/p' "$err")"
    check "$name: ASan's access size is memtrace's byte count" "WRITE of size $3" \
        "$(grep -o '^WRITE of size [0-9]*' "$err")"
    check "$name: ASan places it as memtrace does" "$4" \
        "$(sed -n 's/^0x[0-9a-f]* is located \(.*\) region .*/\1/p' "$err")"
    check "$name: ASan's allocation site is memtrace's" "$(site_line "$src" "$5")" \
        "$(asan_line "$err" "$( [ $# -ge 6 ] && echo previously allocated || echo allocated) by thread T")"
    if [ $# -ge 6 ]; then
        check "$name: ASan's free site is memtrace's" "$(site_line "$src" "$6")" \
            "$(asan_line "$err" "freed by thread T")"
    fi
}

# ---------------------------------------------------------------- overflow by 1
run overflow1 overflow1
r=$work/overflow1.r
if report_to "$work/overflow1.err" "memtrace: heap-buffer-overflow:" "$r"; then
    check_head "overflow by 1" "$r" "memtrace: heap-buffer-overflow: 1 byte past the end of a 100-byte block at 0x..."
    check_site "overflow by 1" "$r" "  allocated by thread 1 (allocation #" overflow1_alloc
    check_site "overflow by 1" "$r" "  detected in free by thread 1 at:" overflow1_free
else
    fail "overflow by 1" "no report: $(cat "$work/overflow1.err")"
fi
status "overflow by 1: exit status 1 by default" 1
has "overflow by 1: the program goes on" "$work/overflow1.out" "heap_errors: done"
check "overflow by 1: reported once (not again by the quarantine)" 1 \
    "$(grep -c '^memtrace: ' "$work/overflow1.err")"
asan_run overflow1 overflow1
check_asan overflow1 heap-buffer-overflow 1 "0 bytes to the right of 100-byte" overflow1_alloc

# ---------------------------------------------------------------- overflow by many
run many overflow_many MEMTRACE_REDZONE=64
r=$work/many.r
if report_to "$work/many.err" "memtrace: heap-buffer-overflow:" "$r"; then
    check_head "overflow by 40 (redzone 64)" "$r" "memtrace: heap-buffer-overflow: 40 bytes past the end of a 100-byte block at 0x..."
    check_site "overflow by 40" "$r" "  allocated by thread 1 (allocation #" many_alloc
    check_site "overflow by 40" "$r" "  detected in free by thread 1 at:" many_free
else
    fail "overflow by 40" "no report: $(cat "$work/many.err")"
fi
asan_run many overflow_many
check_asan many heap-buffer-overflow 40 "0 bytes to the right of 100-byte" many_alloc
# The default redzone (16 bytes) sees the first 16 of them.
run many16 overflow1 MEMTRACE_REDZONE=1
report_to "$work/many16.err" "memtrace: heap-buffer-overflow:" "$work/many16.r" &&
    check_head "overflow by 1, redzone 1" "$work/many16.r" "memtrace: heap-buffer-overflow: at least 1 byte past the end of a 100-byte block at 0x..."

# ---------------------------------------------------------------- write after free
run uaf after_free
r=$work/uaf.r
if report_to "$work/uaf.err" "memtrace: write-after-free:" "$r"; then
    check_head "write after free" "$r" "memtrace: write-after-free: 4 bytes at offset 8 of a freed 64-byte block at 0x..."
    check_site "write after free" "$r" "  allocated by thread 1 (allocation #" uaf_alloc
    check_site "write after free" "$r" "  freed by thread 1 (after allocation #" uaf_free
    if section "$r" "  detected in quarantine by thread 1 at:" | grep -qE "^  #1 .* at (.*/)?$src:$(site_line "$src" uaf_churn)(:|\$)"; then
        pass "write after free: detected as it left the quarantine, in churn (SITE:uaf_churn)"
    else
        fail "write after free" "not detected in the quarantine from churn: $(cat "$r")"
    fi
else
    fail "write after free" "no report: $(cat "$work/uaf.err")"
fi
status "write after free: exit status" 1
asan_run uaf after_free
check_asan uaf heap-use-after-free 4 "8 bytes inside of 64-byte" uaf_alloc uaf_free

# ---------------------------------------------------------------- realloc of a damaged block
run realloc realloc
r=$work/realloc.r
if report_to "$work/realloc.err" "memtrace: heap-buffer-overflow:" "$r"; then
    check_head "realloc of a damaged block" "$r" "memtrace: heap-buffer-overflow: 3 bytes past the end of a 50-byte block at 0x..."
    check_site "realloc of a damaged block" "$r" "  allocated by thread 1 (allocation #" realloc_alloc
    check_site "realloc of a damaged block" "$r" "  detected in realloc by thread 1 at:" realloc_call
else
    fail "realloc of a damaged block" "no report: $(cat "$work/realloc.err")"
fi
asan_run realloc realloc
check_asan realloc heap-buffer-overflow 3 "0 bytes to the right of 50-byte" realloc_alloc

# ---------------------------------------------------------------- never freed: found at exit
run exit at_exit
r=$work/exit.r
if report_to "$work/exit.err" "memtrace: heap-buffer-overflow:" "$r"; then
    check_head "damaged block never freed" "$r" "memtrace: heap-buffer-overflow: 1 byte at offset 31, 1 byte past the end of a 30-byte block at 0x..."
    check_site "damaged block never freed" "$r" "  allocated by thread 1 (allocation #" exit_alloc
    has "damaged block never freed: found at exit" "$r" "  detected in exit by thread 1"
else
    fail "damaged block never freed" "no report: $(cat "$work/exit.err")"
fi
status "damaged block never freed: exit status" 1
asan_run exit at_exit
check_asan exit heap-buffer-overflow 1 "1 bytes to the right of 30-byte" exit_alloc

# ---------------------------------------------------------------- a thread's quarantine at its end
run thread thread
r=$work/thread.r
if report_to "$work/thread.err" "memtrace: write-after-free:" "$r"; then
    check_head "write after free in a thread" "$r" "memtrace: write-after-free: 1 byte at offset 0 of a freed 24-byte block at 0x..."
    check_site "write after free in a thread" "$r" "  allocated by thread 2 (allocation #" thread_alloc
    check_site "write after free in a thread" "$r" "  freed by thread 2 (after allocation #" thread_free
    has "write after free in a thread: found as the thread ended" "$r" "  detected in quarantine by thread 2"
else
    fail "write after free in a thread" "no report: $(cat "$work/thread.err")"
fi
asan_run thread thread
check_asan thread heap-use-after-free 1 "0 bytes inside of 24-byte" thread_alloc thread_free

# ---------------------------------------------------------------- fork
run fork fork
r=$work/fork.r
if report_to "$work/fork.err" "memtrace: write-after-free:" "$r"; then
    check_head "write after free in a forked child" "$r" "memtrace: write-after-free: 2 bytes at offset 0 of a freed 48-byte block at 0x..."
    check_site "write after free in a forked child" "$r" "  freed by thread 1 (after allocation #" fork_free
    has "write after free in a forked child: found at the child's exit" "$r" "  detected in exit by thread 1"
else
    fail "write after free in a forked child" "no report: $(cat "$work/fork.err")"
fi
has "forked child: its status says so" "$work/fork.out" "heap_errors: child status 1"
status "forked child's parent: nothing found, status 0" 0
check "forked child's parent: one report in all (the child's)" 1 "$(grep -c '^memtrace: ' "$work/fork.err")"

# ---------------------------------------------------------------- memtrace_check()
run check check
r=$work/check.r
if report_to "$work/check.err" "memtrace: heap-buffer-overflow:" "$r"; then
    check_head "memtrace_check()" "$r" "memtrace: heap-buffer-overflow: 2 bytes past the end of a 10-byte block at 0x..."
    check_site "memtrace_check()" "$r" "  allocated by thread 1 (allocation #" check_alloc
    check_site "memtrace_check()" "$r" "  detected in memtrace_check by thread 1 at:" check_call
else
    fail "memtrace_check()" "no report: $(cat "$work/check.err")"
fi
has "memtrace_check() returns the damaged blocks" "$work/check.out" "heap_errors: memtrace_check() = 1"
has "memtrace_check() reports a block once" "$work/check.out" "heap_errors: again 0"
check "memtrace_check(): one report in all (not at free, not at exit)" 1 \
    "$(grep -c '^memtrace: ' "$work/check.err")"

# ---------------------------------------------------------------- the families' contracts
run aligned aligned
has "aligned_alloc: the alignment kept, malloc_usable_size the size asked for" \
    "$work/aligned.out" "heap_errors: aligned yes, usable 100"
report_to "$work/aligned.err" "memtrace: heap-buffer-overflow:" "$work/aligned.r" &&
    check_site "aligned_alloc block overflowed" "$work/aligned.r" "  detected in free by thread 1 at:" aligned_free
run clean clean
status "every byte each family gives, used: no report" 0
check "every byte each family gives, used: nothing from memtrace" "" "$(cat "$work/clean.err")"
asan_run clean clean
check "every byte each family gives: ASan agrees" "0:" "$?:$(grep -o 'ERROR: AddressSanitizer' "$work/clean.asan.err")"

# ---------------------------------------------------------------- exit status and abort
run code7 overflow1 MEMTRACE_ERROR_EXITCODE=7
status "MEMTRACE_ERROR_EXITCODE=7" 7
run code0 overflow1 MEMTRACE_ERROR_EXITCODE=0
status "MEMTRACE_ERROR_EXITCODE=0 keeps the program's" 0
run abort overflow1 MEMTRACE_ON_ERROR=abort
status "MEMTRACE_ON_ERROR=abort" 134
has "MEMTRACE_ON_ERROR=abort: the report first" "$work/abort.err" \
    "memtrace: heap-buffer-overflow: 1 byte past the end of a 100-byte block at"
lacks "MEMTRACE_ON_ERROR=abort: at once" "$work/abort.out" "heap_errors: done"
# memtrace_on_error() is called after the report: gdb stops there.
timeout 60 gdb -q -batch -nx -ex "set env LD_PRELOAD=$lib" -ex "set breakpoint pending on" \
    -ex "break memtrace_on_error" -ex "run overflow1 2>$work/gdb.err" -ex "bt 3" "$prog" \
    >"$work/gdb.out" 2>&1
has "break memtrace_on_error stops after the report" "$work/gdb.out" \
    "Breakpoint 1, memtrace_on_error ()"
has "break memtrace_on_error: the report is out" "$work/gdb.err" "memtrace: heap-buffer-overflow:"

# ---------------------------------------------------------------- off, and bad values
run off overflow1 MEMTRACE_REDZONE=0
status "MEMTRACE_REDZONE=0: no redzone, no report" 0
check "MEMTRACE_REDZONE=0: nothing from memtrace" "" "$(cat "$work/off.err")"
run qoff after_free MEMTRACE_QUARANTINE=0
status "MEMTRACE_QUARANTINE=0: no quarantine, no report" 0
check "MEMTRACE_QUARANTINE=0: nothing from memtrace" "" "$(cat "$work/qoff.err")"
run badrz overflow1 MEMTRACE_REDZONE=-3
check "MEMTRACE_REDZONE=-3: one line, then the default" \
    'memtrace: MEMTRACE_REDZONE="-3" is not a whole number from 0 to 4096; using 16|memtrace: heap-buffer-overflow: 1 byte past the end of a 100-byte block at 0x...' \
    "$(grep '^memtrace:' "$work/badrz.err" | sed -E 's/0x[0-9a-f]+$/0x.../' | paste -sd'|')"
run badq overflow1 MEMTRACE_QUARANTINE=lots
has "MEMTRACE_QUARANTINE=lots: one line" "$work/badq.err" \
    'memtrace: MEMTRACE_QUARANTINE="lots" is not a whole number from 0 to 1099511627776; using 4194304'
run badon overflow1 MEMTRACE_ON_ERROR=explode
has "MEMTRACE_ON_ERROR=explode: one line" "$work/badon.err" \
    'memtrace: MEMTRACE_ON_ERROR="explode" is not one of continue, abort; using continue'
status "MEMTRACE_ON_ERROR=explode: goes on" 1
run badcode overflow1 MEMTRACE_ERROR_EXITCODE=300
has "MEMTRACE_ERROR_EXITCODE=300: one line" "$work/badcode.err" \
    'memtrace: MEMTRACE_ERROR_EXITCODE="300" is not a whole number from 0 to 255; using 1'
status "MEMTRACE_ERROR_EXITCODE=300: the default" 1

finish "heap errors"
