#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# What memtrace interposes, and how, off the tested road: a
# moving realloc's free in the recording before another thread's reuse of
# the address; glibc's __libc_* allocator names; a program's own operator
# new and delete; the program after `memtrace detach`; the warning about a
# malloc that is not memtrace's. Prints one PASS/FAIL line per check and
# "trust_interpose: N passed, N failed" last.
set -u
. "$(dirname "$0")/lib.sh"
ulimit -c 0
lib=$build/libmemtrace.so
# traced CMD...: CMD under the library, bounded (timeout itself untraced).
traced() { timeout 60 env LD_PRELOAD="$lib" "$@"; }
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_RECORD MEMTRACE_RECORD_CULL_MS

# ---- 14: a moving realloc's free is stamped before the real realloc.
# One arena and no tcache: the address a realloc frees is soon another
# thread's new block. The replay then ends the old block at that
# allocation (a free missed) unless the free came first; a program that
# frees all it allocates leaves allocations = frees + leaked blocks.
rec=$work/race.rec
RC=0
timeout 60 env GLIBC_TUNABLES=glibc.malloc.arena_max=1:glibc.malloc.tcache_count=0 \
    MEMTRACE_RECORD="$rec" LD_PRELOAD="$lib" "$tests/trust_interpose_realloc_race" 1.5 \
    >"$work/race.out" 2>&1 || RC=$?
status "realloc race: the program" 0
if "$build/memtrace-export" --json "$rec" -o "$work/race.json" 2>"$work/race.err"; then
    missed=$(python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
print(t["allocations"] - t["frees"] - t["leaked_blocks"], t["allocations"])' "$work/race.json")
    set -- $missed
    if [ "$2" -gt 100000 ]; then pass "realloc race: $2 allocations recorded"; else fail "realloc race: allocations" "only $2"; fi
    check "realloc race: no free missed by the replay" 0 "$1"
else
    fail "realloc race: export" "$(cat "$work/race.err")"
fi

# ---- 16: glibc's __libc_* names are interposed: a block from
# __libc_malloc freed by free (and the reverse) is no bad free, and its
# leak is seen, at its site.
P=tests/progs/trust_interpose_libc_names.c
RC=0
traced "$tests/trust_interpose_libc_names" >"$work/libc.out" 2>"$work/libc.err" || RC=$?
status "__libc_* names mixed with free and malloc" 0
check "__libc_* names: no report" "" "$(cat "$work/libc.err")"
check "__libc_* names: the program's output" done "$(cat "$work/libc.out")"
RC=0
MEMTRACE_LEAK_CHECK=1 traced "$tests/trust_interpose_libc_names" leak \
    >"$work/libc_leak.out" 2>"$work/libc_leak.err" || RC=$?
status "__libc_malloc leak: the leak check's status" 23
has "__libc_malloc leak: 77 bytes lost" "$work/libc_leak.err" \
    "memtrace: 77 (77 direct, 0 indirect) bytes in 1 blocks are definitely lost"
frame=$(grep -A1 'bytes in 1 blocks are definitely lost' "$work/libc_leak.err" | sed -n 2p)
case $frame in
"  #0 main at $(at "$P" libc_leak)"*) pass "__libc_malloc leak: at its site" ;;
*) fail "__libc_malloc leak: at its site" "'$frame', not at $(at "$P" libc_leak)" ;;
esac

# ---- 17: a program's own operator new and unsized delete: the runtime's
# sized and array forms reach them through memtrace's, which must call
# them at once (no quarantine) and report no mismatch (the blocks are the
# program's mallocs).
RC=0
traced "$tests/trust_interpose_own_new" >"$work/own_new.out" 2>"$work/own_new.err" || RC=$?
status "own operator new and delete" 0
check "own operator new and delete: its count" "live 0" "$(cat "$work/own_new.out")"
check "own operator new and delete: no report" "" "$(cat "$work/own_new.err")"

# ---- 18: after memtrace detach (and recording turned off).
# Recording off by memtrace_set_recording(0): the quarantine lets go.
RC=0
MEMTRACE_QUARANTINE=4194304 traced "$tests/trust_interpose_detach" off "$work" \
    >"$work/off.out" 2>"$work/off.err" || RC=$?
status "recording off: the program" 0
check "recording off: the quarantine's blocks released" "in use: released
destructor ran" "$(cat "$work/off.out")"

# wait_line FILE PREFIX: waits up to 30 s for a line starting with PREFIX.
wait_line() {
    for _ in $(seq 600); do
        grep -q "^$2" "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}
# start DIR MODE [PROGRAM ARGS...]: starts the program (default
# trust_interpose_detach MODE DIR, whose waits are bounded) untraced, its output in DIR/out and
# DIR/err, its status in DIR/rc once it exits; waits for its first line;
# sets tpid.
start() {
    local d=$1 mode=$2
    shift 2
    mkdir -p "$d"
    [ $# = 0 ] && set -- "$tests/trust_interpose_detach" "$mode" "$d"
    ("$@" >"$d/out" 2>"$d/err" & echo $! >"$d/pid"; wait $!; echo $? >"$d/rc") &
    wait_line "$d/out" "@@ "
    tpid=$(when_written "$d/pid")
}
# ended DIR: waits up to 60 s for its status.
ended() {
    for _ in $(seq 1200); do
        [ -s "$1/rc" ] && return 0
        sleep 0.05
    done
    kill -9 "$(cat "$1/pid")" 2>/dev/null
    echo timeout >"$1/rc"
}
denied=$(ptrace_denied)
if [ -n "$denied" ]; then
    fail "detach" "$denied"
else
    # Writes up to malloc_usable_size after the detach, and the quarantine.
    d=$work/usable
    start "$d" usable
    "$build/memtrace" attach "$tpid" 2>"$d/attach.err" && touch "$d/attached"
    wait_line "$d/out" "@@ attached-done"
    "$build/memtrace" detach "$tpid" 2>"$d/detach.err" && touch "$d/detached"
    ended "$d"
    check "detach, malloc_usable_size: status" 0 "$(cat "$d/rc")"
    check "detach, malloc_usable_size: the block's own size, and the quarantine let go" \
        "usable 13
in use: released
destructor ran" "$(grep -v '^@@' "$d/out")"
    check "detach, malloc_usable_size: no report" "" "$(cat "$d/err")"
    # A heap error while attached: the status says so, and the program's
    # atexit handler and destructor still run.
    d=$work/atexit
    start "$d" atexit
    "$build/memtrace" attach "$tpid" 2>"$d/attach.err" && touch "$d/attached"
    ended "$d"
    check "heap error while attached: status" 1 "$(cat "$d/rc")"
    check "heap error while attached: atexit handler and destructor ran" "atexit ran
destructor ran" "$(grep -v '^@@' "$d/out")"
    has "heap error while attached: the report" "$d/err" "memtrace: heap-buffer-overflow: 1 byte past the end of a 13-byte block"
    # Detached and attached again, 5 times, while 8 threads allocate and
    # free at full speed (attach_target): no report (a block the real
    # allocator handed out while recording was on but the entries not
    # redirected, freed through memtrace's free, was a "double free").
    d=$work/cycles
    start "$d" "" "$tests/attach_target" 8 "$d"
    cycles=0
    for _ in 1 2 3 4 5; do
        "$build/memtrace" attach "$tpid" 2>>"$d/launcher.err" || break
        sleep 0.3
        "$build/memtrace" detach "$tpid" 2>>"$d/launcher.err" || break
        sleep 0.2
        cycles=$((cycles + 1))
    done
    touch "$d/go" "$d/late" "$d/stop"
    ended "$d"
    check "5 detach/attach cycles on 8 threads: all made" 5 "$cycles"
    check "5 detach/attach cycles on 8 threads: status" 7 "$(cat "$d/rc")"
    check "5 detach/attach cycles on 8 threads: no report" "" "$(cat "$d/err")"
fi

# ---- 20: a non-PIE executable's canonical PLT entry for malloc (taking
# its address) is no malloc of its own: no warning; one that defines
# malloc still gets it.
P=tests/progs/trust_interpose_malloc_address.c
gcc -O0 -g -no-pie -fno-pie -o "$work/malloc_address" "$root/$P"
gcc -O0 -g -no-pie -fno-pie -DOWN_MALLOC -o "$work/own_malloc" "$root/$P"
warning="not memtrace's: the program's allocations go untraced"
RC=0
traced "$work/malloc_address" >"$work/maddr.out" 2>"$work/maddr.err" || RC=$?
status "non-PIE &malloc" 0
check "non-PIE &malloc: its output" 7 "$(cat "$work/maddr.out")"
check "non-PIE &malloc: no warning" "" "$(cat "$work/maddr.err")"
RC=0
traced "$work/own_malloc" >"$work/mown.out" 2>"$work/mown.err" || RC=$?
status "own malloc" 0
check "own malloc: the warning" \
    "memtrace: malloc here is $work/own_malloc's, $warning; put libmemtrace.so first in LD_PRELOAD (LD_PRELOAD=\"$lib ...\")" \
    "$(cat "$work/mown.err")"
# Debian's python3 (not a shim of pyenv's, say, earlier in PATH) is non-PIE.
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
for cmd in "$py -c pass" "node -e 0"; do
    if ! command -v "${cmd%% *}" >/dev/null; then
        fail "$cmd: no warning" "${cmd%% *} is not installed (make deps)"
        continue
    fi
    RC=0
    timeout 60 "$build/memtrace" run $cmd >"$work/real.out" 2>"$work/real.err" || RC=$?
    status "memtrace run $cmd" 0
    lacks "memtrace run $cmd: no warning" "$work/real.err" "$warning"
done

finish trust_interpose
