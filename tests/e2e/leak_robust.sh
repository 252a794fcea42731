#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The leak check where the program or its core works against it
# (tests/progs/leak_robust.c), tracer build (the profiler too for a wild
# write and exit from a worker):
#  - a wild write into memtrace's live table (the largest size a slot holds (8 MiB), an address in
#    no mapping, an impossible stack id, a size over the next block): no
#    crash, no hang, one "damaged entry" line naming the entry, the lost
#    block still reported, status 23;
#  - exit(7) from a worker while main waits (sleep, pause, read, join): the
#    check must not wake main into running on: status 7 and the report;
#  - main leaving with pthread_exit: the globals are still roots (nothing
#    lost), and print_trace still symbolizes to file:line;
#  - `memtrace leaks` on copies of a real core whose live table was
#    overwritten with random bytes (6 seeds): done within 60 s, with a
#    verdict or one memtrace: line, never a hang or a crash;
#  - `memtrace core` on a core that does not fit: cut short, of another
#    program, of a program that did not run under memtrace: what is wrong.
set -u
. "$(dirname "$0")/lib.sh"
prog=$tests/leak_robust
src=tests/progs/leak_robust.c
tracer=$build/libmemtrace.so

profiler=$build/libmemtrace-profiler.so

# run NAME MODE [LIB]: stdout in $work/NAME.out, stderr in $work/NAME.err,
# status in RC. The profiler without its reporter thread (MEMTRACE_INTERVAL_MS=0).
run() {
    (cd "$work" && timeout 60 env LD_PRELOAD="${3:-$tracer}" MEMTRACE_LEAK_CHECK=1 \
        MEMTRACE_INTERVAL_MS=0 MEMTRACE_OUTPUT=/dev/stderr "$prog" "$2" \
        >"$work/$1.out" 2>"$work/$1.err") 2>/dev/null
    RC=$?
}
damaged() { # COUNT ADDR
    local what="entry" held="it"
    [ "$1" = 1 ] || { what="entries"; held="they"; }
    echo "memtrace: leaks: $1 damaged $what in the live table (the first for $2) ignored: a block" \
         "outside the mappings, overlapping another or with an impossible stack; blocks" \
         "$held alone held may be counted lost"
}

# ------------------------------------------------------------ a wild write
for how in huge ptr stack overlap profiler; do
    if [ "$how" = profiler ]; then
        how=huge
        run "smash-$how" "smash-$how" "$profiler"
    else
        run "smash-$how" "smash-$how"
    fi
    status "smash-$how" 23
    addr=$(addr_of kept "$work/smash-$how.out")
    count=1
    case $how in
        ptr) addr=$(addr_of bad "$work/smash-$how.out") ;;
        overlap) addr=$(addr_of low "$work/smash-$how.out"); count=2 ;;
    esac
    has "smash-$how: the damaged entry named" "$work/smash-$how.err" "$(damaged $count "$addr")"
    has "smash-$how: the lost block still reported" "$work/smash-$how.err" \
        "$(at "$src" lost)"
    has "smash-$how: the summary" "$work/smash-$how.err" \
        "memtrace: leaks: 24 bytes definitely lost in 1 blocks,"
    lacks "smash-$how: no crash" "$work/smash-$how.err" "Segmentation"
done

# ------------------------------------------------------------ exit from a worker
for wait in sleep pause read join sleep-profiler; do
    if [ "$wait" = sleep-profiler ]; then
        run "stop-$wait" stop-sleep "$profiler"
    else
        run "stop-$wait" "stop-$wait"
    fi
    status "exit(7) while main is in $wait" 7
    lacks "stop-$wait: main did not run on" "$work/stop-$wait.out" "main ran on"
    has "stop-$wait: the report" "$work/stop-$wait.err" \
        "memtrace: leaks: 0 bytes definitely lost in 0 blocks,"
done

# ------------------------------------------------------------ main's pthread_exit
run main-exit main-exit
status "main-exit" 0
live=$(sed -n 's/^memtrace: leak check, pid [0-9]*: \([0-9]*\) live blocks.*/\1/p' \
       "$work/main-exit.err")
has "main-exit: nothing lost, every live block still reachable" "$work/main-exit.err" \
    "memtrace: leaks: 0 bytes definitely lost in 0 blocks, 0 bytes indirectly lost in 0 blocks, "
if grep -qE "bytes still reachable in ${live:-x} blocks\$" "$work/main-exit.err" &&
   [ "${live:-0}" -ge 1 ]; then
    pass "main-exit: $live live blocks, all still reachable"
else
    fail "main-exit: still reachable" "not all ${live:-?} live blocks in: $(cat "$work/main-exit.err")"
fi
has "main-exit: print_trace symbolizes" "$work/main-exit.err" "#0 main at $(at "$src" global)"
lacks "main-exit: no thread left unscanned" "$work/main-exit.err" "did not stop for the scan"
# The same in gdb, stopped in the worker's exit: the helper reads the
# memory and the maps through a live thread.
(cd "$work" && timeout 60 gdb -q -batch -nx "$prog" -ex "set env LD_PRELOAD=$tracer" \
    -ex "break exit" -ex "run main-exit >/dev/null 2>&1" -ex "source $root/gdb/memtrace.py" \
    -ex "memtrace leaks" -ex kill >"$work/main-exit-gdb.out" 2>&1)
has "main-exit in gdb: memtrace leaks, nothing lost" "$work/main-exit-gdb.out" \
    "memtrace: leaks: 0 bytes definitely lost in 0 blocks, 0 bytes indirectly lost in 0 blocks, "

# ------------------------------------------------------------ a damaged core
helper=$root/gdb/memtrace.py
core=$work/robust.core
(cd "$work" && timeout 120 gdb -q -batch -nx "$prog" -ex "set env LD_PRELOAD=$tracer" \
    -ex "break checkpoint" -ex "run core >$work/core.out" -ex "gcore $core" -ex kill \
    >"$work/gcore.log" 2>&1)
slots=$(addr_of slots "$work/core.out")
if [ -s "$core" ] && [ -n "$slots" ]; then
    # 400 random bytes of the core segment holding the live table's slots,
    # overwritten in a copy, the same for a seed on every run.
    damage() { # SEED OUT
        python3 - "$core" "$slots" "$1" "$2" <<'PY'
import random, struct, sys
core, addr, seed, out = sys.argv[1], int(sys.argv[2], 16), int(sys.argv[3]), sys.argv[4]
data = bytearray(open(core, "rb").read())
phoff, = struct.unpack_from("<Q", data, 0x20)
phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
for i in range(phnum):
    p_type, _, off, vaddr, _, filesz, _, _ = struct.unpack_from("<IIQQQQQQ", data,
                                                                phoff + i * phentsize)
    if p_type == 1 and vaddr <= addr < vaddr + filesz:
        break
else:
    sys.exit("no segment of the core holds %#x" % addr)
rng = random.Random(seed)
for _ in range(400):
    data[off + rng.randrange(filesz)] = rng.randrange(256)
open(out, "wb").write(data)
PY
    }
    for seed in 1 2 3 4 5 6; do
        damage "$seed" "$work/damaged.core" || { fail "damaged core $seed" "not made"; continue; }
        out=$work/damaged$seed.out
        (cd "$work" && timeout 60 gdb -q -batch -nx "$prog" "$work/damaged.core" \
            -ex "source $helper" -ex "memtrace leaks" >"$out" 2>&1)
        RC=$?
        # 0, or 1 when the command refused with its one line (gdb -batch
        # exits 1 after a command's error): never a time-out or a crash.
        if [ "$RC" = 0 ] || { [ "$RC" = 1 ] && [ "$(grep -c '^memtrace: ' "$out")" = 1 ]; }; then
            pass "damaged core, seed $seed: memtrace leaks finished: status $RC"
        else
            fail "damaged core, seed $seed" "status $RC: $(cat "$out")"
        fi
        if grep -qE 'Traceback|Python Exception|internal error|Segmentation|timed out' "$out"; then
            fail "damaged core, seed $seed" "$(cat "$out")"
        # A verdict that names the damage, or one line saying why there is none.
        elif grep -qE '^memtrace: leaks: [0-9]+ damaged entr' "$out" &&
             grep -qE '^memtrace: leaks: [0-9]+ bytes definitely lost' "$out"; then
            pass "damaged core, seed $seed: a verdict, the damage said"
        elif [ "$(grep -c '^memtrace: ' "$out")" = 1 ]; then
            pass "damaged core, seed $seed: $(grep '^memtrace: ' "$out")"
        else
            fail "damaged core, seed $seed" "no verdict and no one line: $(cat "$out")"
        fi
    done
else
    fail "damaged core" "no core of the program: $(cat "$work/gcore.log")"
fi

# ------------------------------------------------------------ a core that does not fit
# `memtrace core PROG CORE` (the launcher), `memtrace leaks` typed in: what
# is wrong with the core, not advice to start the program under memtrace.
launcher=$build/memtrace
core_answer() { # NAME PROG CORE: the session's output in $work/NAME.out
    (cd "$work" && echo "memtrace leaks" | timeout 60 "$launcher" core "$2" "$3" \
        >"$work/$1.out" 2>&1)
}
build_id() { readelf -n "$1" | sed -n 's/^ *Build ID: *//p'; }
if [ -s "$core" ]; then
    # Cut short: the size the segments need, as readelf reads the headers.
    need=0
    while read -r type off _ _ filesz _; do
        case $type in [A-Z]*) case $off in 0x*)
            [ $((off + filesz)) -gt "$need" ] && need=$((off + filesz)) ;; esac ;; esac
    done < <(readelf -lW "$core")
    size=$(stat -c %s "$core")
    head -c $((size / 2)) "$core" >"$work/short.core"
    core_answer short "$prog" "$work/short.core"
    has "core cut short: said" "$work/short.out" \
        "memtrace: the core file $work/short.core is cut short: $((size / 2)) bytes, where its segments need $need (a core size limit or a full disk when it was dumped?)"
    lacks "core cut short: no advice to start it" "$work/short.out" "start it with"

    # Another program: the build-ids differ.
    other=$build/memtrace-symbolize
    core_answer other "$other" "$core"
    has "core of another program: said" "$work/other.out" \
        "memtrace: the core file $core was not dumped by $other: its program was $(realpath "$prog"), build-id $(build_id "$prog"), not $(build_id "$other")"
    lacks "core of another program: no advice to start it" "$work/other.out" "start it with"

    # The right program: no complaint, the verdict.
    core_answer right "$prog" "$core"
    has "the right core: a verdict" "$work/right.out" \
        "memtrace: leaks: 24000 bytes definitely lost in 1000 blocks,"
    lacks "the right core: no complaint" "$work/right.out" "memtrace: the core file"
fi
# A program that did not run under memtrace.
(cd "$work" && timeout 120 gdb -q -batch -nx "$prog" -ex "break checkpoint" \
    -ex "run core >/dev/null" -ex "gcore $work/plain.core" -ex kill >"$work/plain.log" 2>&1)
if [ -s "$work/plain.core" ]; then
    core_answer plain "$prog" "$work/plain.core"
    has "core without memtrace: said" "$work/plain.out" \
        "memtrace: libmemtrace is not among the libraries of the core file $work/plain.core: $(realpath "$prog") did not run under memtrace when it dumped (\`memtrace run\` or \`memtrace gdb\` start it so)"
    lacks "core without memtrace: no advice to start it" "$work/plain.out" "start it with"
else
    fail "core without memtrace" "no core: $(cat "$work/plain.log")"
fi

finish leak_robust
