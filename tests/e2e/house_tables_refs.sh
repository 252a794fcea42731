#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `memtrace refs` lists every word that points into the block, however
# many one piece of the target's memory holds: tests/progs/house_tables_refs
# stops with 100 words of a global array and 100 of a heap block pointing
# at g_target. The reader's bytes last only until the next read (a heap
# block's place reads its allocation stack), so the hits of a piece are
# copied out before they are reported; once only the first 64 of a piece
# were, and the rest were dropped. Live in gdb and on its core.
# Prints "house_tables_refs: N passed, N failed" last.
set -u
. "$(dirname "$0")/lib.sh"
prog=$tests/house_tables_refs
helper=$root/gdb/memtrace.py
tracer=$build/libmemtrace.so
cd "$work" || exit 1

part() { awk -v m="@@ $1" '$0 == m { on = 1; next } /^@@ / { on = 0 } on' "$2"; }

# refs_of NAME FILE: the place lines and the total of the refs answer.
refs_of() {
    local out=$2 holder
    holder=$(addr_of g_holder "$out")
    part refs "$out" >"$1.refs"
    check "$1: 100 places in the global array" 100 \
        "$(grep -cE '^  0x[0-9a-f]+: global g_many(\+[0-9]+)? in house_tables_refs, to offset 0$' "$1.refs")"
    check "$1: 100 places in the heap block" 100 \
        "$(grep -cE "^  0x[0-9a-f]+: heap block $holder \\(800 bytes, still reachable\\) at offset [0-9]+, to offset 0; " "$1.refs")"
    local total
    total=$(sed -n 's/^memtrace: refs: \([0-9]*\) places$/\1/p' "$1.refs")
    if [ -n "$total" ] && [ "$total" -ge 200 ]; then
        pass "$1: the total counts them ($total)"
    else
        fail "$1: the total" "'$total', not 200 or more: $(tail -3 "$1.refs")"
    fi
}

live=$work/live.out
timeout 120 gdb -q -batch -nx "$prog" -ex "set env LD_PRELOAD=$tracer" \
    -ex "break checkpoint" -ex "run 2>$work/live.err" -ex "source $helper" \
    -ex 'printf "@@ g_holder %p\n", g_holder' \
    -ex "echo @@ refs\n" -ex "memtrace refs g_target" \
    -ex "gcore $work/refs.core" -ex "echo @@ end\n" -ex kill >"$live" 2>&1
refs_of live "$live"

core=$work/refs.core
if [ -s "$core" ]; then
    out=$work/core.out
    timeout 120 gdb -q -batch -nx "$prog" "$core" -ex "source $helper" \
        -ex 'printf "@@ g_holder %p\n", g_holder' \
        -ex "echo @@ refs\n" -ex "memtrace refs g_target" -ex "echo @@ end\n" >"$out" 2>&1
    refs_of core "$out"
else
    fail "core" "gdb wrote no core: $(tail -5 "$live")"
fi

finish house_tables_refs
