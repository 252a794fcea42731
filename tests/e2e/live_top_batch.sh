#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# memtrace top --batch against processes that allocate a fixed set and wait
# (tests/progs/live_top_fixed): the output checked line by line, exact
# bytes and blocks of the known sites and their function and file:line
# (SITE: markers), under the tracer, the profiler, and in a process
# memtrace attached to; the table read while it is torn (a record's second
# copy half-way through a backward shift: 100 blocks, never 101) or held
# (a writer stopped inside a shard: the refresh skipped, nothing shown);
# the orders of --by on a server whose sites lead each one
# (tests/progs/live_top_server).
# Prints "live_top_batch: N passed, N failed" last.
set -u
. "$(dirname "$0")/lib.sh"
memtrace=$build/memtrace
fixed=$tests/live_top_fixed
src=tests/progs/live_top_fixed.c
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_RECORD MEMTRACE_SAMPLE MEMTRACE_LIB
cd "$work" || exit 1

pids=()
trap 'exec 2>/dev/null; kill -9 "${pids[@]}"; wait; rm -rf "$work"' EXIT

# start NAME CMD...: runs CMD in the background with its output in NAME.out
# and waits (10 s at most) for its "ready PID" line; PID into $pid.
start() {
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
    return 1
}

# The site lines of the fixed set, for refresh 1 (RATE -) or later (0).
fixed_sites() { # RATE
    printf '%11s %10s %10s %12s %12s  %s\n' \
        4800 100 "$1" "$1" +0 "make_small at live_top_fixed.c:$(site_line $src small)" \
        4096 1 "$1" "$1" +0 "make_large at live_top_fixed.c:$(site_line $src large)" \
        3000 3 "$1" "$1" +0 "make_medium at live_top_fixed.c:$(site_line $src medium)"
}
columns="      bytes     blocks   allocs/s  temporary/s       growth  site"

expected_fixed() { # PID
    cat <<EOT
memtrace top: process $1 (live_top_fixed), refresh 1 of 2, every 0.3 s, by live
live: 11896 bytes in 104 blocks; allocations: - a second; growth: - bytes since the last refresh, +0 since the start
$columns
$(fixed_sites -)

memtrace top: process $1 (live_top_fixed), refresh 2 of 2, every 0.3 s, by live
live: 11896 bytes in 104 blocks; allocations: 0 a second; growth: +0 bytes since the last refresh, +0 since the start
$columns
$(fixed_sites 0)

EOT
}

batch_exact() { # NAME: the fixed set at $pid, two refreshes
    local rc=0
    timeout 60 "$memtrace" top --batch -n 2 --interval 0.3 "$pid" >"$1.top" 2>"$1.toperr" || rc=$?
    check "$1: status" 0 "$rc"
    if diff <(expected_fixed "$pid") "$1.top" >"$1.diff"; then
        pass "$1: --batch -n 2, line by line"
    else
        fail "$1: --batch -n 2, line by line" "$(cat "$1.diff" "$1.toperr")"
    fi
}

# ---------------------------------------------------------------- tracer, profiler
if start tracer "$memtrace" run "$fixed"; then
    batch_exact tracer
    kill -0 "$pid" 2>/dev/null && pass "tracer: the process runs on" ||
        fail "tracer: the process runs on" "it is gone"
    check "tracer: the process said nothing" "" "$(cat tracer.err)"
fi
if start profiler "$memtrace" run --profile "$fixed"; then
    batch_exact profiler
fi

# ---------------------------------------------------------------- torn, held
# Without the reader's checks the torn table shows make_small with 101 blocks.
if start torn "$memtrace" run "$fixed" torn; then
    sleep 0.3 # the record planted after "ready"
    timeout 60 "$memtrace" top --batch -n 2 --interval 0.3 "$pid" >torn.top 2>&1
    check "torn: make_small's line in both refreshes, 100 blocks" \
        "$(printf '%s\n' "$(fixed_sites -)" "$(fixed_sites 0)" | grep make_small)" \
        "$(grep make_small torn.top)"
    has "torn: the totals as they are" torn.top "live: 11896 bytes in 104 blocks;"
fi
if start held "$memtrace" run "$fixed" locked; then
    sleep 0.3
    rc=0
    timeout 60 "$memtrace" top --batch -n 2 --interval 0.3 "$pid" >held.top 2>&1 || rc=$?
    check "held: status" 0 "$rc"
    check "held: each refresh skipped, with the shard named" 2 \
        "$(grep -cE '^memtrace top: refresh skipped: live shard [0-9]+ was being changed at each of 4 reads$' held.top)"
    lacks "held: no site shown" held.top "make_small"
    lacks "held: no totals shown" held.top "live: "
fi

# ---------------------------------------------------------------- attached
# An untraced server, attached to: the sites it allocates from then on.
server=$tests/live_top_server
ssrc=tests/progs/live_top_server.c
if start attached "$server" 30; then
    if timeout 120 "$memtrace" attach "$pid" >attach.log 2>&1; then
        sleep 1
        timeout 60 "$memtrace" top --batch -n 2 --interval 0.5 --by growth "$pid" >attached.top 2>&1
        first=$(awk '/^ +bytes +blocks/ { getline; print; exit }' <(sed -n '/refresh 2 of 2/,$p' attached.top))
        case $first in
        *"alloc_grow at live_top_server.c:$(site_line $ssrc grow)") pass "attached: by growth, alloc_grow first" ;;
        *) fail "attached: by growth, alloc_grow first" "$(cat attached.top)" ;;
        esac
        lacks "attached: alloc_big (before the attach) unknown" attached.top alloc_big
    else
        fail "memtrace attach" "$(cat attach.log)"
    fi
fi

# ---------------------------------------------------------------- orders
# Each order of --by puts another site of the server first.
# The first site of the last refresh whose first site has a figure in its
# order's column (on a loaded machine the server may get no CPU for an
# interval, and every site then has 0 there).
first_site() { # ORDER
    local col
    case $1 in live) col=1 ;; allocs) col=3 ;; temporary) col=4 ;; growth) col=5 ;; esac
    timeout 60 "$memtrace" top --batch -n 4 --interval 0.5 --by "$1" "$pid" >"by_$1.top" 2>&1
    awk -v c="$col" '/^ +bytes +blocks/ { getline; if ($c != "-" && $c + 0 != 0) line = $0 }
                     END { print line }' "by_$1.top" | sed 's/.*  //'
}
if start orders "$memtrace" run "$server" 30; then
    for o in live:big allocs:churn temporary:churn growth:grow; do
        name=${o#*:}
        check "--by ${o%%:*}: alloc_$name first" \
            "alloc_$name at live_top_server.c:$(site_line $ssrc "$name")" "$(first_site "${o%%:*}")"
    done
    line=$(sed -n '/refresh 4 of 4/,$p' by_live.top | grep ' alloc_steady at ')
    case $line in
    "      50000         50          0            0           +0  alloc_steady at live_top_server.c:$(site_line $ssrc steady)")
        pass "--by live: alloc_steady's exact line" ;;
    *) fail "--by live: alloc_steady's exact line" "$line" ;;
    esac
    # The churn's blocks are each freed at once: every one is temporary.
    line=$(awk '/ alloc_churn at / && $3 != "-" && $3 + 0 != 0 { line = $0 } END { print line }' \
               by_allocs.top)
    read -r b k a t g _ <<<"$line"
    if [ "$b $k $g" = "0 0 +0" ] && [ "$a" -gt 1000 ] && [ "$a" = "$t" ]; then
        pass "--by allocs: alloc_churn, no live block, as many temporary as allocations ($a/s)"
    else
        fail "--by allocs: alloc_churn, no live block, as many temporary as allocations" "$line"
    fi
fi
finish live_top_batch
