#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Guard pages (MEMTRACE_GUARD_SAMPLE=1, tests/progs/guard.c, one case per
# run): a read past the end, a write far past it, an underflow of a
# left-aligned block, a read and a write after free fault on the guard
# pages; memtrace's report names the kind, the access (read or write),
# the exact offset and size and the marked file:line of the access, the
# free and the allocation, and AddressSanitizer (the same program built
# with -fsanitize=address) reports the same error at the same sites. Then
# the fault takes its course: SIGSEGV's default (status 139, a core), or
# the program's own handler, set with sigaction, signal or signal's other
# names (bsd_signal, sysv_signal, strict ISO C's __sysv_signal, SysV's
# sigset; sigignore's SIG_IGN ends in the default action). Blocks of the
# pool behave as the allocator's (realloc, calloc, alignment,
# malloc_usable_size), and with the guard off nothing changes. The report
# is the heap errors' (report/format.h's mt_fmt_heap_error); the guard
# sees the first byte an access touched: "1 byte".
set -u
. "$(dirname "$0")/lib.sh"
lib=${MEMTRACE_LIB:-$build/libmemtrace.so}
prog=$tests/guard
asan=$tests/guard_asan
src=tests/progs/guard.c

run() { # NAME CASE [VAR=VALUE...]: status in RC, stderr in $work/NAME.err
    local name=$1 case=$2
    shift 2
    (cd "$work" && ulimit -c 0 && timeout 60 env LD_PRELOAD="$lib" MEMTRACE_GUARD_SAMPLE=1 "$@" \
        "$prog" "$case" >"$work/$name.out" 2>"$work/$name.err") 2>/dev/null
    RC=$?
}

# ASan's report of CASE in $work/NAME.asan.
run_asan() { # NAME CASE
    (cd "$work" && ASAN_OPTIONS=detect_leaks=0 timeout 60 "$asan" "$2" >/dev/null \
        2>"$work/$1.asan") 2>/dev/null
}

# The frames after the line starting with PREFIX in FILE, up to the next
# line that is not a frame.
section() { # FILE PREFIX
    awk -v p="$2" 'on && !/^ *#/ && !/^     inlined/ { exit }
                   on { print }
                   index($0, p) == 1 { on = 1 }' "$1"
}

# The first guard.c line in section PREFIX of FILE (memtrace's or ASan's
# frames), as "guard.c:LINE".
first_site() { # FILE PREFIX
    section "$1" "$2" | grep -oE "guard\.c:[0-9]+" | head -1
}

# Section PREFIX of memtrace's report in $work/NAME.err has #0 at the
# marked site, and ASan's section APREFIX names the same line first.
check_site() { # NAME PREFIX MARKER APREFIX [AMARKER]
    local name=$1 prefix=$2 marker=$3 aprefix=$4 line mt as
    line=$(site_line "$src" "$marker")
    mt=$(section "$work/$name.err" "$prefix" | head -1)
    if echo "$mt" | grep -qE "^  #0 .* at (.*/)?$src:$line:[0-9]+\$"; then
        pass "$name: '$prefix' #0 at guard.c:$line (SITE:$marker)"
    else
        fail "$name" "'$prefix' #0 is not at $src:$line: $(cat "$work/$name.err")"
    fi
    # ASan sees the access itself where memtrace sees its damage later:
    # then AMARKER names ASan's site.
    [ -n "${5:-}" ] && line=$(site_line "$src" "$5")
    as=$(first_site "$work/$name.asan" "$aprefix")
    check "$name: ASan's '$aprefix' is at guard.c:$line" "guard.c:$line" "$as"
}

first_line() { # NAME EXPECTED-PATTERN (ERE, the whole line)
    if head -1 "$work/$1.err" | grep -qE "^$2\$"; then
        pass "$1: $(head -1 "$work/$1.err" | sed 's/0x[0-9a-f]*$/0x.../')"
    else
        fail "$1" "first line is not /$2/: $(cat "$work/$1.err")"
    fi
}

# ASan's first line names KIND, its second the ACCESS of SIZE bytes, and
# its "located" line WHERE.
check_asan() { # NAME KIND ACCESS WHERE
    local f=$work/$1.asan
    if grep -q "ERROR: AddressSanitizer: $2 on address" "$f" && grep -q "^$3 of size 1 at" "$f" &&
        grep -qF "$4" "$f"; then
        pass "$1: ASan agrees: $2, $3, $4"
    else
        fail "$1: ASan" "not $2 / $3 / $4: $(head -30 "$f")"
    fi
}

default_end() { # NAME
    status "$1: SIGSEGV's default action" 139
    has "$1: says where the fault goes" "$work/$1.err" \
        "memtrace: the fault goes on to SIGSEGV's default action (the process ends, with a core where the limit allows)"
}

# ---------------------------------------------------------------- read past the end
run overflow overflow
run_asan overflow overflow
first_line overflow "memtrace: heap-buffer-overflow read: 1 byte past the end of a 64-byte block at 0x[0-9a-f]+"
check_site overflow "  detected in a fault on a guard page by thread 1 at:" read "READ of size 1"
check_site overflow "  allocated by thread 1 (allocation #" block "allocated by thread T0 here:"
check_asan overflow heap-buffer-overflow READ "is located 0 bytes to the right of 64-byte region"
default_end overflow

# ---------------------------------------------------------------- write far past the end
run overflow_far overflow_far
run_asan overflow_far overflow_far
first_line overflow_far "memtrace: heap-buffer-overflow write: 1 byte at offset 130, 2 bytes past the end of a 128-byte block at 0x[0-9a-f]+"
check_site overflow_far "  detected in a fault on a guard page by thread 1 at:" write "WRITE of size 1"
check_site overflow_far "  allocated by thread 1 (allocation #" block "allocated by thread T0 here:"
check_asan overflow_far heap-buffer-overflow WRITE "is located 2 bytes to the right of 128-byte region"
default_end overflow_far

# ---------------------------------------------------------------- underflow (left-aligned block)
run underflow underflow
run_asan underflow underflow
first_line underflow "memtrace: heap-buffer-underflow read: 1 byte before the start of a 64-byte block at 0x[0-9a-f]+000"
check_site underflow "  detected in a fault on a guard page by thread 1 at:" read "READ of size 1"
check_site underflow "  allocated by thread 1 (allocation #" block_again "allocated by thread T0 here:"
check_asan underflow heap-buffer-overflow READ "is located 1 bytes to the left of 64-byte region"
default_end underflow

# ---------------------------------------------------------------- use after free
for c in uaf_read uaf_write; do
    run $c $c
    run_asan $c $c
    access=${c#uaf_}
    ACCESS=$(echo "$access" | tr a-z A-Z)
    first_line $c "memtrace: use-after-free $access: 1 byte at offset 8 of a freed 64-byte block at 0x[0-9a-f]+"
    check_site $c "  detected in a fault on a guard page by thread 1 at:" "$access" "$ACCESS of size 1"
    check_site $c "  freed by thread 1 (after allocation #" "free_$access" "freed by thread T0 here:"
    check_site $c "  allocated by thread 1 (allocation #" block "previously allocated by thread T0 here:"
    check_asan $c heap-use-after-free "$ACCESS" "is located 8 bytes inside of 64-byte region"
    default_end $c
done

# ---------------------------------------------------------------- freed by another thread
run thread thread
run_asan thread thread
first_line thread "memtrace: use-after-free read: 1 byte at offset 16 of a freed 64-byte block at 0x[0-9a-f]+"
if section "$work/thread.err" '  freed by thread 2 "gw-freer" (after allocation #' | head -1 |
    grep -qE "^  #0 freer at (.*/)?$src:$(site_line "$src" free_thread):[0-9]+\$"; then
    pass "thread: freed by thread 2 \"gw-freer\" at guard.c:$(site_line "$src" free_thread)"
else
    fail "thread: the freeing thread" "$(cat "$work/thread.err")"
fi
check "thread: ASan's free is at the same line" "guard.c:$(site_line "$src" free_thread)" \
    "$(first_site "$work/thread.asan" "freed by thread T1 here:")"
check_site thread "  detected in a fault on a guard page by thread 1 at:" read "READ of size 1"
default_end thread

# ---------------------------------------------------------------- the rest of the page, at the free
for c in slack slack_left; do
    site=block
    [ $c = slack_left ] && site=block_again
    run $c $c
    run_asan $c $c
    first_line $c "memtrace: heap-buffer-overflow: 1 byte past the end of a 100-byte block at 0x[0-9a-f]+"
    check_site $c "  detected in free by thread 1 at:" free_slack "WRITE of size 1" write
    check_site $c "  allocated by thread 1 (allocation #" $site "allocated by thread T0 here:"
    check_asan $c heap-buffer-overflow WRITE "is located 0 bytes to the right of 100-byte region"
    status "$c: the program goes on, its status MEMTRACE_ERROR_EXITCODE's" 1
    has "$c: its output" "$work/$c.out" "guard: went on"
done

# ---------------------------------------------------------------- a core at the fault
(cd "$work" && mkdir -p core && cd core && ulimit -c unlimited &&
    timeout 60 env LD_PRELOAD="$lib" MEMTRACE_GUARD_SAMPLE=1 "$prog" uaf_write \
        >/dev/null 2>&1) 2>/dev/null
corefile=$(ls "$work"/core/core* 2>/dev/null | head -1)
if [ -z "$corefile" ]; then
    fail "core" "no core file in $work/core (core_pattern: $(cat /proc/sys/kernel/core_pattern))"
else
    gdb -q -batch -nx "$prog" "$corefile" -ex "bt 1" >"$work/core.bt" 2>&1
    line=$(site_line "$src" write)
    if grep -qE "write_at .*guard\.c:$line" "$work/core.bt"; then
        pass "core: dumped at the faulting write (guard.c:$line)"
    else
        fail "core" "its stack is not at guard.c:$line: $(cat "$work/core.bt")"
    fi
fi

# ---------------------------------------------------------------- the program's handlers
run handler handler
status "handler: the program's sigaction handler ran after the report" 42
has "handler: its output" "$work/handler.out" "guard: the program's own SIGSEGV handler ran"
first_line handler "memtrace: heap-buffer-overflow read: 1 byte past the end of a 64-byte block at 0x[0-9a-f]+"
has "handler: says where the fault goes" "$work/handler.err" \
    "memtrace: the fault goes on to the program's SIGSEGV handler"

run signal signal
status "signal: the program's signal() handler ran after the report" 43
has "signal: its output" "$work/signal.out" "guard: the program's signal() handler ran"
first_line signal "memtrace: use-after-free write: 1 byte at offset 8 of a freed 64-byte block at 0x[0-9a-f]+"
for how in bsd_signal sysv_signal iso_signal sigset; do # signal's other names
    run "$how" "$how"
    status "$how: the program's handler ran after the report" 43
    first_line "$how" "memtrace: use-after-free write: 1 byte at offset 8 of a freed 64-byte block at 0x[0-9a-f]+"
done

run sigignore sigignore
first_line sigignore "memtrace: use-after-free write: 1 byte at offset 8 of a freed 64-byte block at 0x[0-9a-f]+"
default_end sigignore

# ---------------------------------------------------------------- the pool's blocks as the allocator's
# ---------------------------------------------------------------- double free
# Reported as every double free (bad_frees.sh), then the program ends as
# without memtrace: glibc aborts on the second free (status 134).
run double_free double_free
first_line double_free "memtrace: double free of a 64-byte block at 0x[0-9a-f]+"
status "double_free: aborts as glibc does without memtrace" 134
check "double_free: the program does not go on" "" "$(cat "$work/double_free.out")"
(cd "$work" && ulimit -c 0 && timeout 60 "$prog" double_free >/dev/null 2>&1) 2>/dev/null
check "double_free: natively, glibc's abort too" 134 "$?"

run api api
status "api: realloc, calloc, alignment, malloc_usable_size on pool blocks" 0
has "api: its output" "$work/api.out" "guard: api ok"
check "api: no report" "" "$(cat "$work/api.err")"

# ---------------------------------------------------------------- off
run off overflow MEMTRACE_GUARD_SAMPLE=0
status "off: no fault past the end of a malloc block" 0
check "off: no report" "" "$(cat "$work/off.err")"
run bad overflow MEMTRACE_GUARD_SAMPLE=x
has "bad setting: one line" "$work/bad.err" \
    'MEMTRACE_GUARD_SAMPLE="x" is not a whole number from 0 to 1000000000; using 0'
status "bad setting: changes nothing" 0

# ---------------------------------------------------------------- memtrace run --check
mt=$build/memtrace
"$mt" run --check sh -c 'echo "$MEMTRACE_GUARD_SAMPLE $MEMTRACE_QUARANTINE $MEMTRACE_ON_ERROR"' \
    >"$work/check.env" 2>&1
check "run --check: its settings" "1 67108864 abort" "$(cat "$work/check.env")"
MEMTRACE_GUARD_SAMPLE=7 MEMTRACE_ON_ERROR=continue "$mt" run --check \
    sh -c 'echo "$MEMTRACE_GUARD_SAMPLE $MEMTRACE_QUARANTINE $MEMTRACE_ON_ERROR"' >"$work/check.env" 2>&1
check "run --check: the environment's settings win" "7 67108864 continue" "$(cat "$work/check.env")"
(cd "$work" && ulimit -c 0 && timeout 60 "$mt" run --check "$prog" uaf_read \
    >/dev/null 2>"$work/check.err") 2>/dev/null
RC=$?
status "run --check: a read after free aborts at once (MEMTRACE_ON_ERROR=abort)" 134
first_line check "memtrace: use-after-free read: 1 byte at offset 8 of a freed 64-byte block at 0x[0-9a-f]+"

finish guard
