#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A FIFO where a debug file is looked for (nothing ever writes to it):
#   buildid   MEMTRACE_DEBUG_DIR/.build-id/xx/yyyy.debug
#   usr       /usr/lib/debug/.build-id/xx/yyyy.debug (as root only; removed
#             at exit)
#   link      the .gnu_debuglink name beside the program
# libdwfl's own search opens its candidates blocking: there the open never
# returned. memtrace's searches (the library's, and memtrace-symbolize's,
# which `memtrace export` and the gdb command use) open each candidate
# without blocking and take it only if it is a regular file. For each
# place, tests/progs/sym_late_prog.c, stripped of its debug sections (its
# symbol table kept):
#  - under the profiler: status 0, its exit report names thr's site from
#    the symbol table (module+offset), and one note names the FIFO;
#  - `memtrace export` of a recording cut short (kill -9): status 0, thr's
#    site named from the symbol table, the FIFO's one note;
#  - buildid only: gdb's memtrace command (memtrace-symbolize on the live
#    process) answers (its notes are not shown there; gdb itself looks under /usr/lib/debug and
#    beside the program, where a FIFO hangs gdb 13's own open).
# Every run is bounded by timeout: a hang is a failure, not a stuck suite.
# Prints "sym_fifo: N passed, N failed" last.
set -u
. "$(dirname "$0")/lib.sh"
memtrace=$build/memtrace
export_=$build/memtrace-export
profiler=$build/libmemtrace-profiler.so
tracer=$build/libmemtrace.so
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_RECORD MEMTRACE_SAMPLE DEBUGINFOD_URLS \
    MEMTRACE_DEBUG_DIR
cd "$work" || exit 1
laid=()
trap 'rm -f "${laid[@]}"; rm -rf "$work"' EXIT

# A build of its own, with a build ID no other program has: the FIFO laid
# under /usr/lib/debug/.build-id must not stand in the way of another
# suite running at the same time with build/tests/sym_late_prog
# (sym_debuginfod's gdb would hang on it).
(cd "$root" && gcc -O0 -g -Wall -Wextra -pthread -Iinclude -o "$work/own" tests/progs/sym_late_prog.c \
    -ldl -Wl,--build-id=0x"$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')")
strip --strip-debug -o plain own
objcopy --only-keep-debug own prog.debug
strip --strip-debug -o linked own
objcopy --add-gnu-debuglink=prog.debug linked
rm prog.debug
id=$(readelf -n plain | sed -n 's/.*Build ID: //p')
truncated_line="memtrace export: cut.rec is truncated (the file ends before the recording's end): the run up to"

# note PROG PATH: the one note of a FIFO at PATH for module PROG.
note() {
    echo "memtrace: $1: the debug file $2 is not this build's or cannot be read; its frames are named from the symbol table"
}

# fifo_case NAME PROG FIFO: the FIFO laid, PROG run under the profiler,
# then recorded, killed and exported.
fifo_case() {
    local name=$1 prog=$2 fifo=$3 rc
    mkdir -p "$name" "${fifo%/*}" && cp "$prog" "$name/prog" && rm -f "$fifo" && mkfifo "$fifo" || {
        fail "$name" "cannot lay the FIFO $fifo"
        return
    }
    local want
    want=$(note prog "$fifo")
    timeout 60 env LD_PRELOAD="$profiler" MEMTRACE_INTERVAL_MS=0 "$name/prog" >/dev/null 2>"$name/prof.err"
    rc=$?
    check "$name: the profiled program's status" 0 "$rc"
    check "$name: the exit report names thr from the symbol table" "  #0 thr in prog+0x" \
        "$(grep -m1 '^  #0 thr ' "$name/prof.err" | sed 's/0x[0-9a-f]*$/0x/')"
    check "$name: the program's one note" "$want" "$(grep '^memtrace: prog:' "$name/prof.err")"

    MEMTRACE_RECORD=$work/$name/cut.rec LD_PRELOAD=$tracer "$name/prog" wait >"$name/cut.out" 2>"$name/cut.err" &
    local pid=$! i
    for i in $(seq 300); do grep -q '^ready' "$name/cut.out" 2>/dev/null && break; sleep 0.1; done
    sleep 1.5
    { kill -KILL $pid; wait $pid; } 2>/dev/null
    (cd "$name" && timeout 60 "$export_" --json cut.rec -o cut.json 2>export.err)
    rc=$?
    check "$name: export's status and lines" "0|$want|$truncated_line" \
        "$rc|$(sed 's/ [0-9.]* s$//' "$name/export.err" | paste -sd'|')"
    check "$name: export names thr from the symbol table" "thr|None|None" \
        "$(python3 - "$name/cut.json" 2>/dev/null <<'PY'
import json, sys
for s in json.load(open(sys.argv[1]))["sites"]:
    if s["allocated_bytes"] == 1000:
        f = s["frames"][0]
        print("%s|%s|%s" % (f["function"], f["file"], f["line"]))
PY
)"
}

export MEMTRACE_DEBUG_DIR=$work/root
fifo_case buildid plain "$work/root/.build-id/${id:0:2}/${id:2}.debug"
# The gdb command: memtrace-symbolize reads MEMTRACE_DEBUG_DIR, gdb does not.
timeout 120 "$memtrace" gdb -batch -ex 'break pause' -ex 'run wait' \
    -ex 'memtrace *(void **)((char *)&g_keep + 56)' -ex kill -- buildid/prog >gdb.out 2>&1 </dev/null
check "buildid: gdb's memtrace command names thr from the symbol table" "  #0 thr in prog+0x" \
    "$(grep -m1 '^  #0 ' gdb.out | sed 's/0x[0-9a-f]*$/0x/')"
unset MEMTRACE_DEBUG_DIR

usr=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
if [ -e "$usr" ]; then
    fail "usr" "$usr is there already"
elif mkdir -p "${usr%/*}" 2>/dev/null && [ -w "${usr%/*}" ]; then
    laid+=("$usr")
    fifo_case usr plain "$usr"
    rm -f "$usr"
    rmdir "${usr%/*}" 2>/dev/null
else
    pass "usr: not run (/usr/lib/debug is not writable: not root)"
fi

fifo_case link linked "$work/link/prog.debug"
finish sym_fifo
