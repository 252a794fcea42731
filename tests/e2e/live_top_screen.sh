#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# memtrace top in a real terminal (tmux) against a traced server that
# allocates at known sites about every millisecond and takes a heartbeat
# each time (tests/progs/live_top_server): the screen names each site with
# its function and file:line (SITE: markers); the keys g, a, t and l put
# the site that leads that order first; q quits with status 0 and the
# pane's process is gone; the server, watched for 10 s, never stops longer
# than 50 ms between two heartbeats. On a loaded machine, where the same
# server unwatched, run at the same time, stops that long too, the
# watched one may not stop so more often than it, give or take 2 (the
# machine's stops come alone; a view that stopped the process at each
# refresh would add 10). -n COUNT ends the screen by itself.
# Prints "live_top_screen: N passed, N failed" last.
set -u
. "$(dirname "$0")/lib.sh"
memtrace=$build/memtrace
server=$tests/live_top_server
src=tests/progs/live_top_server.c
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_RECORD MEMTRACE_SAMPLE MEMTRACE_LIB
cd "$work" || exit 1
sock=memtrace-top-test-$$
tm() { tmux -L "$sock" -f /dev/null "$@"; }
pids=()
trap 'exec 2>/dev/null; tm kill-server; kill -9 "${pids[@]}"; wait; rm -rf "$work"' EXIT

start() { # NAME SECONDS: the traced server; its PID into $pid
    : >"$1.out"
    "$memtrace" run "$server" "$2" >"$1.out" 2>"$1.err" &
    pids+=($!)
    pid=
    for _ in $(seq 100); do
        pid=$(awk '$1 == "ready" { print $2; exit }' "$1.out")
        [ -n "$pid" ] && return 0
        sleep 0.1
    done
    echo "the server did not start: $(cat "$1.err")"
    exit 1
}
gap_of() { # NAME WHAT: the server's max_gap_us or long_gaps, once it ended
    for _ in $(seq 300); do
        grep -q '^max_gap_us ' "$1.out" && break
        sleep 0.1
    done
    awk -v w="$2" '$1 == w { print $2 }' "$1.out"
}

# The screen now, and its first site (the line after the column heads).
screen() { tm capture-pane -p -t top >screen.txt 2>/dev/null; }
first_site() { awk '/^ +bytes +blocks +allocs/ { getline; print; exit }' screen.txt | sed 's/.*  //'; }
label() { echo "alloc_$1 at live_top_server.c:$(site_line $src "$1")"; }
# wait_for WHAT: until the screen holds WHAT (a fixed string), 15 s at most.
wait_for() {
    for _ in $(seq 150); do
        screen
        grep -qF -- "$1" screen.txt && return 0
        sleep 0.1
    done
    return 1
}
# key KEY ORDER SITE: KEY sets ORDER, whose first site is alloc_SITE.
key() {
    tm send-keys -t top "$1"
    if wait_for "by $2" && for _ in $(seq 50); do
           screen
           [ "$(first_site)" = "$(label "$3")" ] && break
           sleep 0.1
       done && [ "$(first_site)" = "$(label "$3")" ]; then
        pass "key $1: by $2, $(label "$3") first"
    else
        fail "key $1: by $2, $(label "$3") first" "$(cat screen.txt)"
    fi
}

# The same server unwatched, at the same time: the machine's own stops.
start alone 16
start watched 16
t0=$(date +%s.%N)
tm new-session -d -s top -x 160 -y 30 \
    "'$memtrace' top '$pid'; echo \$? >'$work/top.rc'"
if wait_for "$(label big)"; then
    pass "the screen shows the view's first refresh"
else
    fail "the screen shows the view's first refresh" "$(cat screen.txt)"
fi
has "the header names the process and the order" screen.txt \
    "memtrace top - process $pid (live_top_server) - every 1 s - by live"
has "the keys are named" screen.txt "keys: l live bytes  a allocations  t temporary  g growth  q quit"
wait_for "$(label churn)" # its blocks are all freed: counted from the second refresh
for s in big steady grow churn; do
    has "the screen names alloc_$s's function and file:line" screen.txt "$(label "$s")"
done
grep -qE '^live: [0-9]+ bytes in [0-9]+ blocks; allocations: [0-9]+ a second; growth: [+-][0-9]+ bytes since the last refresh, [+-][0-9]+ since the start$' screen.txt &&
    pass "the totals line, with the rates after a second refresh" ||
    fail "the totals line, with the rates after a second refresh" "$(cat screen.txt)"
check "by live: alloc_big first" "$(label big)" "$(first_site)"
key g growth grow
key a allocs churn
key t temporary churn
key l live big
# Watched for 10 s in all, then q.
sleep "$(echo "10 - ($(date +%s.%N) - $t0)" | bc | sed 's/^-.*/0/')"
tm send-keys -t top q
for _ in $(seq 100); do
    [ -s top.rc ] && ! tm has-session -t top 2>/dev/null && break
    sleep 0.1
done
check "q: memtrace top exits with status 0" 0 "$(cat top.rc 2>/dev/null)"
if tm has-session -t top 2>/dev/null; then
    fail "q: the pane's process is gone" "$(tm list-panes -a 2>&1)"
else
    pass "q: the pane's process is gone"
fi
kill -0 "$pid" 2>/dev/null && pass "the server runs on after the view" ||
    fail "the server runs on after the view" "it is gone: $(cat watched.err)"
gap=$(gap_of watched max_gap_us) long=$(gap_of watched long_gaps)
base=$(gap_of alone max_gap_us) base_long=$(gap_of alone long_gaps)
check "the server ended normally" "" "$(cat watched.err)"
echo "heartbeat: longest stop watched $gap us ($long over 50 ms), unwatched $base us ($base_long)"
if [ -z "$gap" ] || [ -z "$base" ]; then
    fail "heartbeat" "no figure: $(cat watched.out alone.out)"
elif [ "$gap" -le 50000 ]; then
    pass "heartbeat: no stop longer than 50 ms while watched ($((gap / 1000)) ms)"
elif [ "$long" -le $((base_long + 2)) ]; then
    pass "heartbeat: stops over 50 ms as unwatched, a loaded machine ($long watched, $base_long unwatched)"
else
    fail "heartbeat: no stop longer than 50 ms while watched" \
        "$long stops over 50 ms watched (longest $((gap / 1000)) ms), $base_long unwatched (longest $((base / 1000)) ms)"
fi
# -n COUNT on the screen: it ends by itself after COUNT refreshes, status 0.
start counted 10
tm new-session -d -s counted -x 160 -y 30 \
    "'$memtrace' top -n 2 --interval 0.3 '$pid'; echo \$? >'$work/counted.rc'"
for _ in $(seq 100); do
    [ -s counted.rc ] && ! tm has-session -t counted 2>/dev/null && break
    sleep 0.1
done
check "-n 2 on the screen: ends by itself with status 0" 0 "$(cat counted.rc 2>/dev/null)"
finish live_top_screen
