#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# memtrace attach / detach: a process started without memtrace
# (tests/progs/attach_target.c: threads allocating and freeing at full
# speed) is attached, asked about with gdb -p and the helper and from a
# core written then, detached, and runs to the same output and exit status
# as an unattached run; ATTACH_RUNS (20) more runs attach at a random
# moment (every other one detaches; half of them in sample mode,
# MEMTRACE_SAMPLE, so that blocks carry trailers across the attach and the
# detach); a python3 loop is attached the same way, and sqlite3 in a long
# query; bad input gets one memtrace: line, status 1 (2 for usage) and
# leaves the process as it was, also a process stopped, traced by another
# program or exited; a program signalled every millisecond is attached and
# detached. Skips, saying why, where ptrace is not permitted.
# Prints one PASS/FAIL line per check and "attach: N passed, N failed".
set -u
. "$(dirname "$0")/lib.sh"
ulimit -c 0
mt=$build/memtrace
target=$tests/attach_target
T=tests/progs/attach_target.c
runs=${ATTACH_RUNS:-20}
helper=$root/gdb/memtrace.py

# ptrace permitted? (kernel.yama.ptrace_scope, a container without
# CAP_SYS_PTRACE): gdb attaches to a sleeping child, or the suite skips.
denied=$(ptrace_denied)
if [ -n "$denied" ]; then
    echo "SKIP attach: $denied"
    exit 0
fi

# start_target DIR [ENV...]: starts attach_target 4 DIR (its stdout in
# DIR/out, its status in DIR/rc once it exits) and waits for its first
# line; sets tpid.
start_target() {
    local d=$1
    shift
    mkdir -p "$d"
    (env "$@" "$target" 4 "$d" >"$d/out" 2>"$d/err" & echo $! >"$d/pid"; wait $!; echo $? >"$d/rc") &
    wait_line "$d/out" "@@ before"
    tpid=$(when_written "$d/pid")
}
wait_line() { # FILE PREFIX: waits up to 20 s for a line starting with PREFIX
    for _ in $(seq 400); do
        grep -q "^$2" "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}
# finish_target DIR: lets it stop, waits for its exit (20 s at most).
finish_target() {
    touch "$1/go" "$1/late" "$1/stop"
    for _ in $(seq 400); do
        [ -s "$1/rc" ] && return 0
        sleep 0.05
    done
    kill -9 "$(cat "$1/pid")" 2>/dev/null
    echo timeout >"$1/rc"
}
# What a run printed, but for the @@ lines (addresses), and its status.
result() { grep -v '^@@' "$1/out"; echo "status $(cat "$1/rc")"; }
ok_line() { # CMD PID: the launcher's line on success, up to the pause
    echo "memtrace: $1 process $2 (libmemtrace.so; it was stopped for"
}

# ---------------------------------------------------------------- reference
ref=$work/ref
mkdir -p "$ref"
touch "$ref/go" "$ref/late" "$ref/stop"
"$target" 4 "$ref" >"$ref/out" 2>&1
echo $? >"$ref/rc"
check "reference run: exit status" "$(cat "$ref/rc")" 7
expected=$(result "$ref")

# ---------------------------------------------------------------- attach, ask, detach
d=$work/one
start_target "$d"
"$mt" attach "$tpid" 2>"$work/attach.err"
check "attach: exit status" "$?" 0
grep -q "^$(ok_line "attached to" "$tpid") [0-9]* ms)\$" "$work/attach.err" &&
    pass "attach: its one line, with the pause" || fail "attach: its one line, with the pause" "$(cat "$work/attach.err")"
grep -q '/libmemtrace\.so$' "/proc/$tpid/maps" &&
    pass "attach: libmemtrace.so loaded" || fail "attach: libmemtrace.so loaded" "not in /proc/$tpid/maps"
# got NAME: the library the program's GOT entry for NAME leads to (in
# .text, or in memtrace's .text.steady: src/capture/steady_text.ld).
got() {
    gdb -q -nx -batch -p "$tpid" -ex "info symbol *(long *)&'$1@got.plt'" </dev/null 2>&1 |
        sed -n "s|^$1 in section \.text[.a-z_]* of .*/\([^/]*\)\$|\1|p"
}
check "attach: the program's malloc is memtrace's" libmemtrace.so "$(got malloc)"
check "attach: the program's free is memtrace's" libmemtrace.so "$(got free)"
touch "$d/go"
wait_line "$d/out" "@@ after-done"
after=$(addr_of after "$d/out")
before=$(addr_of before "$d/out")
gdb -q -nx -batch -p "$tpid" -ex "source $helper" -ex "memtrace $after" -ex "memtrace $before" \
    -ex "memtrace top 10" -ex "gcore $work/attached.core" </dev/null >"$work/ask" 2>&1
answer=$(block_of "$after" "$work/ask")
check "gdb -p: the block allocated after the attach, its size" "$(echo "$answer" | head -1)" \
    "memtrace: $after: start of a 200-byte block allocated by thread 1 (allocation #$(echo "$answer" | head -1 | sed 's/.*#\([0-9]*\))$/\1/'))"
check "gdb -p: the block allocated after the attach, its line" "$(at $T attach-after)" \
    "$(echo "$answer" | sed -n 2p | sed 's/^  #0 main at \([^ ]*:[0-9]*:\)[0-9]*$/\1/')"
grep -q "^memtrace: $before: not a live heap block" "$work/ask" &&
    pass "gdb -p: the block allocated before is unknown" ||
    fail "gdb -p: the block allocated before is unknown" "$(cat "$work/ask")"
grep -q "^memtrace: attached to a running process; recording since allocation #1 (.* UTC); blocks allocated before the attach or while recording was off are unknown$" "$work/ask" &&
    pass "gdb -p: answers say blocks before the attach are unknown" ||
    fail "gdb -p: answers say blocks before the attach are unknown" "$(cat "$work/ask")"
sed -n '/^memtrace: top /,$p' "$work/ask" | grep -q "^  #0 main at $(at $T attach-after)" &&
    pass "gdb -p: memtrace top" || fail "gdb -p: memtrace top" "$(cat "$work/ask")"
# The core written while attached answers the same.
"$mt" core -batch -ex "memtrace $after" -- "$target" "$work/attached.core" </dev/null >"$work/core.ask" 2>&1
check "core: the block allocated after the attach" "$(block_of "$after" "$work/core.ask" | head -2)" \
    "$(echo "$answer" | head -2)"
# memtrace leaks while attached: the 64-byte block allocated before the
# attach holds the only pointer to a 48-byte one allocated after it (and
# the threads' blocks hang from an array allocated before): none is lost;
# the 72-byte block to which no pointer is left is, alone. From gdb -p and
# from the core alike. (Possibly lost is not checked: a thread stopped in
# its check loop may hold only an interior pointer to a block it just
# reallocated.)
lost_summary="memtrace: leaks: 72 bytes definitely lost in 1 blocks, 0 bytes indirectly lost in 0 blocks, "
lost_group="memtrace: 72 (72 direct, 0 indirect) bytes in 1 blocks are definitely lost (with 0 indirectly lost blocks), allocated at:"
leaks_are() { # NAME FILE
    local line
    line=$(grep '^memtrace: leaks: [0-9]* bytes definitely' "$2")
    [ "${line#"$lost_summary"}" != "$line" ] && pass "$1: only the lost block, its exact bytes" ||
        fail "$1: only the lost block, its exact bytes" "summary '$line', wanted '$lost_summary...' in: $(cat "$2")"
    awk -v g="$lost_group" -v f="$(at $T attach-lost)" '
        $0 == g { getline; if (index($0, f)) found = 1 } END { exit !found }' "$2" &&
        pass "$1: the lost block's line" || fail "$1: the lost block's line" "no '$lost_group' at $(at $T attach-lost) in: $(cat "$2")"
    grep -qF "$(at $T attach-held)" "$2" &&
        fail "$1: the block held from one allocated before the attach is not lost" "$(cat "$2")" ||
        pass "$1: the block held from one allocated before the attach is not lost"
}
held=$(addr_of held "$d/out")
holder=$(addr_of holder "$d/out")
gdb -q -nx -batch -p "$tpid" -ex "source $helper" -ex "memtrace leaks" -ex "memtrace refs $held" \
    </dev/null >"$work/leaks" 2>&1
leaks_are "gdb -p: memtrace leaks after an attach" "$work/leaks"
grep -qx "  $holder: the allocator's heap outside the blocks memtrace knows (allocated before the attach, or freed), to offset 0" "$work/leaks" &&
    pass "gdb -p: memtrace refs names the block allocated before the attach that holds it" ||
    fail "gdb -p: memtrace refs names the block allocated before the attach that holds it" "$(cat "$work/leaks")"
"$mt" core -batch -ex "memtrace leaks" -- "$target" "$work/attached.core" </dev/null >"$work/core.leaks" 2>&1
leaks_are "core: memtrace leaks after an attach" "$work/core.leaks"
"$mt" detach "$tpid" 2>"$work/detach.err"
check "detach: exit status" "$?" 0
grep -q "^$(ok_line "detached from" "$tpid") [0-9]* ms)\$" "$work/detach.err" &&
    pass "detach: its one line" || fail "detach: its one line" "$(cat "$work/detach.err")"
touch "$d/late"
wait_line "$d/out" "@@ late"
late=$(addr_of late "$d/out")
gone=$(addr_of gone "$d/out")
gdb -q -nx -batch -p "$tpid" -ex "source $helper" -ex "memtrace $after" -ex "memtrace $late" \
    -ex "memtrace $gone" </dev/null >"$work/ask2" 2>&1
check "after detach: the block allocated before the detach (a failed realloc since keeps it)" "$(block_of "$after" "$work/ask2" | head -2)" \
    "$(echo "$answer" | head -2)"
# Allocated while attached, freed after the detach: its record left with it.
grep -q "^memtrace: $gone: not a live heap block" "$work/ask2" &&
    pass "after detach: a block allocated before the detach and freed since is not live" ||
    fail "after detach: a block allocated before the detach and freed since is not live" "$(cat "$work/ask2")"
check "detach: the program's malloc is libc's again" libc.so.6 "$(got malloc)"
check "detach: the program's free stays memtrace's (records leave with their blocks)" libmemtrace.so "$(got free)"
grep -q "^memtrace: $late: not a live heap block" "$work/ask2" &&
    pass "after detach: a block allocated since is unknown" ||
    fail "after detach: a block allocated since is unknown" "$(cat "$work/ask2")"
grep -q "^memtrace: detached since .* UTC (after allocation #[0-9]*); blocks allocated since are unknown$" "$work/ask2" &&
    pass "after detach: answers say since when" || fail "after detach: answers say since when" "$(cat "$work/ask2")"
finish_target "$d"
check "attached and detached: the output and status of an unattached run" "$(result "$d")" "$expected"

# The leak check at exit (MEMTRACE_LEAK_CHECK=1 given to attach) uses the
# same roots: the held block is not lost, the lost one is; at exit the
# threads are joined, so nothing else is lost or possibly lost.
dx=$work/exitcheck
start_target "$dx" ATTACH_TARGET_KEEP=1
MEMTRACE_LEAK_CHECK=1 "$mt" attach "$tpid" 2>/dev/null
finish_target "$dx"
check "leak check at exit after an attach: status (MEMTRACE_LEAK_EXITCODE)" "$(cat "$dx/rc")" 23
leaks_are "leak check at exit after an attach" "$dx/err"
grep -q "^${lost_summary}0 bytes possibly lost in 0 blocks, " "$dx/err" &&
    pass "leak check at exit after an attach: nothing possibly lost" ||
    fail "leak check at exit after an attach: nothing possibly lost" "$(cat "$dx/err")"

# ---------------------------------------------------------------- bad input
bad() { # NAME STATUS LINE CMD...: exactly LINE on stderr, STATUS
    local name=$1 status=$2 line=$3
    shift 3
    local rc=0
    "$@" >"$work/bad.out" 2>"$work/bad.err" || rc=$?
    check "$name: status" "$rc" "$status"
    check "$name: message" "$(cat "$work/bad.err")" "$line"
}
try="try 'memtrace --help'"
bad "attach without PID" 2 "memtrace: attach: give one PID; $try" "$mt" attach
bad "attach abc" 2 "memtrace: attach: 'abc' is not a process id; $try" "$mt" attach abc
bad "detach --profile" 2 "memtrace: detach: unknown option '--profile'; $try" "$mt" detach --profile 1
true &
gone=$!
wait "$gone"
bad "attach: no such process" 1 "memtrace: attach: no process $gone" "$mt" attach "$gone"
bad "detach: no such process" 1 "memtrace: detach: no process $gone" "$mt" detach "$gone"

d=$work/bad1
start_target "$d"
bad "detach: not attached" 1 "memtrace: detach: memtrace is not attached to process $tpid" "$mt" detach "$tpid"
echo 'not an ELF file' >"$work/libmemtrace.so"
rc=0
MEMTRACE_LIB=$work/libmemtrace.so "$mt" attach "$tpid" 2>"$work/bad.err" || rc=$?
check "attach failing half-way: status" "$rc" 1
grep -qx "memtrace: attach: could not load $work/libmemtrace.so into process $tpid (.*); the process was left as it was" "$work/bad.err" &&
    pass "attach failing half-way: message" || fail "attach failing half-way: message" "$(cat "$work/bad.err")"
check "attach failing half-way: nothing loaded" "$(grep -c libmemtrace "/proc/$tpid/maps")" 0
"$mt" attach "$tpid" 2>/dev/null
bad "attach twice" 1 "memtrace: attach: process $tpid is traced by memtrace already" "$mt" attach "$tpid"
bad "attach --profile after attach" 1 \
    "memtrace: attach: process $tpid has libmemtrace.so loaded (an earlier attach); attach it again with that library" \
    "$mt" attach --profile "$tpid"
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
    # What nobody runs, copied where nobody may run it: the checkout may sit
    # in a directory only its owner enters (a mktemp -d clone).
    pubdir=$(mktemp -d /tmp/memtrace-attach.XXXXXX)
    chmod 755 "$pubdir"
    cp "$mt" "$build/libmemtrace.so" "$build/memtrace.py" "$pubdir/"
    bad "attach: another user's process" 1 \
        "memtrace: attach: not permitted to trace process $tpid (another user's: run as that user, or root)" \
        setpriv --reuid=nobody --regid=nogroup --clear-groups "$pubdir/memtrace" attach "$tpid"
    rm -rf "$pubdir"
else
    echo "SKIP attach: another user's process (needs root to run as nobody)"
fi
finish_target "$d"
check "after the bad attaches: the output and status of an unattached run" "$(result "$d")" "$expected"

d=$work/bad2
start_target "$d" LD_PRELOAD="$build/libmemtrace.so"
bad "attach: preloaded already" 1 "memtrace: attach: process $tpid is traced by memtrace already (libmemtrace.so is preloaded)" \
    "$mt" attach "$tpid"
bad "detach: preloaded, not attached" 1 "memtrace: detach: memtrace is not attached to process $tpid" \
    "$mt" detach "$tpid"
finish_target "$d"

# Linked with -lmemtrace: traced from the start, no LD_PRELOAD to tell.
d=$work/bad4
mkdir -p "$d"
"$tests/attach_linked" 1 "$d" >"$d/out" 2>&1 &
lpid=$!
wait_line "$d/out" "@@ before"
bad "attach: linked with -lmemtrace" 1 "memtrace: attach: process $lpid is traced by memtrace already" \
    "$mt" attach "$lpid"
touch "$d/go" "$d/late" "$d/stop"
wait "$lpid"
check "linked with -lmemtrace: its exit status" 7 "$?"

d=$work/bad3
mkdir -p "$d"
"$tests/attach_static" 1 "$d" >"$d/out" 2>&1 &
spid=$!
wait_line "$d/out" "@@ before"
bad "attach: statically linked" 1 \
    "memtrace: attach: process $spid is statically linked (no libc.so to load memtrace with): memtrace cannot attach to it" \
    "$mt" attach "$spid"
touch "$d/go" "$d/late" "$d/stop"
wait "$spid"
check "statically linked: its exit status" "$?" 7

# ---------------------------------------------------------------- stopped, traced, exited, signalled
# A process stopped (kill -STOP), traced by another program or
# exited (a zombie) is refused with one line and status 1, before gdb
# touches it: a stopped one goes on, once continued, to its own output
# and status (gdb's calls into it used to leave it to die of SIGSEGV).
state_of() { sed -n 's/.*) \(.\) .*/\1/p' "/proc/$1/stat" 2>/dev/null; }
wait_state() { # PID LETTER: waits up to 20 s for the process's state LETTER
    for _ in $(seq 400); do
        [ "$(state_of "$1")" = "$2" ] && return 0
        sleep 0.05
    done
    return 1
}
d=$work/stopped
start_target "$d"
kill -STOP "$tpid"
wait_state "$tpid" T
bad "attach: a stopped process" 1 \
    "memtrace: attach: process $tpid is stopped (SIGSTOP, job control): let it run (kill -CONT $tpid) and attach again; it was left as it was" \
    "$mt" attach "$tpid"
check "attach: a stopped process: nothing loaded" 0 "$(grep -c libmemtrace "/proc/$tpid/maps")"
check "attach: a stopped process: still stopped" T "$(state_of "$tpid")"
kill -CONT "$tpid"
rc=0
"$mt" attach "$tpid" 2>/dev/null || rc=$?
check "attach: continued, then attached" 0 "$rc"
kill -STOP "$tpid"
wait_state "$tpid" T
bad "detach: a stopped process" 1 \
    "memtrace: detach: process $tpid is stopped (SIGSTOP, job control): let it run (kill -CONT $tpid) and detach again; it was left as it was" \
    "$mt" detach "$tpid"
kill -CONT "$tpid"
rc=0
"$mt" detach "$tpid" 2>/dev/null || rc=$?
check "detach: continued, then detached" 0 "$rc"
# Held by another tracer (gdb, stopped in a shell command until told).
gdb -q -nx -batch -p "$tpid" -ex "shell while [ ! -e '$d/release' ]; do sleep 0.05; done" \
    </dev/null >"$d/gdb.out" 2>&1 &
gpid=$!
for _ in $(seq 400); do
    grep -q "^TracerPid:[[:space:]]*$gpid\$" "/proc/$tpid/status" 2>/dev/null && break
    sleep 0.05
done
bad "attach: a process traced by another program" 1 \
    "memtrace: attach: process $tpid is traced by process $gpid already (a debugger, strace: one tracer at a time); it was left as it was" \
    "$mt" attach "$tpid"
touch "$d/release"
wait "$gpid"
finish_target "$d"
check "stopped, refused, continued (and traced by gdb meanwhile): the output and status of an unattached run" \
    "$expected" "$(result "$d")"
# A zombie: a child that exits once its parent has become a program that
# does not wait.
bash -c 'sleep 0.2 & echo $! >"$1"; exec sleep 60' _ "$work/zpid" &
zparent=$!
for _ in $(seq 400); do [ -s "$work/zpid" ] && break; sleep 0.05; done
zpid=$(cat "$work/zpid")
wait_state "$zpid" Z
bad "attach: a zombie" 1 \
    "memtrace: attach: process $zpid has exited (a zombie, not yet waited for by its parent): there is nothing to trace" \
    "$mt" attach "$zpid"
kill "$zparent"
wait "$zparent" 2>/dev/null

# SIGUSR1 every millisecond, with a handler that counts and works
# (trust_attach_signals): attached, asked, detached, it runs to its own
# output and status (its handler's sums intact). gdb stopped for each
# signal, and the call it was making was left on the stack.
S=tests/progs/trust_attach_signals.c
sig_ok=0
sig_runs=${ATTACH_SIGNAL_RUNS:-3}
for i in $(seq "$sig_runs"); do
    d=$work/signals$i
    mkdir -p "$d"
    ("$tests/trust_attach_signals" "$d" >"$d/out" 2>"$d/err" & echo $! >"$d/pid"; wait $!; echo $? >"$d/rc") &
    wait_line "$d/out" "@@ before"
    spid=$(when_written "$d/pid")
    arc=0
    "$mt" attach "$spid" 2>"$d/attach.err" || arc=$?
    touch "$d/go"
    wait_line "$d/out" "@@ after"
    after=$(addr_of after "$d/out")
    gdb -q -nx -batch -p "$spid" -ex "source $helper" -ex "memtrace $after" </dev/null >"$d/ask" 2>&1
    drc=0
    "$mt" detach "$spid" 2>"$d/detach.err" || drc=$?
    touch "$d/stop"
    for _ in $(seq 400); do [ -s "$d/rc" ] && break; sleep 0.05; done
    [ -s "$d/rc" ] || { kill -9 "$spid" 2>/dev/null; echo timeout >"$d/rc"; }
    got="attach $arc: $(cat "$d/attach.err")
detach $drc: $(cat "$d/detach.err")
$(block_of "$after" "$d/ask" | sed -n 2p | sed 's/^  #0 main at \([^ ]*:[0-9]*:\)[0-9]*$/\1/')
$(grep -v '^@@' "$d/out")
status $(cat "$d/rc")"
    want="attach 0: $(ok_line "attached to" "$spid") X ms)
detach 0: $(ok_line "detached from" "$spid") X ms)
$(at $S trust-attach-after)
handler: called
handler: its work intact
status 7"
    got=$(echo "$got" | sed 's/stopped for [0-9]* ms)$/stopped for X ms)/')
    if [ "$got" = "$want" ]; then
        sig_ok=$((sig_ok + 1))
    else
        echo "signals run $i: $got"
    fi
done
check "SIGUSR1 every ms: $sig_runs runs attached (the block allocated after answers its line), detached, exit status 7, handler's work intact" \
    "$sig_runs" "$sig_ok"

# ---------------------------------------------------------------- --profile, settings
d=$work/prof
start_target "$d"
rc=0
MEMTRACE_OUTPUT=$d/report.%p MEMTRACE_INTERVAL_MS=200 "$mt" attach --profile "$tpid" 2>"$d/attach.err" || rc=$?
check "attach --profile: status" 0 "$rc"
grep -q "^memtrace: attached to process $tpid (libmemtrace-profiler.so; it was stopped for [0-9]* ms)\$" "$d/attach.err" &&
    pass "attach --profile: its one line" || fail "attach --profile: its one line" "$(cat "$d/attach.err")"
touch "$d/go"
wait_line "$d/out" "@@ after-done"
report=$d/report.$tpid
# A periodic report after the block's allocation names it (it is freed
# before the exit report): up to 20 s for one, since a loaded machine may
# run the reporter late.
wait_line "$report" "  #0 main at $(at $T attach-after)"
finish_target "$d"
grep -q "^memtrace: report 1 (periodic), pid $tpid" "$report" 2>/dev/null &&
    pass "attach --profile: MEMTRACE_OUTPUT and MEMTRACE_INTERVAL_MS apply (a periodic report in the file)" ||
    fail "attach --profile: MEMTRACE_OUTPUT and MEMTRACE_INTERVAL_MS apply (a periodic report in the file)" "$(ls "$d")"
grep -q "^  #0 main at $(at $T attach-after)" "$report" 2>/dev/null &&
    pass "attach --profile: the report names the block allocated after the attach" ||
    fail "attach --profile: the report names the block allocated after the attach" "$(head -20 "$report" 2>/dev/null)"
check "attach --profile: the output and status of an unattached run" "$expected" "$(result "$d")"

# ---------------------------------------------------------------- many attaches
same=0
for i in $(seq "$runs"); do
    d=$work/run$i
    start_target "$d"
    sleep "0.$((RANDOM % 30))"
    arc=0
    sampled=()
    [ $((i % 4)) -ge 2 ] && sampled=(MEMTRACE_SAMPLE=8192) # blocks with trailers, before and after
    env "${sampled[@]}" "$mt" attach "$tpid" 2>"$d/attach.err" || arc=$?
    if [ $((i % 2)) = 0 ]; then
        sleep "0.$((RANDOM % 30))"
        "$mt" detach "$tpid" 2>"$d/detach.err" || arc=$?
    fi
    finish_target "$d"
    if [ "$arc" = 0 ] && [ "$(result "$d")" = "$expected" ]; then
        same=$((same + 1))
    else
        echo "run $i: attach status $arc: $(cat "$d/attach.err" "$d/detach.err" 2>/dev/null) $(result "$d")"
    fi
done
check "$runs attaches under full-speed allocation (every other one detached, half of them sampled): the output and status of an unattached run" \
    "$same" "$runs"

# ---------------------------------------------------------------- a real program
py=/usr/bin/python3
if [ -x "$py" ]; then
    d=$work/py
    mkdir -p "$d"
    "$py" -c '
import os, sys, time
d = sys.argv[1]
print("@@ before", flush=True)
n = 0
while not os.path.exists(d + "/stop"):
    x = [bytearray(1000 + i) for i in range(200)]
    n += sum(len(b) for b in x) and 1
    time.sleep(0.001)
print("python loop done", n > 0)
sys.exit(5)' "$d" >"$d/out" 2>&1 &
    ppid=$!
    wait_line "$d/out" "@@ before"
    rc=0
    "$mt" attach "$ppid" 2>"$d/attach.err" || rc=$?
    check "python3: attach status" "$rc" 0
    sleep 0.5
    gdb -q -nx -batch -p "$ppid" -ex "source $helper" -ex "memtrace top 3" </dev/null >"$d/ask" 2>&1
    grep -q "^memtrace: attached to a running process" "$d/ask" &&
        grep -q "^memtrace: site 1: " "$d/ask" && grep -q "^  #[0-9]* _PyEval_EvalFrameDefault in python3" "$d/ask" &&
        pass "python3: memtrace top names the loop's allocations" ||
        fail "python3: memtrace top names the loop's allocations" "$(cat "$d/ask")"
    rc=0
    "$mt" detach "$ppid" 2>"$d/detach.err" || rc=$?
    check "python3: detach status" "$rc" 0
    touch "$d/stop"
    wait "$ppid"
    check "python3: its exit status" "$?" 5
    check "python3: its output" "$(grep -v '^@@' "$d/out")" "python loop done True"
else
    echo "SKIP attach: python3 (no /usr/bin/python3)"
fi

# sqlite3 in a long query (rounds of a million rows inserted and deleted):
# attached while it works, asked, detached; its output and status its own.
if command -v sqlite3 >/dev/null; then
    d=$work/sqlite
    mkdir -p "$d"
    for i in $(seq 8); do
        echo "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<1000000)"
        echo "  INSERT INTO t SELECT printf('%0100d', x) FROM c;"
        echo "SELECT count(*), sum(length(a)) FROM t; DELETE FROM t;"
    done >"$d/query.sql"
    (echo "CREATE TABLE t(a);"; cat "$d/query.sql") >"$d/all.sql"
    sqlite3 :memory: <"$d/all.sql" >"$d/out" 2>&1 &
    spid=$!
    sleep 0.5
    rc=0
    "$mt" attach "$spid" 2>"$d/attach.err" || rc=$?
    check "sqlite3: attach status" 0 "$rc"
    sleep 0.5
    gdb -q -nx -batch -p "$spid" -ex "source $helper" -ex "memtrace top 3" </dev/null >"$d/ask" 2>&1
    grep -q "^memtrace: site 1: " "$d/ask" && grep -q "^  #[0-9]* sqlite3[A-Za-z]* in libsqlite3" "$d/ask" &&
        pass "sqlite3: memtrace top names libsqlite3's allocations" ||
        fail "sqlite3: memtrace top names libsqlite3's allocations" "$(cat "$d/ask")"
    rc=0
    "$mt" detach "$spid" 2>"$d/detach.err" || rc=$?
    check "sqlite3: detach status" 0 "$rc"
    wait "$spid"
    check "sqlite3: its exit status" 0 "$?"
    check "sqlite3: its output" "$(for i in $(seq 8); do echo "1000000|100000000"; done)" "$(cat "$d/out")"
else
    echo "SKIP attach: sqlite3 (not installed)"
fi

finish attach
