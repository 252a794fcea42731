#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# What a program tells memtrace through include/memtrace.h: its own pool's
# blocks (memtrace_malloclike, memtrace_freelike), leak checks when it
# asks (memtrace_leak_check), ignored blocks and root regions, and
# memtrace_running; against valgrind's client requests on the same
# program (tests/progs/live_api_pool.c built with -DVALGRIND_TWIN) for the
# pool's leak verdicts: exact bytes and blocks, as valgrind's memcheck.
set -u
. "$(dirname "$0")/lib.sh"
tracer=$build/libmemtrace.so
profiler=$build/libmemtrace-profiler.so
prog=$tests/live_api_pool
src=tests/progs/live_api_pool.c

# "D/N I/M P/K R/L" from each of memtrace's summary lines in FILE.
ours() {
    awk '/^memtrace: leaks: [0-9]+ bytes definitely/ { print $3 "/" $8, $10 "/" $15, $17 "/" $22, $24 "/" $29 }' "$1"
}
# The same from each of valgrind's LEAK SUMMARYs in FILE.
theirs() {
    tr -d , <"$1" | awk '
        /definitely lost:/ { d = $4 "/" $7 } /indirectly lost:/ { i = $4 "/" $7 }
        /possibly lost:/ { p = $4 "/" $7 } /still reachable:/ { print d, i, p, $4 "/" $7 }'
}

# ---- the pool's verdicts, as valgrind's
if ! command -v valgrind >/dev/null || [ ! -f /usr/include/valgrind/valgrind.h ]; then
    fail "valgrind" "not installed (make deps installs it)"
else
    gcc -O0 -g -Wall -Wextra -DVALGRIND_TWIN "$root/$src" -o "$work/pool_vg"
    timeout 120 valgrind --leak-check=full "$work/pool_vg" pool >"$work/vg.out" 2>"$work/vg.err"
    theirs "$work/vg.err" >"$work/vg.sum"
    check "valgrind's twin: three leak checks" 3 "$(wc -l <"$work/vg.sum")"
    for lib in tracer profiler; do
        so=$tracer
        [ $lib = profiler ] && so=$profiler
        RC=0
        timeout 60 env MEMTRACE_LEAK_CHECK=1 MEMTRACE_LEAK_EXITCODE=0 LD_PRELOAD=$so \
            "$prog" pool >"$work/$lib.out" 2>"$work/$lib.err" || RC=$?
        status "$lib: pool" 0
        check "$lib: memtrace_leak_check's returns, twice, as valgrind's COUNT_LEAKS" \
            "$(cat "$work/vg.out")" "$(cat "$work/$lib.out")"
        check "$lib: memtrace_leak_check's returns: 160+32+48+24 bytes, then 40 more" \
            "check 1: 264 bytes lost
check 2: 304 bytes lost" "$(cat "$work/$lib.out")"
        ours "$work/$lib.err" >"$work/$lib.sum"
        # The two checks the program asks for, whole: lost, possibly lost,
        # still reachable (the pool's storage is neither: valgrind drops it).
        check "$lib: the checks now: definitely/indirectly/possibly lost, reachable, as valgrind" \
            "$(head -2 "$work/vg.sum")" "$(head -2 "$work/$lib.sum")"
        # At exit valgrind's libc has freed its stdio buffers: not reachable.
        check "$lib: the check at exit: definitely/indirectly/possibly lost, as valgrind" \
            "$(sed -n 3p "$work/vg.sum" | cut -d' ' -f1-3)" "$(sed -n 3p "$work/$lib.sum" | cut -d' ' -f1-3)"
        lacks "$lib: no block of the pool is damaged or has a redzone" "$work/$lib.err" "damaged"
        lacks "$lib: no redzone report for a pool block" "$work/$lib.err" "heap-buffer-overflow"
    done
fi

# ---- print_trace of a pool block: the malloclike caller's file:line
RC=0
LD_PRELOAD=$tracer "$prog" trace >"$work/trace.out" 2>"$work/trace.err" || RC=$?
status "print_trace of a pool block" 0
second=$(addr_of second "$work/trace.out")
check "print_trace of a pool block: its size, then memtrace_malloclike's caller" \
    "memtrace: $second: start of a 24-byte block allocated by thread 1 (allocation #3)
  #0 pool_alloc at $src:$(site_line $src pool_alloc):5" \
    "$(block_of "$second" "$work/trace.err" | head -2)"

# ---- ignored blocks and root regions change the verdicts
RC=0
LD_PRELOAD=$tracer "$prog" ignore >"$work/ignore.out" 2>"$work/ignore.err" || RC=$?
status "ignore and root regions" 0
check "ignore_object and root regions: the lost bytes of each check" \
    "check lost: 64
check ignored: 0
check unscanned: 64
check rooted: 0
check unrooted: 64" "$(cat "$work/ignore.out")"
lacks "ignore and root regions: no warning" "$work/ignore.err" "memtrace: memtrace_"

# ---- the same verdicts from outside: gdb's `memtrace leaks` after each
# check (at asked(N), the stack below scrubbed) and on a core written
# after the ignore; "D/N I/M" of each answer against the check inside.
# Without the program's tables read from outside, the ignored pair is lost
# at 2 and 4 and the region's pair at 4.
gdbargs=(-ex "break asked" -ex "run")
for i in 1 2 3 4 5; do
    gdbargs+=(-ex "echo @@ hit $i\\n" -ex "memtrace leaks" -ex "echo @@ end\\n")
    [ $i = 2 ] && gdbargs+=(-ex "gcore $work/ignored.core" -ex "up" -ex "echo @@ refs\\n" \
        -ex 'eval "memtrace refs %lu", (long)hidden ^ 0xffff' -ex "echo @@ end\\n")
    gdbargs+=(-ex "continue")
done
timeout 120 gdb -q -batch -nx -ex "set env LD_PRELOAD=$tracer" -ex "source $root/gdb/memtrace.py" \
    "${gdbargs[@]}" --args "$prog" ignore >"$work/ignore.gdb" 2>&1
dn() { awk '/^memtrace: leaks: [0-9]+ bytes definitely/ { print $3 "/" $8, $10 "/" $15 }'; }
inside=$(awk '/^@@ (hit|refs)/ { on = 1; next } /^@@ end/ { on = 0; next } !on' "$work/ignore.gdb" | dn | tr '\n' ' ')
outside=$(awk '/^@@ hit/ { on = 1; next } /^@@ end/ { on = 0 } on' "$work/ignore.gdb" | dn | tr '\n' ' ')
check "gdb: the checks inside, lost/ignored/unscanned/rooted/unrooted" "$inside" \
    "32/1 32/1 0/0 0/0 32/1 32/1 0/0 0/0 32/1 32/1 "
check "gdb: memtrace leaks after each, the same verdicts" "$outside" "$inside"
# memtrace's own data (its tables of ignored blocks) is no root from outside either.
check "gdb: memtrace refs of the ignored block: no place holds it" \
    "memtrace: refs: 0 places (no root or block the scan sees points into it)" \
    "$(awk '/^@@ refs/ { on = 1; next } /^@@ end/ { on = 0 } on' "$work/ignore.gdb" | grep '^memtrace: refs: [0-9]* place')"
timeout 120 "$build/memtrace" core -batch -ex "memtrace leaks" -- "$prog" "$work/ignored.core" \
    >"$work/ignored.core.out" 2>&1
check "core written after the ignore: the ignored pair is not lost" \
    "$(dn <"$work/ignored.core.out")" "0/0 0/0"
rm -f "$work/ignored.core"

# ---- without memtrace: the same binary runs, every call a no-op
RC=0
"$prog" running >"$work/plain.out" 2>"$work/plain.err" || RC=$?
status "without memtrace: every API function callable" 0
check "without memtrace: memtrace_running() 0, every call 0 or nothing" \
    "running 0
stats live_blocks>=0 1
recording 0
version none
check 0
tag 0 0
leak_check 0" "$(cat "$work/plain.out")"
check "without memtrace: nothing on stderr" "" "$(cat "$work/plain.err")"
RC=0
LD_PRELOAD=$tracer "$prog" running >"$work/under.out" 2>"$work/under.err" || RC=$?
status "under memtrace: running" 0
check "under memtrace: memtrace_running() 1" "running 1" "$(head -1 "$work/under.out")"
check "under memtrace: nothing lost, the tag scope entered and left" "tag 0 0
leak_check 0" "$(tail -2 "$work/under.out")"
RC=0
LD_PRELOAD=$profiler "$prog" running >"$work/prof.out" 2>"$work/prof.err" || RC=$?
check "under the profiler: memtrace_running() 1" "running 1" "$(head -1 "$work/prof.out")"

# ---- bad input: one line each, no crash, nothing lost
RC=0
LD_PRELOAD=$tracer "$prog" bad >"$work/bad.out" 2>"$work/bad.err" || RC=$?
status "bad input: the bad frees are errors (MEMTRACE_ERROR_EXITCODE)" 1
wild=$(addr_of wild "$work/bad.err")
check "freelike of a wild address: one bad free, at its caller" \
    "memtrace: memtrace_freelike of $wild, which no block memtrace knows starts at
  memtrace_freelike by thread 1 at:
  #0 pool_free at $src:$(site_line $src pool_free):5" \
    "$(grep -A2 '^memtrace: memtrace_freelike of' "$work/bad.err")"
check "ignore_object of a non-block: one line" \
    "memtrace: memtrace_ignore_object: $wild is in no live block memtrace knows; nothing ignored" \
    "$(grep '^memtrace: memtrace_ignore_object' "$work/bad.err")"
check "overlapping root regions: one line" 1 \
    "$(grep -c '^memtrace: memtrace_register_root_region: \[0x[0-9a-f]*, 0x[0-9a-f]*) overlaps the region \[0x[0-9a-f]*, 0x[0-9a-f]*) registered before; both are scanned$' "$work/bad.err")"
check "unregister of an unknown region: one line" 1 \
    "$(grep -c '^memtrace: memtrace_unregister_root_region: \[0x[0-9a-f]*, 0x[0-9a-f]*) was never registered with this address and size; nothing removed$' "$work/bad.err")"
check "free() of a pool block: a mismatched free, at the free's line" \
    "memtrace: free of a 24-byte block allocated by memtrace_malloclike at
  free by thread 1 at:
  #0 mode_bad at $src:$(site_line $src free_pool_block):5" \
    "$(grep -A2 '^memtrace: free of a 24-byte' "$work/bad.err" | sed 's/ at 0x[0-9a-f]*$/ at/')"
check "free() of a pool block: never freed, still a block" 1 \
    "$(grep -c '^memtrace: 0x[0-9a-f]*: start of a 24-byte block' "$work/bad.err")"
check "bad input: the leak check after it: nothing lost" "@@ lost 0" "$(grep '^@@ lost' "$work/bad.err")"
check "bad input: no other memtrace line (the 5 above, print_trace, the leak check's 2)" 8 "$(grep -c '^memtrace: ' "$work/bad.err")"

finish live_api
