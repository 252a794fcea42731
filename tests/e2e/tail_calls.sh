#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Tail-call frames: wrappers built with -O2 whose last act is the allocation
# jump to it and leave no frame; memtrace rebuilds them from the DWARF call
# sites and marks them "(tail call)". Checked, with the exact file:line of
# each "SITE:<name>" marker, in print_trace's answer, the gdb command's
# answer (memtrace-symbolize), the profiler's exit report and its folded
# stacks; where chains are ambiguous nothing may be invented. gdb's own bt
# at a breakpoint in malloc is the oracle: every frame it shows above the
# allocation function must be in memtrace's answer, in the same order.
set -u
. "$(dirname "$0")/lib.sh"
lib=${MEMTRACE_LIB:-$build/libmemtrace.so}
plib=${MEMTRACE_PROFILER_LIB:-$build/libmemtrace-profiler.so}
helper=$root/gdb/memtrace.py
C=tests/progs/tail_calls.c
X=tests/progs/tail_calls_cxx.cpp
cd "$root" || exit 1

# check_frames NAME TEXT LINE...: the frame lines of TEXT start with the
# LINEs, in this order and with nothing between them (a line
# "  #0 f at FILE:LINE:" matches FILE:LINE exactly, its column aside).
check_frames() {
    local name=$1 text=$2
    shift 2
    local got want i=0 l
    got=$(printf '%s\n' "$text" | grep '^  #' | head -$#)
    want=$(printf '%s\n' "$@")
    local ok=1
    while IFS= read -r l; do
        i=$((i + 1))
        [[ "$l" == "$(sed -n "${i}p" <<<"$want")"* ]] || ok=0
    done <<<"$got"
    if [ $ok = 1 ] && [ "$i" = $# ]; then
        pass "$name"
    else
        fail "$name" "frames do not start with:
$want
in:
$text"
    fi
}
check_no_tail() { # NAME TEXT
    if grep -q "(tail call)" <<<"$2"; then fail "$1" "a tail-call frame invented: $2"; else pass "$1"; fi
}

# The expected frames of each block of the C program, innermost first.
c_expect() { # VAR
    case $1 in
    g_xmalloc) echo "  #0 xmalloc at $(at $C xmalloc)*(tail call)|  #1 main at $(at $C call_xmalloc)" ;;
    g_pool) echo "  #0 xmalloc at $(at $C xmalloc)*(tail call)|  #1 pool_get at $(at $C pool_get)*(tail call)|  #2 main at $(at $C call_pool)" ;;
    g_either) echo "  #0 main at $(at $C call_either)" ;;
    g_choose) echo "  #0 xmalloc at $(at $C xmalloc)*(tail call)|  #1 main at $(at $C call_choose)" ;;
    g_plain) echo "  #0 plain at $(at $C plain)|  #1 main at $(at $C call_plain)" ;;
    esac
}
# memtrace interposes operator new itself: the frames its caller's tail
# calls left off come first.
x_expect() {
    case $1 in
    g_node) echo "  #0 make_node() at $(at $X new_node)*(tail call)|  #1 main at $(at $X call_make)" ;;
    g_pooled) echo "  #0 make_node() at $(at $X new_node)*(tail call)|  #1 pool_take() at $(at $X pool_take)*(tail call)|  #2 main at $(at $X call_pool_take)" ;;
    esac
}

# check_block NAME TEXT EXPECTED: EXPECTED is "|"-separated frame lines,
# "*" standing for the column and anything up to the mark.
check_block() {
    local name=$1 text=$2 exp=$3 got ok=1 i=0 pat
    IFS='|' read -r -a pats <<<"$exp"
    mapfile -t got < <(printf '%s\n' "$text" | grep '^  #')
    for pat in "${pats[@]}"; do
        local l=${got[$i]:-}
        i=$((i + 1))
        if [[ "$pat" == *"*(tail call)" ]]; then
            [[ "$l" == "${pat%\*(tail call)}"*" (tail call)" ]] || ok=0
        else
            [[ "$l" == "$pat"* && "$l" != *"(tail call)" ]] || ok=0
        fi
    done
    if [ $ok = 1 ]; then pass "$name"; else fail "$name" "expected frames '$exp' in:
$text"; fi
}

# ---------------------------------------------------------------- print_trace and the gdb command
run_both() { # PROG OUT ERR VARS...
    local prog=$1 out=$2 err=$3
    shift 3
    local args=(-q -batch -nx -ex "set env LD_PRELOAD=$lib" -ex "break checkpoint"
                -ex "run 2>$err" -ex "source $helper")
    local v
    for v in "$@"; do
        args+=(-ex "printf \"@@ $v %p\\n\", (void *)$v" -ex "call print_trace($v)"
               -ex "echo @@cmd $v\\n" -ex "memtrace $v" -ex "echo @@end\\n")
    done
    timeout 120 gdb "${args[@]}" -ex continue "$prog" >"$out" 2>&1
}
cmd_block() { awk -v v="$1" '$0 == "@@cmd " v { on = 1; next } /^@@end/ { on = 0 } on' "$2"; }

for prog in c x; do
    if [ $prog = c ]; then bin=$tests/tail_calls vars="g_xmalloc g_pool g_either g_choose g_plain"
    else bin=$tests/tail_calls_cxx vars="g_node g_pooled"; fi
    out=$work/$prog.out err=$work/$prog.err
    # shellcheck disable=SC2086
    run_both "$bin" "$out" "$err" $vars
    for v in $vars; do
        exp=$(${prog}_expect "$v")
        a=$(addr_of "$v" "$out")
        check_block "print_trace $v" "$(block_of "$a" "$err")" "$exp"
        check_block "memtrace $v (gdb command)" "$(cmd_block "$v" "$out")" "$exp"
    done
done
check_no_tail "print_trace g_either: ambiguous chains, no frame invented" \
    "$(block_of "$(addr_of g_either "$work/c.out")" "$work/c.err")"
check_no_tail "print_trace g_plain: no tail call, no mark" \
    "$(block_of "$(addr_of g_plain "$work/c.out")" "$work/c.err")"

# ---------------------------------------------------------------- gdb's bt as the oracle
# Stops in memtrace's allocation function at each marked size and takes the
# first bt (the next stop is the real allocator's, below memtrace).
# bt_frames FILE SIZE: "FUNC at FILE:LINE" of the frames above frame #0.
bt_frames() {
    awk -v s="$2" '$1 == "@@bt" { on = ($2 == s && !seen[s]++); next } on && /^#[1-9]/' "$1" |
        sed -E 's/^#[0-9]+ +(0x[0-9a-f]+ in )?//; s/ \(.*\) at / at /'
}
oracle() { # PROG BREAK SIZES OUT
    local script=$work/bt.gdb
    { echo "set breakpoint pending on"
      echo "break $2 if $3"
      echo "commands"; echo "silent"; echo 'printf "@@bt %d\n", $rdi'; echo "bt"; echo "continue"; echo "end"
      echo "run"; } >"$script"
    timeout 120 gdb -q -batch -nx -ex "set env LD_PRELOAD=$lib" -x "$script" "$1" >"$4" 2>&1
}
# check_oracle NAME BT_OUT SIZE ANSWER: each of bt's frames, in order, is a
# frame of the answer (function and file:line).
check_oracle() {
    local name=$1 missing
    missing=$(bt_frames "$2" "$3" | awk -v text="$4" '
        BEGIN { n = split(text, lines, "\n"); k = 1 }
        { want = $0; sub(/ at .*/, "", want); loc = $0; sub(/^.* at /, "", loc)
          # bt names C++ functions without their parameters
          while (k <= n && !((index(lines[k], " " want " at ") || index(lines[k], " " want "(")) &&
                             (index(lines[k], " at " loc ":") || index(lines[k], " at " loc " ")))) k++
          if (k > n) { print $0; exit } k++ }')
    if [ -z "$(bt_frames "$2" "$3")" ]; then
        fail "$name" "no bt for size $3 in $(tail -5 "$2")"
    elif [ -z "$missing" ]; then
        pass "$name"
    else
        fail "$name" "bt's frame '$missing' not in memtrace's answer:
$4
bt:
$(bt_frames "$2" "$3")"
    fi
}
oracle "$tests/tail_calls" malloc '$rdi >= 4801 && $rdi <= 4805' "$work/bt_c.out"
size=4801
for v in g_xmalloc g_pool g_either g_choose g_plain; do
    check_oracle "bt oracle: $v's frames hold gdb's" "$work/bt_c.out" $size \
        "$(block_of "$(addr_of $v "$work/c.out")" "$work/c.err")"
    size=$((size + 1))
done
oracle "$tests/tail_calls_cxx" _Znwm '$rdi == 4848' "$work/bt_x.out"
check_oracle "bt oracle: g_node's frames hold gdb's" "$work/bt_x.out" 4848 \
    "$(block_of "$(addr_of g_node "$work/x.out")" "$work/x.err")"
# gdb stops twice at that size, in memtrace's operator new for each block
# (libstdc++'s below it is asked for the redzone more); the second bt is
# g_pooled's.
sed -i '0,/^@@bt 4848$/s//@@bt first/' "$work/bt_x.out"
check_oracle "bt oracle: g_pooled's frames hold gdb's" "$work/bt_x.out" 4848 \
    "$(block_of "$(addr_of g_pooled "$work/x.out")" "$work/x.err")"

# ---------------------------------------------------------------- profiler
# With an argument the C program leaves its blocks live at exit.
err=$work/prof.err
env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=0 MEMTRACE_FOLDED="$work/tail.folded" \
    "$tests/tail_calls" leak 2>"$err"
site_of() { # SIZE: the exit report's entry for the site of that size
    awk -v s="memtrace: \\\\[[0-9]+\\\\] $1 bytes live" '$0 ~ s { on = 1; print; next }
                                                       /^memtrace: / { on = 0 } on' "$err"
}
size=4801
for v in g_xmalloc g_pool g_either g_choose g_plain; do
    check_block "profiler exit report: $v" "$(site_of $size)" "$(c_expect $v)"
    size=$((size + 1))
done
folded=$(sed -E 's/^_start;__libc_start_main[^;]*;__libc_start_call_main;//' "$work/tail.folded" | sort)
want="main 4803
main;plain 4805
main;pool_get;xmalloc 4802
main;xmalloc 4801
main;xmalloc 4804"
if [ "$folded" = "$want" ]; then
    pass "profiler folded stacks: tail-call frames by name, nothing invented"
else
    fail "profiler folded stacks" "expected:
$want
got:
$folded"
fi

# ---------------------------------------------------------------- gcc and clang
# Tail calls between functions the program defines (tail_calls_defined.c),
# built by both compilers: gcc's call sites give the address after each
# jump (DW_AT_call_return_pc), clang's the jump's own (DW_AT_call_pc).
# (clang describes no call to a builtin such as malloc, so tail_calls.c's
# jumps into malloc cannot be rebuilt from its DWARF: not checked here.)
D=tests/progs/tail_calls_defined.c
d_expect="  #0 fill at $(at $D fill)|  #1 step2 at $(at $D step2)*(tail call)|  #2 step1 at $(at $D step1)*(tail call)|  #3 main at $(at $D call_step1)"
# rel TEXT: TEXT with the project's directory taken off the file names
# (clang's line table names the file from the build directory, where gdb
# and gcc's name it relative: not what is checked here).
rel() { printf '%s\n' "${1//$root\//}"; }
for cc in gcc clang; do
    bin=$work/tail_defined_$cc
    if ! "$cc" -O2 -g -o "$bin" "$D" 2>"$work/$cc.build"; then
        fail "$cc: tail_calls_defined builds" "$(cat "$work/$cc.build")"
        continue
    fi
    run_both "$bin" "$work/d_$cc.out" "$work/d_$cc.err" g_step
    answer=$(rel "$(block_of "$(addr_of g_step "$work/d_$cc.out")" "$work/d_$cc.err")")
    check_block "$cc: print_trace g_step" "$answer" "$d_expect"
    check_block "$cc: memtrace g_step (gdb command)" "$(rel "$(cmd_block g_step "$work/d_$cc.out")")" \
        "$d_expect"
    oracle "$bin" malloc '$rdi == 4903' "$work/bt_d_$cc.out"
    check_oracle "$cc: bt oracle: g_step's frames hold gdb's" "$work/bt_d_$cc.out" 4903 "$answer"
    err=$work/prof_d_$cc.err
    env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=0 "$bin" leak 2>"$err"
    check_block "$cc: profiler exit report: g_step" "$(rel "$(site_of 4903)")" "$d_expect"
done

finish tail-calls
