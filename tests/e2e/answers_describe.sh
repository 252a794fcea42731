#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# An address in no heap block is described as valgrind describes it ("0
# bytes inside data symbol g_list", "on thread 1's stack"), with gdb as
# the oracle: on tests/progs/answers_words_roots stopped at stop_here, in
# gdb (`memtrace EXPR`), on a gcore of it, and by print_trace in the
# process, each answer's second line is
#  - a global's or function's: gdb's `info symbol` (symbol, offset, section,
#    file);
#  - a stack slot's: the thread gdb numbers and its LWP, the frame `bt`
#    numbers and names, the slot between that frame's $sp and its CFA
#    (`info frame`'s "frame at"); below the stack pointer: said so;
#  - a TLS variable's: the thread's TLS;
#  - a mapped file's: the file and offset of `info proc mappings`;
#  - unmapped: said so.
# print_trace knows its own thread's stack and TLS only (no frames).
# Prints "answers_describe: N passed, N failed" last.
set -u
. "$(dirname "$0")/lib.sh"
memtrace=$build/memtrace
prog=$tests/answers_words_roots
base=answers_words_roots
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_RECORD MEMTRACE_SAMPLE MEMTRACE_LIB
cd "$work" || exit 1
head -c 3000 /dev/zero | tr '\0' 'x' >data.txt

# The questions, each after an "@@ NAME" line; gdb's own answers after
# "@@ gdb-NAME". Thread 2's frame of holder is found by name.
asks=(-ex 'echo @@ g_list\n' -ex 'memtrace &g_list' -ex 'echo @@ gdb-g_list\n' -ex 'info symbol &g_list'
      -ex 'echo @@ g_pad\n' -ex 'memtrace &g_pad[2]' -ex 'echo @@ gdb-g_pad\n' -ex 'info symbol &g_pad[2]'
      -ex 'echo @@ main\n' -ex 'memtrace (char *)main + 4' -ex 'echo @@ gdb-main\n' -ex 'info symbol (char *)main + 4'
      -ex 'echo @@ sp0\n' -ex 'memtrace $sp' -ex 'echo @@ gdb-sp0\n' -ex 'bt 1'
      -ex 'frame 1' -ex 'echo @@ local\n' -ex 'memtrace &local[1]'
      -ex 'echo @@ gdb-local\n' -ex 'printf "%p %p\n", &local[1], $sp' -ex 'info frame'
      -ex 'echo @@ below\n' -ex 'memtrace $sp - 8192'
      -ex 'echo @@ data\n' -ex 'memtrace g_data + 16'
      -ex 'echo @@ unmapped\n' -ex 'memtrace 0x10'
      -ex 'thread 2' -ex 'echo @@ tls\n' -ex 'memtrace &t_held' -ex 'echo @@ gdb-thread2\n' -ex 'thread'
      -ex 'frame function holder' -ex 'echo @@ holder\n' -ex 'memtrace $sp'
      -ex 'echo @@ gdb-holder\n' -ex 'printf "%p\n", $sp' -ex 'info frame' -ex 'echo @@ end\n')
timeout 180 "$memtrace" gdb -batch -ex 'break stop_here' -ex run "${asks[@]}" \
    -ex 'echo @@ gdb-maps\n' -ex 'info proc mappings' -ex "gcore $work/core" -ex 'echo @@ end\n' \
    -ex 'thread 1' -ex 'echo @@ pt-g_list\n' -ex 'call print_trace(&g_list)' \
    -ex 'echo @@ pt-stack\n' -ex 'call print_trace(on_stack)' \
    -ex 'echo @@ pt-data\n' -ex 'call print_trace(g_data + 16)' \
    -ex 'echo @@ pt-unmapped\n' -ex 'call print_trace(16)' \
    -ex 'thread 2' -ex 'echo @@ pt-tls\n' -ex 'call print_trace(&t_held)' -ex 'echo @@ end\n' \
    -ex kill -- "$prog" "$work/data.txt" >live.out 2>&1
# section FILE NAME: the lines after "@@ NAME" up to the next "@@".
section() { awk -v n="$2" '$1 == "@@" { on = ($2 == n); next } on' "$1"; }
# where FILE NAME: the description line of answer NAME (after its first).
where() { section "$1" "$2" | sed -n '/^memtrace: 0x[0-9a-f]*: not a live heap block known to memtrace$/{n;p;q}'; }
# want_symbol NAME: what gdb's `info symbol` says, in memtrace's words.
want_symbol() {
    section live.out "gdb-$1" | sed -n 's/^\([^ ]*\)\( + \([0-9]*\)\)\{0,1\} in section \([^ ]*\) of .*\/\([^/]*\)$/\1|\3|\4|\5/p' |
        { IFS='|' read -r name off sec file; [ -n "${kind:-}" ] || kind="data symbol"
          echo "  ${off:-0} bytes inside $kind $name, in section $sec of $file"; }
}
lwp2=$(section live.out gdb-thread2 | sed -n 's/.*(LWP \([0-9]*\)).*/\1/p' | head -1)
lwp1=$(sed -n 's/^\[Switching to thread 1 (Thread 0x[0-9a-f]* (LWP \([0-9]*\)))\].*/\1/p' live.out | head -1)

# A frame's range from gdb: "SP CFA" of the slot's frame (info frame's
# "frame at" is the CFA, the caller's SP at the call).
frame_range() { section live.out "$1" | sed -n 's/^Stack level \([0-9]*\), frame at \(0x[0-9a-f]*\):.*/\1 \2/p'; }
in_frame() { # NAME SLOT: gdb puts SLOT in the frame it lists
    local slot=$2 sp cfa level
    sp=$(section live.out "$1" | awk '/^0x/ { print $NF; exit }')
    read -r level cfa < <(frame_range "$1")
    if [ -n "$cfa" ] && (( slot >= sp && slot < cfa )); then echo "$level"; fi
}

for s in live core; do
    f=live.out
    if [ $s = core ]; then
        f=core.out
        (cd "$work" && timeout 180 gdb -q -batch -nx "$prog" "$work/core" \
            -ex "source $build/memtrace.py" "${asks[@]}" >core.out 2>&1)
    fi
    for v in g_list g_pad; do
        check "$s: &$v: gdb's info symbol" "$(want_symbol $v)" "$(where $f $v)"
    done
    check "$s: main + 4: a function's bytes, gdb's info symbol" \
        "$(kind=function want_symbol main)" "$(where $f main)"
    fn0=$(section live.out gdb-sp0 | sed -n 's/^#0  \([a-z_]*\) .*/\1/p')
    check "$s: \$sp in frame 0: bt's #0 $fn0" "  on thread 1's stack (LWP $lwp1), in frame #0 $fn0" \
        "$(where $f sp0)"
    slot=$(section live.out gdb-local | awk '/^0x/ { print $1; exit }')
    level=$(in_frame gdb-local "$slot")
    check "$s: &local[1]: the frame gdb's info frame puts it in (#${level:-?})" \
        "  on thread 1's stack (LWP $lwp1), in frame #${level:-?} main" "$(where $f local)"
    check "$s: below the stack pointer" \
        "  on thread 1's stack (LWP $lwp1), below its stack pointer: no frame uses it now" \
        "$(where $f below)"
    check "$s: thread 2's TLS" "  in thread 2's thread-local storage (LWP $lwp2)" "$(where $f tls)"
    hsp=$(section live.out gdb-holder | awk '/^0x/ { print $1; exit }')
    hlevel=$(frame_range gdb-holder | cut -d' ' -f1)
    check "$s: thread 2's \$sp in holder's frame (#${hlevel:-?} in bt)" \
        "  on thread 2's stack (LWP $lwp2), in frame #${hlevel:-?} holder" "$(where $f holder)"
    [ -n "$hsp" ] || fail "$s: holder's sp" "none"
done
# The mapped file: its offset from `info proc mappings` (the mapping's
# offset plus 16).
moff=$(section live.out gdb-maps | awk -v p="$work/data.txt" '$NF == p { print $4; exit }')
check "live: a mapped file: info proc mappings' file, offset $moff + 16" \
    "  in a mapping of $work/data.txt, at file offset $(printf '%#x' $((moff + 16)))" "$(where live.out data)"
check "core: a mapped file (the core's NT_FILE note)" \
    "  in a mapping of $work/data.txt, at file offset $(printf '%#x' $((moff + 16)))" "$(where core.out data)"
check "live: unmapped" "  in no mapping of the process" "$(where live.out unmapped)"
check "core: unmapped, as the process was" "  in no mapping of the process" "$(where core.out unmapped)"

# print_trace, in the process: the same symbol and mapping lines; its own
# thread's stack and TLS, no frame.
check "print_trace: &g_list" "$(want_symbol g_list)" "$(where live.out pt-g_list)"
check "print_trace: its own thread's stack" "  on thread 1's stack (LWP $lwp1)" "$(where live.out pt-stack)"
check "print_trace: a mapped file" \
    "  in a mapping of $work/data.txt, at file offset $(printf '%#x' $((moff + 16)))" "$(where live.out pt-data)"
check "print_trace: unmapped" "  in no mapping of the process" "$(where live.out pt-unmapped)"
check "print_trace: thread 2's own TLS" "  in thread 2's thread-local storage (LWP $lwp2)" \
    "$(where live.out pt-tls)"

finish answers_describe
