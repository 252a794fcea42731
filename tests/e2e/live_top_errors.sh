#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# memtrace top on what it cannot watch: one "memtrace: top:" line on
# standard error, the status (2 for a usage error, 1 for a process that
# cannot be watched), nothing on standard output but what was shown
# before, no crash; and the process never notices (it runs on, says
# nothing). A bad PID, no PID, a bad option, a process that does not
# exist, one that is not traced, one that exits while watched, another
# user's (setpriv to nobody), and no terminal without --batch.
# Prints "live_top_errors: N passed, N failed" last.
set -u
. "$(dirname "$0")/lib.sh"
memtrace=$build/memtrace
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_RECORD MEMTRACE_SAMPLE MEMTRACE_LIB
cd "$work" || exit 1
pids=()
trap 'exec 2>/dev/null; kill -9 "${pids[@]}"; wait; rm -rf "$work"' EXIT

start() { # NAME CMD...: in the background; its "ready PID" into $pid
    local name=$1
    shift
    : >"$name.out"
    "$@" >"$name.out" 2>"$name.err" &
    pids+=($!)
    pid=
    for _ in $(seq 100); do
        pid=$(awk '$1 == "ready" { print $2; exit }' "$name.out")
        [ -n "$pid" ] && return 0
        sleep 0.1
    done
    echo "$name did not start: $(cat "$name.err")"
    exit 1
}

# top NAME STATUS LINE ARGS...: memtrace top ARGS exits with STATUS, its
# standard error is LINE alone (a usage error: LINE then the usage line;
# not so for no terminal, a status 2 too).
top() {
    local name=$1 want=$2 line=$3 rc=0
    shift 3
    timeout 60 "$memtrace" top "$@" </dev/null >"$name.top" 2>"$name.toperr" || rc=$?
    check "$name: status" "$want" "$rc"
    check "$name: the line" "$line" "$(head -1 "$name.toperr")"
    if [ "$want" = 2 ] && [ "$name" != "not a terminal" ]; then
        check "$name: then the usage" 2 "$(wc -l <"$name.toperr")"
    else
        check "$name: one line" 1 "$(wc -l <"$name.toperr")"
    fi
}

usage_line="usage: memtrace top [--interval SECONDS] [--by live|allocs|temporary|growth] [--batch] [-n COUNT] PID"
top "bad PID" 2 "memtrace: top: '12ab' is not a process id" --batch 12ab
check "bad PID: the usage line" "$usage_line" "$(sed -n 2p "bad PID.toperr" 2>/dev/null)"
top "no PID" 2 "memtrace: top: which process? PID is missing" --batch
top "bad --by" 2 "memtrace: top: --by takes live, allocs, temporary or growth" --by size 1
top "bad -n" 2 "memtrace: top: -n takes a count of refreshes, 1 or more" --batch -n 0 1
top "bad --interval" 2 "memtrace: top: --interval takes seconds, from 0.01 to 86400" --interval x 1

# A process that does not exist: a child already reaped.
true &
gone=$!
wait "$gone"
top "no such process" 1 "memtrace: top: no process $gone" --batch "$gone"

# Not traced.
sleep 60 &
pids+=($!)
untraced=$!
top "not traced" 1 \
    "memtrace: top: process $untraced (sleep) is not traced by memtrace (no memtrace_state in its libraries)" \
    --batch "$untraced"
kill -0 "$untraced" 2>/dev/null && pass "not traced: the process runs on" ||
    fail "not traced: the process runs on" "it is gone"

# Exits while watched: the refreshes until then, then one line.
start exits "$memtrace" run "$tests/live_top_server" 2
top "exits while watched" 1 "memtrace: top: process $pid exited" \
    --batch -n 100 --interval 0.2 "$pid"
n=$(grep -c '^memtrace top: process .* refresh [0-9]* of 100' "exits while watched.top")
[ "$n" -ge 1 ] && [ "$n" -lt 100 ] && pass "exits while watched: $n refreshes shown before" ||
    fail "exits while watched: some refreshes shown before" "$n"
check "exits while watched: the process ended as it would" "" "$(cat exits.err)"
has "exits while watched: and said its last line" exits.out "max_gap_us "

# Another user's: root's traced process, watched as nobody (memtrace-top
# copied where nobody may run it: the checkout may sit in a directory only
# its owner enters).
start others "$memtrace" run "$tests/live_top_fixed"
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
    pubdir=$(mktemp -d /tmp/memtrace-top.XXXXXX)
    chmod 755 "$pubdir"
    cp "$build/memtrace-top" "$pubdir/"
    rc=0
    timeout 60 setpriv --reuid=nobody --regid=nogroup --clear-groups \
        "$pubdir/memtrace-top" --batch "$pid" </dev/null >nobody.top 2>nobody.err || rc=$?
    rm -rf "$pubdir"
    check "another user's: status" 1 "$rc"
    check "another user's: the line" \
        "memtrace: top: cannot read the memory of process $pid (Permission denied): it is another user's, or ptrace is restricted (/proc/sys/kernel/yama/ptrace_scope)" \
        "$(cat nobody.err)"
    check "another user's: nothing on standard output" "" "$(cat nobody.top)"
    kill -0 "$pid" 2>/dev/null && pass "another user's: the process runs on" ||
        fail "another user's: the process runs on" "it is gone"
    check "another user's: the process said nothing" "" "$(cat others.err)"
else
    echo "SKIP live_top_errors: another user's process (needs root, nobody and setpriv)"
fi

# Not a terminal, without --batch.
top "not a terminal" 2 "memtrace: top: not a terminal: use --batch for text" "$pid"
finish live_top_errors
