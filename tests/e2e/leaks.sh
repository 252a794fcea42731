#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The leak check at exit (MEMTRACE_LEAK_CHECK=1) on tests/progs/leaks.c, in
# both builds: each lost site with its exact bytes, blocks, class (and for
# a definitely lost one, what it holds) and file:line; the block held only
# by an interior pointer possibly lost; none of the kept ones (global,
# another thread's stack, a register only, through a reachable block, TLS)
# listed;
# the summary line exactly; status 23 (MEMTRACE_LEAK_EXITCODE) or the
# program's own; suppressions for one site and for all; bad input; and
# LeakSanitizer (Debian liblsan0), where installed, as the oracle for the
# lost totals of the same binary. Then `memtrace leaks` and `memtrace refs`
# in gdb (gdb/memtrace.py) on the process stopped in checkpoint() and on a
# gcore file of it: the same groups and the same summary line, byte for
# byte, as the check at exit; suppressions from gdb's environment; every
# kind of holder named; bad input.
set -u
. "$(dirname "$0")/lib.sh"
prog=$tests/leaks
src=tests/progs/leaks.c
tracer=$build/libmemtrace.so
profiler=$build/libmemtrace-profiler.so
lsan=${LSAN_LIB:-/usr/lib/x86_64-linux-gnu/liblsan.so.0}

# run NAME LIB [VAR=VALUE...] -- [ARGS...]: stderr in $work/NAME.err, status in RC.
run() {
    local name=$1 lib=$2
    shift 2
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    (cd "$work" && timeout 60 env LD_PRELOAD="$lib" "${envs[@]}" "$prog" "$@" \
        >"$work/$name.out" 2>"$work/$name.err") 2>/dev/null
    RC=$?
}


# The group "B bytes in K blocks are CLASS lost" (definitely lost: "T (B
# direct, H indirect) bytes in K blocks are definitely lost (with HB
# indirectly lost blocks)") whose frame #0 is at SITE.
group() { # NAME FILE "B bytes in K blocks are CLASS lost" SITE
    if awk -v g="memtrace: $3, allocated at:" -v f="$(at "$src" "$4")" '
           $0 == g { getline; if (index($0, f)) found = 1 } END { exit !found }' "$2"; then
        pass "$1: $3 at $4"
    else
        fail "$1" "no '$3' group at $(at "$src" "$4") in: $(cat "$2")"
    fi
}

# Every frame #0 of a lost group, as FILE:LINE: lines.
group_re='^memtrace: [0-9]+ (\([0-9]+ direct, [0-9]+ indirect\) )?bytes in [0-9]+ blocks are [a-z]+ lost'
lost_sites() { awk -v re="$group_re" '$0 ~ re { getline; print }' "$1"; }

kept_not_listed() { # NAME FILE
    local s bad=
    for s in global thread_stack register holder through tls; do
        lost_sites "$2" | grep -qF "$(at "$src" $s)" && bad="$bad $s"
    done
    if [ -z "$bad" ]; then pass "$1: no kept block listed as lost"; else fail "$1" "listed as lost:$bad"; fi
}

summary_is() { # NAME FILE D N I M [P K]: possibly lost 300 in 1 (interior) unless given
    local line
    line=$(grep '^memtrace: leaks: [0-9]* bytes definitely' "$2")
    local want="memtrace: leaks: $3 bytes definitely lost in $4 blocks, $5 bytes indirectly lost in $6 blocks, ${7:-300} bytes possibly lost in ${8:-1} blocks, "
    # Still reachable: at least the kept blocks (2616 bytes in 6), plus the C library's.
    if [ "${line#"$want"}" != "$line" ] &&
       echo "$line" | awk '{ if ($(NF-6) >= 2616 && $(NF-1) >= 6 && $(NF-4) == "still") exit 0; exit 1 }'; then
        pass "$1: summary"
    else
        fail "$1" "summary '$line', wanted '$want' and >= 2616 bytes still reachable in >= 6 blocks"
    fi
}

# The listing's order: definitely lost groups first, largest total (with
# what they hold) first; then indirectly lost, then possibly lost, each
# largest first.
groups_in_order() { # NAME FILE
    if lost_sites "$2" >/dev/null && grep -E "$group_re" "$2" |
        awk '{ c = $0; sub(/ lost.*/, "", c); sub(/.* /, "", c)
               r = c == "definitely" ? 0 : c == "indirectly" ? 1 : 2
               if (n++ && (r < last || (r == last && $2 + 0 > prev))) bad = 1
               last = r; prev = $2 + 0 } END { exit bad }'; then
        pass "$1: definitely lost groups first, largest total first"
    else
        fail "$1" "groups not in order in: $(cat "$2")"
    fi
}

check_full() { # NAME FILE
    group "$1" "$2" "$direct_group" direct
    group "$1" "$2" "144 (48 direct, 96 indirect) bytes in 1 blocks are definitely lost (with 3 indirectly lost blocks)" list_head
    group "$1" "$2" "96 bytes in 3 blocks are indirectly lost" list_node
    group "$1" "$2" "128 (64 direct, 64 indirect) bytes in 1 blocks are definitely lost (with 1 indirectly lost blocks)" cycle
    group "$1" "$2" "64 bytes in 1 blocks are indirectly lost" cycle
    group "$1" "$2" "300 bytes in 1 blocks are possibly lost" interior
    kept_not_listed "$1" "$2"
    summary_is "$1" "$2" 212 3 160 4
    groups_in_order "$1" "$2"
}
direct_group="100 (100 direct, 0 indirect) bytes in 1 blocks are definitely lost (with 0 indirectly lost blocks)"

# ---- tracer build
run tracer "$tracer" MEMTRACE_LEAK_CHECK=1 --
status "tracer: leaks found" 23
check_full tracer "$work/tracer.err"

run exitcode "$tracer" MEMTRACE_LEAK_CHECK=1 MEMTRACE_LEAK_EXITCODE=0 --
status "MEMTRACE_LEAK_EXITCODE=0: the program's own status" 0
summary_is "MEMTRACE_LEAK_EXITCODE=0" "$work/exitcode.err" 212 3 160 4

run none "$tracer" MEMTRACE_LEAK_CHECK=1 -- none
status "nothing lost: the program's own status" 7
summary_is "nothing lost" "$work/none.err" 0 0 0 0
lacks "nothing lost: no definitely lost group" "$work/none.err" "are definitely lost"

# A thread that blocks the stop signal: scanned from its system call's stack
# pointer, and the report says so.
run blocked "$tracer" MEMTRACE_LEAK_CHECK=1 -- blocked
status "a thread that cannot be stopped" 23
group "blocked" "$work/blocked.err" "$direct_group" direct
lacks "blocked: its block is not lost" "$work/blocked.err" "$(at "$src" blocked)"
lacks "blocked: its TLS block is not lost" "$work/blocked.err" "$(at "$src" blocked_tls)"
has "blocked: the report says so" "$work/blocked.err" \
    "did not stop for the scan: its stack was scanned from the stack pointer of its system call, its registers were not"
summary_is "blocked" "$work/blocked.err" 212 3 160 4

run off "$tracer" --
status "no check: the program's own status" 0
lacks "no check: no summary" "$work/off.err" "memtrace: leaks:"

run badvalue "$tracer" MEMTRACE_LEAK_CHECK=yes --
has "MEMTRACE_LEAK_CHECK=yes: one warning" "$work/badvalue.err" 'memtrace: MEMTRACE_LEAK_CHECK="yes" is not a whole number'

# ---- profiler build: the summary follows the exit report, in MEMTRACE_OUTPUT.
run profiler "$profiler" MEMTRACE_LEAK_CHECK=1 MEMTRACE_INTERVAL_MS=0 MEMTRACE_OUTPUT="$work/prof.txt" --
status "profiler: leaks found" 23
check_full profiler "$work/prof.txt"
if awk '/^memtrace: exit report/ { r = NR } /^memtrace: leaks: [0-9]/ { s = NR } END { exit !(r && s > r) }' \
    "$work/prof.txt"; then
    pass "profiler: leak report after the exit report"
else
    fail "profiler" "no exit report before the leak report in $(cat "$work/prof.txt")"
fi

# The exit report's sites, marked by class.
marked() { # NAME "D bytes definitely lost, I bytes indirectly lost, P bytes possibly lost, R bytes still reachable" SITE
    if awk -v m="  leak check: $2" -v f="$(at "$src" "$3")" '
           $0 == m { getline; if (index($0, f)) found = 1 } END { exit !found }' "$work/prof.txt"; then
        pass "profiler exit report: $3: $2"
    else
        fail "profiler exit report" "no '$2' mark on $3 in: $(cat "$work/prof.txt")"
    fi
}
marked profiler "100 bytes definitely lost, 0 bytes indirectly lost, 0 bytes possibly lost, 0 bytes still reachable" direct
marked profiler "64 bytes definitely lost, 64 bytes indirectly lost, 0 bytes possibly lost, 0 bytes still reachable" cycle
marked profiler "0 bytes definitely lost, 96 bytes indirectly lost, 0 bytes possibly lost, 0 bytes still reachable" list_node
marked profiler "0 bytes definitely lost, 0 bytes indirectly lost, 0 bytes possibly lost, 200 bytes still reachable" global
marked profiler "0 bytes definitely lost, 0 bytes indirectly lost, 0 bytes possibly lost, 500 bytes still reachable" register
marked profiler "0 bytes definitely lost, 0 bytes indirectly lost, 300 bytes possibly lost, 0 bytes still reachable" interior

# ---- a MEMTRACE_OUTPUT that cannot be written: said once on stderr, where
# the exit report and the leak report then go, whole; the status unchanged.
run full "$profiler" MEMTRACE_LEAK_CHECK=1 MEMTRACE_INTERVAL_MS=0 MEMTRACE_OUTPUT=/dev/full --
status "MEMTRACE_OUTPUT=/dev/full" 23
check "MEMTRACE_OUTPUT=/dev/full: said once, naming the file and the error" \
    "1 memtrace: MEMTRACE_OUTPUT: cannot write to /dev/full (No space left on device); reporting on stderr" \
    "$(grep -c '^memtrace: MEMTRACE_OUTPUT' "$work/full.err") $(grep '^memtrace: MEMTRACE_OUTPUT' "$work/full.err")"
check "MEMTRACE_OUTPUT=/dev/full: the exit report on stderr" "1 1" \
    "$(grep -c '^memtrace: exit report, pid ' "$work/full.err") $(grep -c '^memtrace: end of exit report$' "$work/full.err")"
check_full "MEMTRACE_OUTPUT=/dev/full: the leak report on stderr" "$work/full.err"
# A file that fills up after 2048 bytes (ulimit -f 2, SIGXFSZ ignored so that
# write fails with EFBIG; stderr a pipe, which the limit does not cut): the
# file keeps its whole lines, the report goes on on stderr from the line the
# failure cut, and the leak report after it.
(trap '' XFSZ; ulimit -f 2; cd "$work" && exec timeout 60 env LD_PRELOAD="$profiler" \
    MEMTRACE_LEAK_CHECK=1 MEMTRACE_INTERVAL_MS=0 MEMTRACE_OUTPUT="$work/fsz.txt" "$prog") \
    2>&1 >/dev/null | cat >"$work/fsz.err"
RC=${PIPESTATUS[0]}
status "MEMTRACE_OUTPUT filled after 2048 bytes" 23
check "a file filled after 2048 bytes: said once, with the bytes written" \
    "1 memtrace: MEMTRACE_OUTPUT: cannot write to $work/fsz.txt (File too large) after 2048 bytes of this report; the rest of it (from the line cut) and later reports on stderr" \
    "$(grep -c '^memtrace: MEMTRACE_OUTPUT' "$work/fsz.err") $(head -1 "$work/fsz.err")"
head -n "$(tr -cd '\n' <"$work/fsz.txt" | wc -c)" "$work/fsz.txt" >"$work/fsz.whole"
tail -n +2 "$work/fsz.err" >>"$work/fsz.whole"
check "a file filled after 2048 bytes: its whole lines and stderr make the exit report once" "1 1" \
    "$(grep -c '^memtrace: exit report, pid ' "$work/fsz.whole") $(grep -c '^memtrace: end of exit report$' "$work/fsz.whole")"
check "a file filled after 2048 bytes: every site of the exit report once, as with /dev/full" \
    "$(grep '^memtrace: \[' "$work/full.err")" "$(grep '^memtrace: \[' "$work/fsz.whole")"
check_full "a file filled after 2048 bytes: the leak report on stderr" "$work/fsz.err"

# ---- suppressions
printf '# one site\nleak:make_list\n' >"$work/one.supp"
run supp_one "$tracer" MEMTRACE_LEAK_CHECK=1 MEMTRACE_SUPPRESSIONS="$work/one.supp" --
status "suppressing one site" 23
summary_is "suppressing one site" "$work/supp_one.err" 164 2 64 1
has "suppressing one site: what it took" "$work/supp_one.err" \
    "memtrace: leaks: suppressed by leak:make_list: 144 bytes in 4 blocks"
lacks "suppressing one site: not listed" "$work/supp_one.err" "$(at "$src" list_head)"

printf 'leak:leaks.c\n' >"$work/all.supp"
run supp_all "$tracer" MEMTRACE_LEAK_CHECK=1 MEMTRACE_SUPPRESSIONS="$work/all.supp" --
status "suppressing every site" 0
summary_is "suppressing every site" "$work/supp_all.err" 0 0 0 0 0 0
has "suppressing every site: what it took" "$work/supp_all.err" \
    "memtrace: leaks: suppressed by leak:leaks.c: 672 bytes in 8 blocks"

printf 'leak:^lose_direct$\nnot a suppression\nleak:\n' >"$work/bad.supp"
run supp_bad "$tracer" MEMTRACE_LEAK_CHECK=1 MEMTRACE_SUPPRESSIONS="$work/bad.supp" --
status "bad suppression lines" 23
has "bad line 2: one warning" "$work/supp_bad.err" "memtrace: MEMTRACE_SUPPRESSIONS: $work/bad.supp:2: not a"
has "bad line 3: one warning" "$work/supp_bad.err" "memtrace: MEMTRACE_SUPPRESSIONS: $work/bad.supp:3: not a"
summary_is "an anchored pattern" "$work/supp_bad.err" 112 2 160 4

run supp_missing "$tracer" MEMTRACE_LEAK_CHECK=1 MEMTRACE_SUPPRESSIONS="$work/none.supp" --
status "unreadable suppressions" 23
has "unreadable suppressions: one warning" "$work/supp_missing.err" \
    "memtrace: MEMTRACE_SUPPRESSIONS: cannot read $work/none.supp"
summary_is "unreadable suppressions" "$work/supp_missing.err" 212 3 160 4


# ---- the verdicts valgrind gives (tests/progs/leak_verdicts.c), at exit.
vprog=$tests/leak_verdicts
vsrc=tests/progs/leak_verdicts.c
verdict() { # NAME MODE "SUMMARY PREFIX" [GROUP SITE]...
    local name=$1 mode=$2 prefix=$3 want="memtrace: leaks: $3"
    shift 3
    (cd "$work" && MEMTRACE_LEAK_CHECK=1 LD_PRELOAD="$tracer" timeout 60 "$vprog" "$mode" \
        >/dev/null 2>"$work/v_$mode.err")
    local line
    line=$(grep "^memtrace: leaks: [0-9]* bytes definitely" "$work/v_$mode.err")
    if [ "${line#"$want"}" != "$line" ]; then
        pass "$name: $prefix"
    else
        fail "$name" "summary '$line', wanted '$want...'"
    fi
    while [ $# -ge 2 ]; do
        src=$vsrc group "$name" "$work/v_$mode.err" "$1" "$2"
        shift 2
    done
}
# A dead copy below main's frame, in the region exit and its handlers use,
# holds nothing; with four threads sleeping too.
verdict "a dead stack copy" stack \
    "333 bytes definitely lost in 1 blocks, 0 bytes indirectly lost in 0 blocks, 0 bytes possibly lost in 0 blocks, 0 bytes still reachable in 0 blocks" \
    "333 (333 direct, 0 indirect) bytes in 1 blocks are definitely lost (with 0 indirectly lost blocks)" stack
verdict "a dead stack copy, four threads sleeping" threads \
    "333 bytes definitely lost in 1 blocks, 0 bytes indirectly lost in 0 blocks, 0 bytes possibly lost in 0 blocks, "
lacks "a dead stack copy, four threads sleeping: every thread stopped" "$work/v_threads.err" "did not stop"
# glibc's main_arena (a bin, the top chunk) points at the chunk header in
# the lost record's last bytes: that holds nothing.
verdict "a lost block before a free chunk in a bin" bins \
    "24 bytes definitely lost in 1 blocks, 2240 bytes indirectly lost in 40 blocks, 0 bytes possibly lost in 0 blocks, 24 bytes still reachable in 1 blocks" \
    "2264 (24 direct, 2240 indirect) bytes in 1 blocks are definitely lost (with 40 indirectly lost blocks)" bins_record \
    "2240 bytes in 40 blocks are indirectly lost" bins_node
verdict "a lost block before the top chunk" top \
    "24 bytes definitely lost in 1 blocks, 2240 bytes indirectly lost in 40 blocks, 0 bytes possibly lost in 0 blocks, 0 bytes still reachable in 0 blocks" \
    "2264 (24 direct, 2240 indirect) bytes in 1 blocks are definitely lost (with 40 indirectly lost blocks)" top_record
# Held only by an interior pointer: possibly lost, and what it holds too.
verdict "an interior pointer only" interior \
    "0 bytes definitely lost in 0 blocks, 0 bytes indirectly lost in 0 blocks, 464 bytes possibly lost in 2 blocks, 0 bytes still reachable in 0 blocks" \
    "400 bytes in 1 blocks are possibly lost" interior_outer "64 bytes in 1 blocks are possibly lost" interior_inner
# The owner's group says what it holds, and comes first.
verdict "an owner and what it holds" owner \
    "48 bytes definitely lost in 1 blocks, 192 bytes indirectly lost in 4 blocks, 0 bytes possibly lost in 0 blocks, 0 bytes still reachable in 0 blocks" \
    "240 (48 direct, 192 indirect) bytes in 1 blocks are definitely lost (with 4 indirectly lost blocks)" owner \
    "192 bytes in 4 blocks are indirectly lost" owned
# exit called with a block's only copy in a callee-saved register, which
# exit's frames save below its caller's stack pointer: the caller's
# registers at the call are roots.
if [ "$(uname -m)" = x86_64 ]; then
    verdict "exit called with a block only in r12" exit_r12 \
        "0 bytes definitely lost in 0 blocks, 0 bytes indirectly lost in 0 blocks, 0 bytes possibly lost in 0 blocks, 777 bytes still reachable in 1 blocks"
fi
groups_in_order "an owner and what it holds" "$work/v_owner.err"
if awk '/are definitely lost/ { d = NR } /are indirectly lost/ && !i { i = NR } END { exit !(d && i > d) }' \
    "$work/v_owner.err"; then
    pass "an owner and what it holds: the owner listed before what it holds"
else
    fail "an owner and what it holds" "order in: $(cat "$work/v_owner.err")"
fi

# ---- gdb: `memtrace leaks` and `memtrace refs` (gdb/memtrace.py)
helper=$root/gdb/memtrace.py
exit_summary=$(grep '^memtrace: leaks: [0-9]* bytes definitely' "$work/tracer.err")

# part NAME FILE: the lines after "@@ NAME" up to the next "@@ " line.
part() { awk -v m="@@ $1" '$0 == m { on = 1; next } /^@@ / { on = 0 } on' "$2"; }
same_summary() { # NAME FILE: its summary line is the one at exit, byte for byte
    local line
    line=$(grep '^memtrace: leaks: [0-9]* bytes definitely' "$2")
    if [ -n "$line" ] && [ "$line" = "$exit_summary" ]; then
        pass "$1: the summary at exit, byte for byte"
    else
        fail "$1" "summary '$line', at exit '$exit_summary'"
    fi
}
no_traceback() { # NAME FILE
    if grep -qE 'Traceback|Python Exception|Error occurred in Python|internal error' "$2"; then
        fail "$1" "a Python traceback: $(cat "$2")"
    else
        pass "$1: no traceback"
    fi
}
# one_line NAME FILE TEXT: the part FILE is exactly the one line TEXT.
one_line() {
    if [ "$(cat "$2")" = "$3" ]; then pass "$1"; else fail "$1" "wanted only '$3', got: $(cat "$2")"; fi
}

live=$work/gdb_live.out
(cd "$work" && timeout 120 gdb -q -batch -nx "$prog" -ex "set env LD_PRELOAD=$tracer" \
    -ex "break checkpoint" -ex "run 2>$work/gdb_live.err" -ex "source $helper" \
    -ex "echo @@ leaks\n" -ex "memtrace leaks" -ex "echo @@ leaks1\n" -ex "memtrace leaks 1" \
    -ex "echo @@ refs_holder\n" -ex "memtrace refs g_holder" \
    -ex "gcore $work/leaks.core" -ex "echo @@ end\n" -ex kill >"$live" 2>&1)
part leaks "$live" >"$work/gdb_live_leaks.out"
check_full "gdb live" "$work/gdb_live_leaks.out"
same_summary "gdb live" "$work/gdb_live_leaks.out"
part leaks1 "$live" >"$work/gdb_live_one.out"
group "gdb live, leaks 1" "$work/gdb_live_one.out" \
    "144 (48 direct, 96 indirect) bytes in 1 blocks are definitely lost (with 3 indirectly lost blocks)" list_head
if [ "$(grep -cE "$group_re" "$work/gdb_live_one.out")" = 1 ]; then
    pass "gdb live, leaks 1: one site listed"
else
    fail "gdb live, leaks 1" "not one site in: $(cat "$work/gdb_live_one.out")"
fi
has "gdb live, leaks 1: the others counted" "$work/gdb_live_one.out" \
    "memtrace: leaks: 5 more lost groups not listed"
same_summary "gdb live, leaks 1" "$work/gdb_live_one.out"
part refs_holder "$live" >"$work/gdb_live_refs.out"
has "gdb live, refs: the global" "$work/gdb_live_refs.out" ": global g_holder in leaks, to offset 0"
no_traceback "gdb live" "$live"

# The core file: the same verdict; every kind of holder named.
core=$work/leaks.core
if [ -s "$core" ]; then
    out=$work/gdb_core.out
    (cd "$work" && timeout 120 gdb -q -batch -nx "$prog" "$core" -ex "source $helper" \
        -ex "echo @@ leaks\n" -ex "memtrace leaks" \
        -ex 'printf "@@ g_holder %p\n", g_holder' -ex 'printf "@@ g_global %p\n", g_global' \
        -ex "echo @@ refs_global\n" -ex "memtrace refs g_global" \
        -ex "echo @@ refs_interior\n" -ex "memtrace refs g_interior - 100" \
        -ex "echo @@ refs_heap\n" -ex "memtrace refs *g_holder" \
        -ex "echo @@ refs_tls\n" -ex "memtrace refs t_tls" \
        -ex "thread 2" -ex 'printf "@@ sp2 %p\n", $sp' -ex "frame function stack_holder" \
        -ex "echo @@ bt2\n" -ex "bt" \
        -ex "echo @@ refs_stack\n" -ex "memtrace refs mine" \
        -ex "thread 3" -ex "echo @@ refs_register\n" -ex 'memtrace refs $r12' \
        -ex "echo @@ info_threads\n" -ex "info threads" \
        -ex "echo @@ refs_none\n" -ex "memtrace refs 16" \
        -ex "echo @@ leaks0\n" -ex "memtrace leaks 0" \
        -ex "echo @@ refs_usage\n" -ex "memtrace refs" \
        -ex "echo @@ end\n" >"$out" 2>&1)
    part leaks "$out" >"$work/gdb_core_leaks.out"
    check_full "gdb core" "$work/gdb_core_leaks.out"
    same_summary "gdb core" "$work/gdb_core_leaks.out"
    lwp() { # the LWP of gdb's thread N, from `info threads`
        part info_threads "$out" | sed -n "s/^[* ]*$1 *Thread 0x[0-9a-f]* (LWP \([0-9]*\)).*/\1/p"
    }
    part refs_global "$out" >"$work/r.out"
    has "refs: a global, by symbol and module" "$work/r.out" \
        ": global g_global in leaks, to offset 0"
    has "refs: the global's block" "$work/r.out" \
        "memtrace: refs: the live block at $(addr_of g_global "$out") (200 bytes, still reachable;"
    part refs_interior "$out" >"$work/r.out"
    has "refs: an interior pointer" "$work/r.out" ": global g_interior in leaks, to offset 100"
    part refs_heap "$out" >"$work/r.out"
    has "refs: a heap block, its address and offset" "$work/r.out" \
        "$(addr_of g_holder "$out"): heap block $(addr_of g_holder "$out") (16 bytes, still reachable) at offset 0, to offset 0; that block was allocated at:"
    if awk -v f="  #0 main at $(at "$src" holder)" '/: heap block/ { getline; if (index($0, f) == 1) ok = 1 }
           END { exit !ok }' "$work/r.out"; then
        pass "refs: the heap block's allocation site"
    else
        fail "refs: the heap block's allocation site" "not $(at "$src" holder) in: $(cat "$work/r.out")"
    fi
    part refs_tls "$out" >"$work/r.out"
    has "refs: thread-local storage" "$work/r.out" \
        ": thread 1 (LWP $(lwp 1)) thread-local storage, to offset 0"
    part refs_stack "$out" >"$work/r.out"
    frame=$(part bt2 "$out" | sed -n 's/^#\([0-9]*\) .*stack_holder (.*/\1/p')
    has "refs: another thread's stack: thread, frame, function" "$work/r.out" \
        ": thread 2 (LWP $(lwp 2)) stack, frame #$frame stack_holder, to offset 0"
    part refs_register "$out" >"$work/r.out"
    has "refs: a register" "$work/r.out" "  register r12 of thread 3 (LWP $(lwp 3)), to offset 0"
    has "refs: the register's block" "$work/r.out" "(500 bytes, still reachable;"
    part refs_none "$out" >"$work/r.out"
    one_line "refs: an address in no block" "$work/r.out" "memtrace: refs: no live block holds 0x10"
    part leaks0 "$out" >"$work/r.out"
    one_line "leaks 0" "$work/r.out" "memtrace: leaks: the count must be at least 1"
    part refs_usage "$out" >"$work/r.out"
    one_line "refs without an expression" "$work/r.out" "memtrace: usage: memtrace refs EXPR"
    no_traceback "gdb core" "$out"

    # Suppressions from gdb's environment, as at exit.
    gdb_leaks() { # NAME [VAR=VALUE...]: `memtrace leaks` on the core into $work/NAME.out
        local name=$1
        shift
        (cd "$work" && env "$@" timeout 120 gdb -q -batch -nx "$prog" "$core" -ex "source $helper" \
            -ex "echo @@ out\n" -ex "memtrace leaks" >"$work/$name.all" 2>&1)
        part out "$work/$name.all" >"$work/$name.out"
    }
    gdb_leaks gdb_supp_one MEMTRACE_SUPPRESSIONS="$work/one.supp"
    summary_is "gdb: suppressing one site" "$work/gdb_supp_one.out" 164 2 64 1
    has "gdb: suppressing one site: what it took" "$work/gdb_supp_one.out" \
        "memtrace: leaks: suppressed by leak:make_list: 144 bytes in 4 blocks"
    lacks "gdb: suppressing one site: not listed" "$work/gdb_supp_one.out" "$(at "$src" list_head)"
    gdb_leaks gdb_supp_all MEMTRACE_SUPPRESSIONS="$work/all.supp"
    summary_is "gdb: suppressing every site" "$work/gdb_supp_all.out" 0 0 0 0 0 0
    has "gdb: suppressing every site: what it took" "$work/gdb_supp_all.out" \
        "memtrace: leaks: suppressed by leak:leaks.c: 672 bytes in 8 blocks"
    gdb_leaks gdb_supp_bad MEMTRACE_SUPPRESSIONS="$work/bad.supp"
    has "gdb: bad line 2: one warning" "$work/gdb_supp_bad.out" "memtrace: MEMTRACE_SUPPRESSIONS: $work/bad.supp:2: not a"
    has "gdb: bad line 3: one warning" "$work/gdb_supp_bad.out" "memtrace: MEMTRACE_SUPPRESSIONS: $work/bad.supp:3: not a"
    summary_is "gdb: an anchored pattern" "$work/gdb_supp_bad.out" 112 2 160 4
    gdb_leaks gdb_supp_missing MEMTRACE_SUPPRESSIONS="$work/none.supp"
    if [ "$(grep -c '^memtrace: MEMTRACE_SUPPRESSIONS' "$work/gdb_supp_missing.out")" = 1 ]; then
        pass "gdb: unreadable suppressions: one line"
    else
        fail "gdb: unreadable suppressions" "not one line in: $(cat "$work/gdb_supp_missing.out")"
    fi
    has "gdb: unreadable suppressions: the line" "$work/gdb_supp_missing.out" \
        "memtrace: MEMTRACE_SUPPRESSIONS: cannot read $work/none.supp (No such file or directory); no suppressions"
    same_summary "gdb: unreadable suppressions" "$work/gdb_supp_missing.out"

    # A damaged live table in a copy of the core: the descriptor's shard
    # bits (the third word after "MEMTRACE", version 2) made 99.
    cp "$core" "$work/damaged.core"
    at_magic=$(grep -obUaP 'MEMTRACE\x02\x00\x00\x00' "$work/damaged.core" | head -1 | cut -d: -f1)
    if [ -n "$at_magic" ]; then
        printf '\x63' | dd of="$work/damaged.core" bs=1 seek=$((at_magic + 32)) conv=notrunc status=none
        (cd "$work" && timeout 120 gdb -q -batch -nx "$prog" "$work/damaged.core" -ex "source $helper" \
            -ex "echo @@ out\n" -ex "memtrace leaks" -ex "echo @@ refs\n" -ex "memtrace refs g_global" \
            -ex "echo @@ end\n" >"$work/damaged.all" 2>&1)
        part out "$work/damaged.all" >"$work/r.out"
        one_line "damaged table: leaks says so in one line" "$work/r.out" \
            "memtrace: memtrace_state looks corrupted (live_shard_bits 99, more than 12)"
        part refs "$work/damaged.all" >"$work/r.out"
        one_line "damaged table: refs says so in one line" "$work/r.out" \
            "memtrace: memtrace_state looks corrupted (live_shard_bits 99, more than 12)"
    else
        fail "damaged table" "no memtrace_state in $core"
    fi

    # A thread's stack missing from the core (its segment's file size made
    # 0 in a copy): the scan says how many root bytes it could not read, at
    # least that stack from the thread's stack pointer (less the red zone)
    # to the segment's end, and the block only that stack held is lost.
    cp "$core" "$work/nostack.core"
    want=$(python3 - "$work/nostack.core" "$(addr_of sp2 "$out")" <<'PY'
import struct, sys
path, sp = sys.argv[1], int(sys.argv[2], 16)
with open(path, "r+b") as f:
    head = f.read(64)
    phoff, = struct.unpack_from("<Q", head, 32)
    phentsize, phnum = struct.unpack_from("<HH", head, 54)
    for i in range(phnum):
        f.seek(phoff + i * phentsize)
        ptype, _, _, vaddr, _, filesz, memsz = struct.unpack("<IIQQQQQ", f.read(48))
        if ptype == 1 and vaddr <= sp < vaddr + memsz:
            f.seek(phoff + i * phentsize + 32)
            f.write(struct.pack("<Q", 0))
            print(vaddr + memsz - ((sp - 128 + 7) & ~7))
PY
)
    (cd "$work" && timeout 120 gdb -q -batch -nx "$prog" "$work/nostack.core" -ex "source $helper" \
        -ex "echo @@ out\n" -ex "memtrace leaks" -ex "echo @@ end\n" >"$work/nostack.all" 2>&1)
    part out "$work/nostack.all" >"$work/r.out"
    got=$(sed -n 's/^memtrace: leaks: \([0-9]*\) bytes of roots and 0 blocks could not be read and were not scanned; blocks they alone hold may be counted lost$/\1/p' "$work/r.out")
    if [ -n "$want" ] && [ -n "$got" ] && [ "$got" -ge "$want" ]; then
        pass "an unreadable thread stack: the verdict says so ($got root bytes, its stack $want)"
    else
        fail "an unreadable thread stack" "wanted a note of >= '$want' unreadable root bytes in: $(cat "$work/r.out")"
    fi
    group "an unreadable thread stack" "$work/r.out" \
        "400 (400 direct, 0 indirect) bytes in 1 blocks are definitely lost (with 0 indirectly lost blocks)" thread_stack
    summary_is "an unreadable thread stack" "$work/r.out" 612 4 160 4
    no_traceback "an unreadable thread stack" "$work/nostack.all"
else
    fail "gdb: gcore" "no core file: $(cat "$live")"
fi

# The same in gdb, live (stopped in checkpoint) and on a core: glibc's state is no root
# there either. Without redzone and quarantine, so that the free chunk's
# header lies in the record's last bytes and the chunk is in a bin.
vout=$work/gdb_bins.out
(cd "$work" && timeout 120 gdb -q -batch -nx "$vprog" -ex "set env LD_PRELOAD=$tracer" \
    -ex "set env MEMTRACE_REDZONE=0" -ex "set env MEMTRACE_QUARANTINE=0" \
    -ex "break checkpoint" -ex "run bins 2>$work/gdb_bins.err" -ex "source $helper" \
    -ex "echo @@ leaks\n" -ex "memtrace leaks" -ex "echo @@ refs\n" \
    -ex "memtrace refs g_record ^ 0x5a5a5a5a5a5a5a5a" -ex "gcore $work/bins.core" \
    -ex "echo @@ end\n" -ex kill >"$vout" 2>&1)
bins_summary="memtrace: leaks: 24 bytes definitely lost in 1 blocks, 2240 bytes indirectly lost in 40 blocks, 0 bytes possibly lost in 0 blocks, 24 bytes still reachable in 1 blocks"
part leaks "$vout" >"$work/gdb_bins_leaks.out"
has "gdb live: a lost block before a free chunk in a bin" "$work/gdb_bins_leaks.out" "$bins_summary"
part refs "$vout" >"$work/gdb_bins_refs.out"
has "gdb live: refs names the bin's word in libc, and that it holds nothing" "$work/gdb_bins_refs.out" \
    " in libc.so.6 (the allocator's data: holds nothing but by a block's start), to offset 16"
has "gdb live: refs: the record is definitely lost" "$work/gdb_bins_refs.out" "(24 bytes, definitely lost;"
if [ -s "$work/bins.core" ]; then
    (cd "$work" && timeout 120 gdb -q -batch -nx "$vprog" "$work/bins.core" -ex "source $helper" \
        -ex "echo @@ leaks\n" -ex "memtrace leaks" -ex "echo @@ end\n" >"$work/gdb_bins_core.out" 2>&1)
    part leaks "$work/gdb_bins_core.out" >"$work/gdb_bins_core_leaks.out"
    has "gdb core: a lost block before a free chunk in a bin" "$work/gdb_bins_core_leaks.out" "$bins_summary"
else
    fail "gdb core: bins" "no core file: $(cat "$vout")"
fi

# ---- LeakSanitizer as the oracle: its lost total is memtrace's D + I.
lsan_total() { # FILE -> "BYTES BLOCKS" from its SUMMARY line, "0 0" without one
    awk '/^SUMMARY: .*Sanitizer: [0-9]+ byte\(s\) leaked in [0-9]+ allocation/ { print $3, $7; f = 1 }
         END { if (!f) print 0, 0 }' "$1"
}
if [ -e "$lsan" ]; then
    for case in full:: one:one.supp: all:all.supp:; do
        name=${case%%:*} rest=${case#*:} supp=${rest%%:*}
        opts=exitcode=23
        [ -n "$supp" ] && opts="$opts:suppressions=$work/$supp"
        (cd "$work" && LSAN_OPTIONS=$opts LD_PRELOAD="$lsan" timeout 60 "$prog" \
            >/dev/null 2>"$work/lsan_$name.err")
        lsan_rc=$?
        case $name in
            full) mine=$work/tracer.err; my_rc=23
                  gdb_ours=$(awk '/^memtrace: leaks: [0-9]+ bytes definitely/ { print $3 + $10, $8 + $15 }' \
                      "$work/gdb_core_leaks.out" 2>/dev/null)
                  if [ "$gdb_ours" = "$(lsan_total "$work/lsan_$name.err")" ]; then
                      pass "LeakSanitizer agrees with memtrace leaks on the core: $gdb_ours"
                  else
                      fail "LeakSanitizer (gdb)" "memtrace leaks '$gdb_ours', LeakSanitizer '$(lsan_total "$work/lsan_$name.err")'"
                  fi ;;
            one) mine=$work/supp_one.err; my_rc=23 ;;
            all) mine=$work/supp_all.err; my_rc=0 ;;
        esac
        ours=$(awk '/^memtrace: leaks: [0-9]+ bytes definitely/ { print $3 + $10, $8 + $15 }' "$mine")
        theirs=$(lsan_total "$work/lsan_$name.err")
        if [ "$ours" = "$theirs" ] && [ "$lsan_rc" = "$my_rc" ]; then
            pass "LeakSanitizer agrees ($name): $theirs, status $lsan_rc"
        else
            fail "LeakSanitizer ($name)" "memtrace '$ours' status $my_rc, LeakSanitizer '$theirs' status $lsan_rc"
        fi
    done
else
    echo "SKIP LeakSanitizer: $lsan not installed"
fi

finish leaks
