#!/usr/bin/env bash
# The leak check at exit (MEMTRACE_LEAK_CHECK=1) on tests/progs/leaks.c, in
# both builds: each lost site with its exact bytes, blocks, class and
# file:line; none of the kept ones (global, interior pointer, another
# thread's stack, a register only, through a reachable block, TLS) listed;
# the summary line exactly; status 23 (MEMTRACE_LEAK_EXITCODE) or the
# program's own; suppressions for one site and for all; bad input; and
# LeakSanitizer (Debian liblsan0), where installed, as the oracle for the
# lost totals of the same binary.
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

has() { # NAME FILE FIXED-STRING
    if grep -qF -- "$3" "$2"; then pass "$1"; else fail "$1" "'$3' not in: $(cat "$2")"; fi
}
lacks() { # NAME FILE FIXED-STRING
    if grep -qF -- "$3" "$2"; then fail "$1" "'$3' in: $(cat "$2")"; else pass "$1"; fi
}
status() { # NAME EXPECTED
    if [ "$RC" = "$2" ]; then pass "$1: status $2"; else fail "$1" "status $RC, not $2"; fi
}

# The group "B bytes CLASS lost in K blocks" whose frame #0 is at SITE.
group() { # NAME FILE "B bytes CLASS lost in K blocks" SITE
    if awk -v g="memtrace: $3, allocated at:" -v f="$(at "$src" "$4")" '
           $0 == g { getline; if (index($0, f)) found = 1 } END { exit !found }' "$2"; then
        pass "$1: $3 at $4"
    else
        fail "$1" "no '$3' group at $(at "$src" "$4") in: $(cat "$2")"
    fi
}

# Every frame #0 of a lost group, as FILE:LINE: lines.
lost_sites() { awk '/^memtrace: [0-9]+ bytes (definitely|indirectly) lost/ { getline; print }' "$1"; }

kept_not_listed() { # NAME FILE
    local s bad=
    for s in global interior thread_stack register holder through tls; do
        lost_sites "$2" | grep -qF "$(at "$src" $s)" && bad="$bad $s"
    done
    if [ -z "$bad" ]; then pass "$1: no kept block listed as lost"; else fail "$1" "listed as lost:$bad"; fi
}

summary_is() { # NAME FILE D N I M
    local line
    line=$(grep '^memtrace: leaks: [0-9]* bytes definitely' "$2")
    local want="memtrace: leaks: $3 bytes definitely lost in $4 blocks, $5 bytes indirectly lost in $6 blocks, "
    # Still reachable: at least the kept blocks (2916 bytes in 7), plus the C library's.
    if [ "${line#"$want"}" != "$line" ] &&
       echo "$line" | awk '{ if ($(NF-6) >= 2916 && $(NF-1) >= 7 && $(NF-4) == "still") exit 0; exit 1 }'; then
        pass "$1: summary"
    else
        fail "$1" "summary '$line', wanted '$want' and >= 2916 bytes still reachable in >= 7 blocks"
    fi
}

check_full() { # NAME FILE
    group "$1" "$2" "100 bytes definitely lost in 1 blocks" direct
    group "$1" "$2" "48 bytes definitely lost in 1 blocks" list_head
    group "$1" "$2" "96 bytes indirectly lost in 3 blocks" list_node
    group "$1" "$2" "64 bytes definitely lost in 1 blocks" cycle
    group "$1" "$2" "64 bytes indirectly lost in 1 blocks" cycle
    kept_not_listed "$1" "$2"
    summary_is "$1" "$2" 212 3 160 4
    # Largest first.
    if lost_sites "$2" >/dev/null && grep -o '^memtrace: [0-9]* bytes [a-z]* lost' "$2" |
        awk '{ print $2 }' | sort -c -n -r 2>/dev/null; then
        pass "$1: groups largest first"
    else
        fail "$1" "groups not largest first"
    fi
}

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
lacks "nothing lost: no group" "$work/none.err" "lost in 1 blocks, allocated at"

# A thread that blocks the stop signal: scanned from its system call's stack
# pointer, and the report says so.
run blocked "$tracer" MEMTRACE_LEAK_CHECK=1 -- blocked
status "a thread that cannot be stopped" 23
group "blocked" "$work/blocked.err" "100 bytes definitely lost in 1 blocks" direct
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
marked() { # NAME "D bytes definitely lost, I bytes indirectly lost, R bytes still reachable" SITE
    if awk -v m="  leak check: $2" -v f="$(at "$src" "$3")" '
           $0 == m { getline; if (index($0, f)) found = 1 } END { exit !found }' "$work/prof.txt"; then
        pass "profiler exit report: $3: $2"
    else
        fail "profiler exit report" "no '$2' mark on $3 in: $(cat "$work/prof.txt")"
    fi
}
marked profiler "100 bytes definitely lost, 0 bytes indirectly lost, 0 bytes still reachable" direct
marked profiler "64 bytes definitely lost, 64 bytes indirectly lost, 0 bytes still reachable" cycle
marked profiler "0 bytes definitely lost, 96 bytes indirectly lost, 0 bytes still reachable" list_node
marked profiler "0 bytes definitely lost, 0 bytes indirectly lost, 200 bytes still reachable" global
marked profiler "0 bytes definitely lost, 0 bytes indirectly lost, 500 bytes still reachable" register

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
summary_is "suppressing every site" "$work/supp_all.err" 0 0 0 0
has "suppressing every site: what it took" "$work/supp_all.err" \
    "memtrace: leaks: suppressed by leak:leaks.c: 372 bytes in 7 blocks"

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
            full) mine=$work/tracer.err; my_rc=23 ;;
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
