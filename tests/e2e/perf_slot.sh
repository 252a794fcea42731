#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The free path against the live table's layout (tests/progs/perf_slot.c):
# the records of a million blocks, through many growths onto mappings
# carved from one huge-page arena, freed by this thread and another; a
# run of records shifted back by a scattered order of deletions; resizes
# and the aligned allocators; a free of an address no allocator gave out;
# an underflow over a block's chunk header. After each, memtrace's live
# count and bytes (memtrace_get_stats) are exactly the program's own, and
# the leak check names the 3 blocks left at their file:line. The grown
# tables sit in writable mappings advised for huge pages (smaps "hg"), and
# gdb reads them (memtrace top) as the program counts.
set -u
. "$(dirname "$0")/lib.sh"
prog=$tests/perf_slot
src=tests/progs/perf_slot.c
tracer=$build/libmemtrace.so
leak=$(site_line $src slot_leak)

# run NAME ARGS...: the program under the tracer with the leak check, its
# output in $work/NAME and its status in RC.
run() {
    local name=$1
    shift
    timeout 150 env LD_PRELOAD="$tracer" MEMTRACE_LEAK_CHECK=1 "$prog" "$@" \
        >"$work/$name" 2>&1
    RC=$?
}

# The phase lines of FILE whose two counts differ, or "none".
mismatches() {
    awk '$2 == "live" { split($3, a, "/"); split($5, b, "/");
                        if (a[1] != a[2] || b[1] != b[2]) { print; n++ } }
         END { if (!n) print "none" }' "$1"
}

# The leak check's answer for the 3 lost blocks: summary and first frame.
leaks_of() {
    grep -E '^memtrace: leaks: |^memtrace: 231 \(|^  #0 ' "$1" | head -3
}
expected_leaks="memtrace: 231 (231 direct, 0 indirect) bytes in 3 blocks are definitely lost (with 0 indirectly lost blocks), allocated at:
  #0 leak_some at $src:$leak:19"

run many many 1000000
status "a million blocks" 23
check "a million blocks: every phase's count" \
    "many-allocated live 1000000/1000000 bytes 32500000/32500000
many-even-freed live 500000/500000 bytes 16500000/16500000
many-odd-freed-by-thread live 0/0 bytes 0/0" "$(grep -E '^many-' "$work/many")"
# A kernel without transparent huge pages takes no advice (smaps shows no
# "hg"): memtrace maps the tables as it did.
if [ -e /sys/kernel/mm/transparent_hugepage/enabled ]; then
    check "a million blocks: the grown tables advised for huge pages" \
        "many huge-advised table of 22 MiB or more: yes" "$(grep '^many huge' "$work/many")"
else
    pass "a million blocks: the grown tables advised for huge pages (SKIP: no THP in this kernel)"
fi
check "a million blocks: the blocks left, at their site" "$expected_leaks" \
    "$(leaks_of "$work/many" | head -2)"
has "a million blocks: the leak summary" "$work/many" \
    "memtrace: leaks: 231 bytes definitely lost in 3 blocks,"

# Read out of process (gdb, the state descriptor) from tables carved from
# the arena: at the second phase, the take site holds exactly the blocks
# the program counts.
timeout 170 gdb -q -batch -nx -ex "set env LD_PRELOAD=$tracer" -ex "source $root/gdb/memtrace.py" \
    -ex "break show" -ex "run" -ex "continue" -ex "memtrace top 1" -ex "kill" \
    --args "$prog" many 300000 >"$work/gdb" 2>&1
# The odd-numbered blocks are left, of 1 + i % 64 bytes each.
own=$(awk 'BEGIN { for (i = 1; i < 300000; i += 2) s += 1 + i % 64; print s }')
check "a grown table read by gdb: the take site's blocks" \
    "memtrace: site 1: $own bytes in 150000 blocks allocated at:
  #0 take at $src:$(site_line $src slot_take):15" \
    "$(grep -A1 '^memtrace: site 1:' "$work/gdb")"

run shift shift 200000
status "shifted records" 23
check "shifted records: every phase's count" \
    "shift-allocated live 200000/200000 bytes 9600000/9600000
shift-freed live 1000/1000 bytes 48000/48000" "$(grep -E '^shift-' "$work/shift")"
has "shifted records: the blocks kept and lost" "$work/shift" \
    "memtrace: leaks: 48231 bytes definitely lost in 1003 blocks,"

run resize resize 3000
status "resizes and aligned blocks" 23
check "resizes and aligned blocks: the count" "resize-kept live 3/3 bytes 4296/4296" \
    "$(grep -E '^resize-' "$work/resize")"
has "resizes and aligned blocks: the realloc'd block's site" "$work/resize" \
    "#0 resize at $src:$(site_line $src slot_keep_realloc):"
has "resizes and aligned blocks: the aligned block's site" "$work/resize" \
    "#0 resize at $src:$(site_line $src slot_keep_aligned):"

run foreign foreign
status "a foreign address freed" 23
check "a foreign address freed: no record taken" "none" "$(mismatches "$work/foreign")"
check "a foreign address freed: the counts" \
    "foreign-before live 1000/1000 bytes 32000/32000
foreign-after live 1000/1000 bytes 32000/32000" "$(grep -E '^foreign-' "$work/foreign")"
has "a foreign address freed: the blocks left, at their site" "$work/foreign" \
    "memtrace: leaks: 32231 bytes definitely lost in 1003 blocks,"

# glibc aborts on the damaged header after memtrace's report, as without it.
run underflow underflow
status "an underflow over the header" 134
check "an underflow over the header: the count before" \
    "underflow-before live 1001/1001 bytes 32040/32040" "$(grep -E '^underflow-' "$work/underflow")"
check "an underflow over the header: the report" \
    "memtrace: heap-buffer-underflow: 1 byte before the start of a 40-byte block at ADDR
  allocated by thread 1 (allocation #1002) at:
  #0 underflow at $src:$(site_line $src slot_underflow_alloc):15
  detected in free by thread 1 at:
  #0 underflow at $src:$(site_line $src slot_underflow_free):5" \
    "$(grep -E '^memtrace: heap-buffer|^  (allocated|detected) |^  #0 ' "$work/underflow" |
        sed -E 's/0x[0-9a-f]+$/ADDR/')"

finish perf_slot
