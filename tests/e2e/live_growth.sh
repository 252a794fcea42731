#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `memtrace snapshot [NAME]`, `memtrace growth [--all] [NAME [N]]` and
# `memtrace leaks new` in gdb, against the known counts of
# tests/progs/live_growth.c: a loop that keeps a 100- and a 28-byte block
# and loses a 40-byte one each iteration. A snapshot at iteration 1's
# tick, and at iteration 2's the growth is exactly iteration 1's blocks
# still live, at their file:line; `leaks new` exactly its lost block; a
# core of the process answers the same by the snapshot's name. The tracer
# and the profiler, and a pool's blocks (memtrace_malloclike); and a process
# started without memtrace and attached (memtrace attach), where the
# numbering starts at the attach.
set -u
. "$(dirname "$0")/lib.sh"
prog=$tests/live_growth
src=tests/progs/live_growth.c
helper=$root/gdb/memtrace.py
a=$(site_line $src grow_a) b=$(site_line $src grow_b) lost=$(site_line $src grow_lost)
pool=$(site_line $src grow_pool)

# The "memtrace:" lines and each site's first frame, from the answer
# between the markers @@ NAME and @@ end in FILE.
answer() {
    awk -v m="@@ $1" '$0 == m { on = 1; next } $0 == "@@ end" { on = 0 } on' "$2" |
        grep -E '^memtrace: |^  #0 |^  block ' | sed -E 's/(block )0x[0-9a-f]+/\1ADDR/'
}
# gdb on PROG ARGS under LIB: a snapshot at iteration 1, the questions at
# iteration 2, a core there; each answer between markers.
run_gdb() { # LIB OUT ARGS...
    local lib=$1 out=$2
    shift 2
    timeout 120 gdb -q -batch -nx -ex "set env LD_PRELOAD=$lib" -ex "source $helper" \
        -ex "break tick if i == 1" -ex "run" \
        -ex "echo @@ growth-none\\n" -ex "memtrace growth" -ex "echo @@ end\\n" \
        -ex "echo @@ snapshot\\n" -ex "memtrace snapshot it1" -ex "echo @@ end\\n" \
        -ex "echo @@ badname\\n" -ex "memtrace snapshot bad/name" -ex "echo @@ end\\n" \
        -ex "echo @@ new-none\\n" -ex "memtrace leaks new" -ex "echo @@ end\\n" \
        -ex "echo @@ leaks\\n" -ex "memtrace leaks" -ex "echo @@ end\\n" \
        -ex "delete" -ex "break tick if i == 2" -ex "continue" \
        -ex "echo @@ growth\\n" -ex "memtrace growth it1" -ex "echo @@ end\\n" \
        -ex "echo @@ newest\\n" -ex "memtrace growth" -ex "echo @@ end\\n" \
        -ex "echo @@ all\\n" -ex "memtrace growth --all it1 2" -ex "echo @@ end\\n" \
        -ex "echo @@ nosuch\\n" -ex "memtrace growth nosuch" -ex "echo @@ end\\n" \
        -ex "echo @@ expr\\n" -ex "memtrace kept[33]" -ex "echo @@ end\\n" \
        -ex "gcore $out.core" \
        -ex "echo @@ new\\n" -ex "memtrace leaks new" -ex "echo @@ end\\n" \
        -ex "kill" --args "$prog" "$@" >"$out" 2>&1
}

expected_growth() { # EXTRA-SITE-LINES (pool)
    if [ -n "$1" ]; then
        echo "memtrace: growth since snapshot \"it1\" (allocation #65 on): 224 bytes in 4 live blocks at 4 call sites; top 4"
        echo "memtrace: site 1: 100 bytes in 1 block allocated at:"
        echo "  #0 iteration at $src:$a:19"
        echo "memtrace: site 2: 56 bytes in 1 block allocated at:"
        echo "  #0 from_pool at $src:$pool:5"
        echo "memtrace: site 3: 40 bytes in 1 block allocated at:"
        echo "  #0 lose at $src:$lost:15"
        echo "memtrace: site 4: 28 bytes in 1 block allocated at:"
        echo "  #0 iteration at $src:$b:23"
    else
        echo "memtrace: growth since snapshot \"it1\" (allocation #65 on): 168 bytes in 3 live blocks at 3 call sites; top 3"
        echo "memtrace: site 1: 100 bytes in 1 block allocated at:"
        echo "  #0 iteration at $src:$a:19"
        echo "memtrace: site 2: 40 bytes in 1 block allocated at:"
        echo "  #0 lose at $src:$lost:15"
        echo "memtrace: site 3: 28 bytes in 1 block allocated at:"
        echo "  #0 iteration at $src:$b:23"
    fi
}

for lib in tracer profiler; do
    so=$build/libmemtrace.so
    [ $lib = profiler ] && so=$build/libmemtrace-profiler.so
    for mode in plain pool; do
        name="$lib, $mode"
        out=$work/$lib-$mode.out
        arg=()
        [ $mode = pool ] && arg=(pool)
        run_gdb "$so" "$out" "${arg[@]}"
        check "$name: growth before any snapshot: one line" \
            "memtrace: growth: no snapshot taken (memtrace snapshot [NAME] takes one)" \
            "$(answer growth-none "$out")"
        check "$name: snapshot taken" \
            "memtrace: snapshot \"it1\" taken: the blocks allocated from now on (allocation #65 on) are its growth" \
            "$(answer snapshot "$out")"
        check "$name: a bad name: one line" \
            "memtrace: snapshot: bad snapshot name 'bad/name': 1 to 39 letters, digits or _.:+-" \
            "$(awk '/^@@ badname$/ { on = 1; next } /^@@ end$/ { on = 0 } on' "$out")"
        extra=
        [ $mode = pool ] && extra=1
        check "$name: growth since it1: iteration 1's live blocks, exact, largest first" \
            "$(expected_growth "$extra")" "$(answer growth "$out")"
        check "$name: growth without a name: the newest snapshot's" \
            "$(answer growth "$out")" "$(answer newest "$out")"
        if [ $mode = plain ]; then
            check "$name: growth --all it1 2: the two largest sites and their blocks" \
                "memtrace: growth since snapshot \"it1\" (allocation #65 on): 168 bytes in 3 live blocks at 3 call sites; top 2
memtrace: site 1: 100 bytes in 1 block allocated at:
  #0 iteration at $src:$a:19
  block ADDR: 100 bytes, allocation #65, thread 1
memtrace: site 2: 40 bytes in 1 block allocated at:
  #0 lose at $src:$lost:15
  block ADDR: 40 bytes, allocation #68, thread 1" "$(answer all "$out")"
        fi
        if [ $mode = pool ]; then
            check "$name: memtrace EXPR of a pool block: its size, memtrace_malloclike's caller" \
                "memtrace: 56-byte block allocated by thread 1
  #0 from_pool at $src:$pool:5" \
                "$(answer expr "$out" | sed -E 's/^memtrace: 0x[0-9a-f]+: start of a /memtrace: /; s/ \(allocation #[0-9]+\)$//')"
        fi
        check "$name: growth of an unknown snapshot: one line naming those taken" \
            "memtrace: growth: no snapshot named \"nosuch\" (taken: it1)" \
            "$(awk '/^@@ nosuch$/ { on = 1; next } /^@@ end$/ { on = 0 } on' "$out")"
        check "$name: leaks new before any leaks: one line" \
            "memtrace: leaks new: no \`memtrace leaks\` ran in this process yet" \
            "$(awk '/^@@ new-none$/ { on = 1; next } /^@@ end$/ { on = 0 } on' "$out")"
        check "$name: leaks at iteration 1: iteration 0's lost block" \
            "memtrace: leaks: 40 bytes definitely lost in 1 blocks" \
            "$(answer leaks "$out" | grep -o '^memtrace: leaks: 40 bytes definitely lost in 1 blocks')"
        new=$(answer new "$out")
        check "$name: leaks new: only iteration 1's lost block, at its line" \
            "memtrace: leaks new: only the blocks allocated since the last \`memtrace leaks\` (allocation #65 on)
memtrace: 40 (40 direct, 0 indirect) bytes in 1 blocks are definitely lost (with 0 indirectly lost blocks), allocated at:
  #0 lose at $src:$lost:15" "$(grep -v '^memtrace: leak check,\|^memtrace: leaks: ' <<<"$new")"
        check "$name: leaks new: the summary counts it alone" \
            "memtrace: leaks: 40 bytes definitely lost in 1 blocks, 0 bytes indirectly lost in 0 blocks, 0 bytes possibly lost in 0 blocks" \
            "$(grep -o '^memtrace: leaks: .* possibly lost in [0-9]* blocks' <<<"$new")"
        # The core of the same process, by the snapshot's name.
        timeout 120 "$build/memtrace" core -batch -ex "echo @@ growth\\n" -ex "memtrace growth it1" \
            -ex "echo @@ end\\n" -ex "echo @@ snap\\n" -ex "memtrace snapshot x" -ex "echo @@ end\\n" \
            -- "$prog" "$out.core" >"$out.c" 2>&1
        check "$name: on the core: growth it1, the same answer" \
            "$(expected_growth "$extra")" "$(answer growth "$out.c")"
        check "$name: on the core: no snapshot taken, one line" \
            "memtrace: snapshot: a core file cannot take a snapshot; take it in the running process (its core then has it)" \
            "$(awk '/^@@ snap$/ { on = 1; next } /^@@ end$/ { on = 0 } on' "$out.c")"
        rm -f "$out.core"
    done
done

# ---------------------------------------------------------------- attached
# The program waits before its first allocation; memtrace attach loads the
# tracer; gdb -p takes the snapshot at iteration 1 and asks at 2. The
# answers are the preloaded run's (the snapshot moves the numbering to the
# next epoch, #65, in both), and each says once that blocks before the
# attach are unknown.
denied=$(ptrace_denied)
if [ -n "$denied" ]; then
    echo "SKIP live_growth attached: $denied"
else
    d=$work/attached
    mkdir -p "$d"
    ("$prog" wait "$d" >"$d/out" 2>&1 & echo $! >"$d/pid"; wait $!; echo $? >"$d/rc") &
    tpid=$(when_written "$d/pid")
    timeout 120 "$build/memtrace" attach "$tpid" 2>"$d/attach.err"
    check "attached: memtrace attach's status" "$?" 0
    timeout 120 gdb -q -batch -nx -p "$tpid" -ex "source $helper" \
        -ex "break tick if i == 1" -ex "shell touch $d/go" -ex "continue" \
        -ex "echo @@ snapshot\\n" -ex "memtrace snapshot it1" -ex "echo @@ end\\n" \
        -ex "echo @@ leaks\\n" -ex "memtrace leaks" -ex "echo @@ end\\n" \
        -ex "delete" -ex "break tick if i == 2" -ex "continue" \
        -ex "echo @@ growth\\n" -ex "memtrace growth it1" -ex "echo @@ end\\n" \
        -ex "echo @@ new\\n" -ex "memtrace leaks new" -ex "echo @@ end\\n" \
        -ex "delete" -ex "detach" </dev/null >"$d/gdb.out" 2>&1
    check "attached: the program's exit status" "$(when_written "$d/rc")" 0
    check "attached: snapshot taken at the attach's numbering" \
        "memtrace: snapshot \"it1\" taken: the blocks allocated from now on (allocation #65 on) are its growth" \
        "$(answer snapshot "$d/gdb.out" | grep -v '^memtrace: attached to a running process')"
    check "attached: growth since it1: iteration 1's live blocks, exact" \
        "$(expected_growth "")" "$(answer growth "$d/gdb.out" | grep -v '^memtrace: attached to a running process')"
    check "attached: growth says once that blocks before the attach are unknown" 1 \
        "$(answer growth "$d/gdb.out" | grep -c '^memtrace: attached to a running process; recording since allocation #1 (.* UTC); blocks allocated before the attach or while recording was off are unknown$')"
    check "attached: leaks at iteration 1: iteration 0's lost block" \
        "memtrace: leaks: 40 bytes definitely lost in 1 blocks" \
        "$(answer leaks "$d/gdb.out" | grep -o '^memtrace: leaks: 40 bytes definitely lost in 1 blocks')"
    check "attached: leaks new: only iteration 1's lost block" \
        "memtrace: 40 (40 direct, 0 indirect) bytes in 1 blocks are definitely lost (with 0 indirectly lost blocks), allocated at:
  #0 lose at $src:$lost:15" "$(answer new "$d/gdb.out" | grep -A1 '^memtrace: 40 (40 direct')"
fi

finish live_growth
