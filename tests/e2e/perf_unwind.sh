#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The cfi unwinder's memo of the thread's last walk and the interning that
# trusts it (src/capture/capture_cfi.c): stacks that share frames' places
# with the last one but not what lies above them (tests/progs/perf_unwind.cpp:
# two call sites at one depth, C++ exceptions, longjmp, swapcontext
# coroutines, a signal handler, threads, a VLA).
#   - at the defaults, each mode's known blocks have exactly the frames of
#     their SITE: lines (print_trace, file:line of each frame);
#   - under MEMTRACE_UNWIND=check (every capture also made by libunwind, and
#     the interned ids compared), 0 mismatches, for the -O0 build and an
#     -O2 one (stack-pointer based frames, rbp a plain register).
set -u
. "$(dirname "$0")/lib.sh"
lib=$build/libmemtrace.so
src=tests/progs/perf_unwind.cpp
prog=$tests/perf_unwind
MODES="twosites exceptions longjmp coro signal threads vla"

# frames NAME FILE: "perf_unwind.cpp:LINE" (or the frame's text when not
# in that file) of each frame printed after the marker "@@ NAME", one a line.
frames() {
    awk -v m="@@ $1" '$0 == m { on = 1; next }
        on && /^memtrace: / { if (started) exit; next }
        on && /^  #[0-9]+ / { started = 1
            if (match($0, / at [^ ]*perf_unwind\.cpp:[0-9]+/)) {
                s = substr($0, RSTART + 4, RLENGTH - 4); sub(/.*\//, "", s); print s
            } else print $0
            next }
        on && started { exit }' "$2"
}

# expect NAME FILE SITE...: the first frames of NAME's block are at SITE...
# (a SITE written NAME*K stands for K frames at NAME).
expect() {
    local name=$1 file=$2 want="" s n k
    shift 2
    for s in "$@"; do
        n=1
        case $s in *'*'*) n=${s#*\*}; s=${s%\**} ;; esac
        for ((k = 0; k < n; k++)); do want+="perf_unwind.cpp:$(site_line $src "$s")"$'\n'; done
    done
    local count
    count=$(printf '%s' "$want" | wc -l)
    local got
    got=$(frames "$name" "$file" | head -n "$count")
    if [ "$got"$'\n' = "$want" ]; then
        pass "$name: $count frames at their SITE lines"
    else
        fail "$name" "frames differ; want:
$want
got:
$(frames "$name" "$file")"
    fi
}

cd "$root" || exit 1
for mode in $MODES; do
    timeout 120 env LD_PRELOAD="$lib" "$prog" "$mode" >"$work/$mode.out" 2>"$work/$mode.err"
    check "$mode: exit status" 0 $?
done

f=$work/twosites.err
expect twosites_a "$f" leaf mid site_a main_twosites
expect twosites_b "$f" leaf mid site_b main_twosites
f=$work/exceptions.err
expect exceptions_deepest "$f" thr_alloc 'thr_rec*20' ex_call main_exceptions
expect exceptions_after "$f" leaf mid ex_after main_exceptions
f=$work/longjmp.err
expect longjmp_deep "$f" dive_alloc 'dive_rec*30' lj_call main_longjmp
expect longjmp_after "$f" leaf mid lj_after main_longjmp
f=$work/coro.err
expect coro_mapped_inside "$f" leaf mid coro_alloc
expect coro_mapped_outside "$f" leaf mid coro_main coro_mapped main_coro
expect coro_array_inside "$f" leaf mid coro_alloc
expect coro_array_outside "$f" leaf mid coro_main coro_array coro_array_call main_coro
expect signal_handler "$work/signal.err" leaf mid sig_alloc
for i in 0 1 2 3; do
    expect thread${i}_a "$work/threads.err" leaf mid thr_a
    expect thread${i}_b "$work/threads.err" leaf mid thr_b
done
f=$work/vla.err
expect vla_a "$f" leaf mid vla_call vla_a vla_small main_vla
expect vla_b "$f" leaf mid vla_call vla_b vla_big main_vla

# Check mode, at -O0 and -O2.
o2=$work/perf_unwind_o2
if ! ${CXX:-g++} -O2 -g -pthread -Iinclude -o "$o2" "$src" -ldl 2>"$work/o2.log"; then
    fail "-O2 build" "$(head -5 "$work/o2.log")"
    o2=
fi
for mode in $MODES; do
    for bin in "$prog" $o2; do
        tag=$mode
        [ "$bin" = "$o2" ] && tag="$mode -O2"
        timeout 180 env LD_PRELOAD="$lib" MEMTRACE_UNWIND=check "$bin" "$mode" >/dev/null 2>"$work/check.err"
        rc=$?
        if [ $rc != 0 ]; then
            fail "$tag: check mode" "exit $rc: $(grep -v '^@@\|^  ' "$work/check.err" | tail -3)"
            continue
        fi
        unwind_check "$tag: check mode" "$work/check.err"
    done
done

finish perf_unwind
