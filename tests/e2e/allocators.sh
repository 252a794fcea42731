#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Entry points beyond the C allocator's: every form of operator new and
# delete on glibc, with jemalloc linked and with tcmalloc preloaded after
# memtrace; jemalloc's extended API; programs that probe for jemalloc,
# tcmalloc, C23 and operator new with weak symbols and find only memtrace;
# C23's sized frees passed on with their arguments, at once or deferred;
# the start-up word when an allocator comes before memtrace in LD_PRELOAD.
# Frames must name the exact file:line of the "SITE:<name>" markers. Prints
# one PASS/FAIL line per check and "allocators: N passed, N failed" last.
set -u
. "$(dirname "$0")/lib.sh"
lib=${MEMTRACE_LIB:-$build/libmemtrace.so}
helper=$root/gdb/memtrace.py
libdir=/usr/lib/x86_64-linux-gnu
jemalloc=$libdir/libjemalloc.so.2
tcmalloc=$libdir/libtcmalloc_minimal.so.4
X=tests/progs/cxx_forms.cpp
J=tests/progs/je_api.c

check_grep() { if grep -qF -- "$3" "$2"; then pass "$1"; else fail "$1" "'$3' not in $(cat "$2")"; fi; }

# run_gdb PROG PRELOAD OUT ERR STOP1_VARS -- STOP2_VARS: at checkpoint()
# prints "@@ VAR ADDR" and print_trace(VAR) for the first list; at
# checkpoint2() (if the second list is not empty) print_trace again for the
# second (the second answer about each address in ERR). Every call of memtrace's
# bad-free hook prints "@@ bad free PTR FOUND": the kinds recorded and
# forgotten must match (FOUND 0), and no block of the program's is missed
# (forgotten twice). Misses of other pointers are expected: the std::bad_alloc
# that the real operator new throws is allocated in its pass-through.
run_gdb() {
    local prog=$1 preload=$2 out=$3 err=$4
    shift 4
    local args=(-q -batch -nx -ex "set env LD_PRELOAD=$preload" -ex "set breakpoint pending on"
                -ex "set env MEMTRACE_QUARANTINE=${RUN_QUARANTINE:-4194304}"
                -ex "dprintf mt_bad_free,\"@@ bad free %p %p\\n\", ptr, found" -ex "break checkpoint"
                -ex "break checkpoint2" -ex "run 2>$err" -ex "source $helper")
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        args+=(-ex "printf \"@@ $1 %p\\n\", (void *)$1" -ex "call print_trace($1)"
               -ex "echo @@cmd $1\\n" -ex "memtrace $1" -ex "echo @@end\\n")
        shift
    done
    [ "${1:-}" = "--" ] && shift
    if [ $# -gt 0 ]; then
        args+=(-ex "continue")
        while [ $# -gt 0 ]; do args+=(-ex "call print_trace($1)"); shift; done
    fi
    args+=(-ex "continue")
    timeout 120 gdb "${args[@]}" "$prog" >"$out" 2>&1
}
# bad_frees OUT VARS...: the hook's calls that are a mismatch or a miss of
# one of VARS' blocks.
bad_frees() {
    local out=$1 v addrs=""
    shift
    for v in "$@"; do addrs="$addrs $(addr_of "$v" "$out")"; done
    awk -v addrs="$addrs" 'BEGIN { n = split(addrs, a, " "); for (i = 1; i <= n; i++) ours[a[i]] = 1 }
        $1 == "@@" && $2 == "bad" && (($5 != "0x0" && $5 != "(nil)") || ($4 in ours))' "$out"
}
# nth_answer ADDR FILE N: the Nth answer about ADDR in FILE (block_of's
# lines), without the history of the address that may follow a live block.
nth_answer() {
    awk -v a="memtrace: $1:" -v n="$3" 'index($0, a) == 1 { k++; on = (k == n); if (on) print; next }
        /^memtrace: / || !/^  / || /^  live again/ { on = 0 } on' "$2"
}
cmd_block() { awk -v v="$1" '$0 == "@@cmd " v { on = 1; next } /^@@end/ { on = 0 } on' "$2"; }

# check_block NAME OUT ERR VAR SRC MARKER SIZE: print_trace and the gdb
# command both say VAR is the start of a SIZE-byte block ("" for any size)
# whose frame #0 is main at the marker's line.
check_block() {
    local name=$1 out=$2 err=$3 var=$4 src=$5 marker=$6 size=$7 addr text frame
    addr=$(addr_of "$var" "$out")
    frame="  #0 main at $(at "$src" "$marker")"
    text=$(nth_answer "$addr" "$err" 1)
    local head="memtrace: $addr: start of a ${size:+$size-byte }"
    [ -n "$size" ] || head="memtrace: $addr: start of a "
    if [[ -n "$addr" && "$text" == "$head"* ]] && grep -qF -- "$frame" <<<"$text" &&
       [ "$(grep -c '^  #0 ' <<<"$text")" = 1 ] && [[ "$(grep '^  #0 ' <<<"$text")" == "$frame"* ]]; then
        pass "$name: print_trace($var): ${size:+$size bytes, }frame #0 at $(at "$src" "$marker")"
    else
        fail "$name: print_trace($var)" "expected '$head...' and '$frame' in:
$text"
    fi
    text=$(cmd_block "$var" "$out")
    if grep -qF -- "$frame" <<<"$text" && [[ "$(grep '^  #0 ' <<<"$text")" == "$frame"* ]]; then
        pass "$name: memtrace $var: frame #0 at $(at "$src" "$marker")"
    else
        fail "$name: memtrace $var" "expected '$frame' in:
$text"
    fi
}

# allocation_number ERR ADDR
allocation_number() {
    nth_answer "$2" "$1" 1 | sed -n '1s/.*(allocation #\([0-9]*\)).*/\1/p'
}

# ---------------------------------------------------------------- operator new and delete
forms="g_new g_new_nt g_new_al g_new_al_nt g_newa g_newa_nt g_newa_al g_newa_al_nt"
all="$forms g_expr g_expr_al g_expr_arr g_after_throw"
for variant in glibc jemalloc tcmalloc; do
    case $variant in
    glibc) prog=$tests/cxx_forms preload=$lib ;;
    jemalloc) prog=$tests/cxx_forms_je preload=$lib ;;
    tcmalloc) prog=$tests/cxx_forms preload="$lib $tcmalloc" ;;
    esac
    out=$work/cxx.$variant.out err=$work/cxx.$variant.err
    # shellcheck disable=SC2086
    run_gdb "$prog" "$preload" "$out" "$err" $all -- $all
    size=301
    for v in $forms; do
        check_block "$variant" "$out" "$err" "$v" $X "${v#g_}" $size
        size=$((size + 1))
    done
    check_block "$variant" "$out" "$err" g_expr $X expr 104
    check_block "$variant" "$out" "$err" g_expr_al $X expr_al 64
    check_block "$variant" "$out" "$err" g_expr_arr $X expr_arr 312
    # after a std::bad_alloc thrown through memtrace, the next new is traced
    check_block "$variant" "$out" "$err" g_after_throw $X after_throw 313
    # one record per new: eight calls in a row, eight consecutive numbers
    first=$(allocation_number "$err" "$(addr_of g_new "$out")")
    n=$first ok=1
    for v in $forms; do
        [ "$(allocation_number "$err" "$(addr_of "$v" "$out")")" = "$n" ] || ok=0
        n=$((n + 1))
    done
    if [ -n "$first" ] && [ $ok = 1 ]; then
        pass "$variant: each block recorded once (allocations #$first to #$((n - 1)))"
    else
        fail "$variant: each block recorded once" "numbers not consecutive: $(grep 'allocation #' "$err" | head -8)"
    fi
    # every delete form forgot its block, once, with the right kind
    live="" asked=0
    for v in $all; do
        a=$(addr_of "$v" "$out")
        after=$(nth_answer "$a" "$err" 2)
        [ -n "$after" ] && asked=$((asked + 1))
        grep -qF "memtrace: $a: not a live heap block" <<<"$after" || live="$live $v"
    done
    if [ $asked = 12 ] && [ -z "$live" ]; then
        pass "$variant: every delete form removes its block"
    else
        fail "$variant: every delete form removes its block" "still live:$live"
    fi
    # shellcheck disable=SC2086
    bad=$(bad_frees "$out" $all g_sized g_sized_al g_arr_sized g_arr_sized_al)
    if [ -n "$bad" ]; then
        fail "$variant: no free reported bad" "$bad"
    else
        pass "$variant: no free reported bad (kinds match, nothing forgotten twice)"
    fi
    check_grep "$variant: bad_alloc thrown through memtrace, nothrow NULL" "$out" \
        "cxx_forms: bad_alloc thrown, nothrow NULL"
    check_grep "$variant: runs to a normal exit" "$out" "exited normally]"
done

# ---------------------------------------------------------------- jemalloc's API
out=$work/je.out err=$work/je.err
# Without the quarantine, which would keep the freed address from mallocx.
RUN_QUARANTINE=0 run_gdb "$tests/je_api" "$lib" "$out" "$err" g_q g_x g_r g_d
check_grep "mallocx/sdallocx/mallocx: the same address" "$out" "je_api: same address yes"
check_block "mallocx after sdallocx" "$out" "$err" g_q $J q 96
# the live block's own frames, before the history of the address
if nth_answer "$(addr_of g_q "$out")" "$err" 1 | grep -qF "$(at $J p)"; then
    fail "mallocx after sdallocx: not the freed block's site" "$(at $J p) named"
else
    pass "mallocx after sdallocx: not the freed block's site"
fi
# sdallocx removed p's record: the address's history names its free
if block_of "$(addr_of g_q "$out")" "$err" | sed -n '/^  live again/,$p' | grep -qF "  #0 main at $(at $J sdallocx)"; then
    pass "sdallocx: the freed block is in the address's history, freed at $(at $J sdallocx)"
else
    fail "sdallocx: the freed block is in the address's history" "$(block_of "$(addr_of g_q "$out")" "$err")"
fi
xsize=$(sed -n 's/^je_api: xallocx size //p' "$out")
check_block "xallocx" "$out" "$err" g_x $J x "$xsize"
check_block "rallocx" "$out" "$err" g_r $J rallocx 40000
a=$(addr_of g_d "$out")
if [ -n "$a" ] && block_of "$a" "$err" | head -1 | grep -q "not a live heap block"; then
    pass "dallocx: the block is no longer live"
else
    fail "dallocx: the block is no longer live" "$(block_of "$a" "$err")"
fi
bad=$(bad_frees "$out" g_q g_x g_r g_d)
if [ -n "$bad" ]; then fail "jemalloc API: no free reported bad" "$bad"
else pass "jemalloc API: no free reported bad"; fi

# ---------------------------------------------------------------- probing programs
native=$("$tests/alloc_probe" 2>&1)
check_grep "probe, native: finds nothing, works" <(echo "$native") "alloc_probe: ok"
for below in none tcmalloc; do
    if [ $below = none ]; then preload=$lib; else preload="$lib $tcmalloc"; fi
    got=$(LD_PRELOAD="$preload" "$tests/alloc_probe" 2>&1)
    rc=$?
    if [ $rc = 0 ] && grep -qx "alloc_probe: ok" <<<"$got" &&
       [ "$(grep -c 'used$' <<<"$got")" = 4 ]; then
        pass "probe under memtrace, below it $below: every API found works"
    else
        fail "probe under memtrace, below it $below" "exit $rc: $got"
    fi
done

# ---------------------------------------------------------------- frees with arguments, deferred
# The allocator below memtrace gets the program's arguments (the size with
# the redzone added), whether the free is made at once or when the block
# leaves the quarantine (the ring keeps the call apart from the slot).
for q in 0 4194304; do
    got=$(MEMTRACE_REDZONE=16 MEMTRACE_QUARANTINE=$q \
          LD_PRELOAD="$lib $tests/libnext_args.so" "$tests/next_args" 2>&1)
    check "free_sized, free_aligned_sized with MEMTRACE_QUARANTINE=$q: the arguments below" \
        "next_args: free_sized 116 0
next_args: free_aligned_sized 64 144
next_args: done" "$got"
done

# ---------------------------------------------------------------- overflows found at delete
# A redzone damaged when delete[] or delete frees the block: the report
# names the call that found it.
LD_PRELOAD="$lib" "$tests/cxx_forms" overflow >/dev/null 2>"$work/overflow.err"
RC=$?
status "overflows found at delete" 1
for form in "delete[]:overflow_arr" "delete:overflow_one"; do
    call=${form%%:*}
    got=$(grep -A1 -F -x "  detected in $call by thread 1 at:" "$work/overflow.err" | sed -n 2p)
    if grep -qE "^  #0 .* at (.*/)?tests/progs/cxx_forms.cpp:$(site_line tests/progs/cxx_forms.cpp "${form#*:}")(:|\$)" <<<"$got"; then
        pass "overflow found at $call: 'detected in $call', #0 at its line"
    else
        fail "overflow found at $call" "$(cat "$work/overflow.err")"
    fi
done

# ---------------------------------------------------------------- memtrace not first
LD_PRELOAD="$jemalloc $lib" "$tests/cxx_forms" >"$work/late.out" 2>"$work/late.err"
check_grep "jemalloc before memtrace: one word at start-up" "$work/late.err" \
    "memtrace: malloc here is $jemalloc's, not memtrace's: the program's allocations go untraced; put libmemtrace.so first in LD_PRELOAD"
if [ "$(grep -c '^memtrace: ' "$work/late.err")" = 1 ]; then pass "jemalloc before memtrace: said once"
else fail "jemalloc before memtrace: said once" "$(cat "$work/late.err")"; fi
check_grep "jemalloc before memtrace: the program runs" "$work/late.out" "cxx_forms: done"
LD_PRELOAD="$lib $jemalloc" "$tests/cxx_forms" >/dev/null 2>"$work/first.err"
if grep -q "not memtrace's" "$work/first.err" "$work/cxx.glibc.err"; then
    fail "memtrace first: no word" "$(cat "$work/first.err")"
else
    pass "memtrace first (glibc, jemalloc after it): no word"
fi

finish allocators
