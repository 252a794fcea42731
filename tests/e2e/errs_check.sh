#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `memtrace check` after a report, and `memtrace last-error`, in gdb on a
# live process and on the core MEMTRACE_ON_ERROR=abort leaves
# (tests/progs/errs_corpus.cpp): the block the program reported is listed,
# marked "reported before", and last-error prints the report again (its
# kind, the allocation stack, where it was detected), for a heap error and
# a bad free.
set -u
. "$(dirname "$0")/lib.sh"
lib=${MEMTRACE_LIB:-$build/libmemtrace.so}
helper=$root/gdb/memtrace.py
prog=$tests/errs_corpus
src=tests/progs/errs_corpus.cpp

# The first frame line after the line PREFIX in FILE.
frame_after() { awk -v p="$2" 'on { print; exit } index($0, p) == 1 { on = 1 }' "$1"; }
at_site() { # NAME FILE PREFIX MARKER
    if frame_after "$2" "$3" | grep -qE "^  #0 main at (.*/)?$src:$(site_line "$src" "$4"):[0-9]+\$"; then
        pass "$1: '$3' #0 at SITE:$4"
    else
        fail "$1" "'$3' #0 is not at SITE:$4: $(cat "$2")"
    fi
}

# ---------------------------------------------------------------- live, after the report
timeout 120 gdb -q -batch -nx "$prog" -ex "set env LD_PRELOAD=$lib" -ex "break exit" \
    -ex "run overflow1" -ex "source $helper" -ex "memtrace check" -ex "echo @@ last\n" \
    -ex "memtrace last-error" -ex "kill" >"$work/live.out" 2>&1
has "live: the reported block listed" "$work/live.out" \
    "memtrace: heap-buffer-overflow: 1 byte past the end of a 100-byte block at 0x"
has "live: marked reported" "$work/live.out" "  detected in memtrace check (reported before, detected in free"
has "live: the summary counts it" "$work/live.out" "memtrace: check: 1 damaged block (1 reported before);"
sed -n '/^@@ last/,$p' "$work/live.out" >"$work/live.last"
has "live: last-error" "$work/live.last" "memtrace: last-error: error 1 of the process:"
has "live: last-error's kind" "$work/live.last" \
    "memtrace: heap-buffer-overflow: 1 byte past the end of a 100-byte block at 0x"
at_site "live: last-error" "$work/live.last" "  allocated by thread 1 (allocation #" overflow1_alloc
has "live: last-error: where" "$work/live.last" "  detected in free by thread 1 at:"

# ---------------------------------------------------------------- the core of the abort
for c in overflow1 double_free; do
    mkdir -p "$work/$c"
    (cd "$work/$c" && ulimit -S -c unlimited &&
        MEMTRACE_ON_ERROR=abort timeout 60 env LD_PRELOAD="$lib" "$prog" "$c" \
            >"$work/$c.out" 2>&1) 2>/dev/null
    RC=$?
    status "$c: MEMTRACE_ON_ERROR=abort aborts" 134
    core=$(ls "$work/$c"/core* 2>/dev/null | head -1)
    if [ -z "$core" ]; then
        fail "$c: core" "no core file (core_pattern: $(cat /proc/sys/kernel/core_pattern))"
        continue
    fi
    timeout 120 gdb -q -batch -nx "$prog" "$core" -ex "source $helper" -ex "memtrace check" \
        -ex "echo @@ last\n" -ex "memtrace last-error" >"$work/$c.gdb" 2>&1
    sed -n '/^@@ last/,$p' "$work/$c.gdb" >"$work/$c.last"
    has "$c core: last-error" "$work/$c.last" "memtrace: last-error: error 1 of the process:"
    at_site "$c core: last-error" "$work/$c.last" "  allocated by thread 1 (allocation #" "${c}_alloc"
done
has "overflow1 core: the block it aborted for is listed" "$work/overflow1.gdb" \
    "memtrace: heap-buffer-overflow: 1 byte past the end of a 100-byte block at 0x"
has "overflow1 core: found damaged, marked reported" "$work/overflow1.gdb" \
    "  detected in memtrace check (reported before, detected in free)"
has "overflow1 core: the summary" "$work/overflow1.gdb" "memtrace: check: 1 damaged block (1 reported before);"
has "overflow1 core: last-error's kind" "$work/overflow1.last" \
    "memtrace: heap-buffer-overflow: 1 byte past the end of a 100-byte block at 0x"
has "double_free core: last-error's kind" "$work/double_free.last" \
    "memtrace: double free of a 32-byte block at 0x"
at_site "double_free core: last-error" "$work/double_free.last" "  free by thread 1 at:" double_free
has "double_free core: no damaged block" "$work/double_free.gdb" "memtrace: check: 0 damaged blocks;"

# ---------------------------------------------------------------- none yet
timeout 120 gdb -q -batch -nx "$prog" -ex "set env LD_PRELOAD=$lib" -ex "break exit" \
    -ex "run ok" -ex "source $helper" -ex "memtrace last-error" -ex "kill" >"$work/none.out" 2>&1
has "no error: last-error says so" "$work/none.out" "memtrace: last-error: no error reported"

finish errs_check
