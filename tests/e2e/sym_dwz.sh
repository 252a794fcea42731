#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# dwz's common file (.gnu_debugaltlink), found by memtrace's own search:
# libdwfl's opens its candidates blocking (a FIFO there hung it) and takes
# whatever it finds by name. tests/progs/sym_dwz_prog.c is built twice at
# -O2 (two build IDs, the same DWARF), `dwz -m` moves what the two debug
# files share (the inlined functions' names among it) into a common file,
# and the program runs stripped of its debug sections, its debug file at
# its build ID under MEMTRACE_DEBUG_DIR. The common file is looked for at
# its build ID there, then by the name the altlink gives
# (/usr/lib/debug/.dwz/NAME, read under MEMTRACE_DEBUG_DIR). Cases:
#   good   the common file at its build ID (a link): the 1000-byte site's
#          frame 0 is the inline chain inner, outer, thr as
#          `addr2line -i -f -C` gives it on the unstripped program;
#   fifo   FIFOs at both places; wrong: a regular ELF file of another
#          build ID at both: the run ends (bounded by timeout), status 0,
#          frame 0 named thr from the symbol table, and one note naming
#          the first refused candidate.
# Each case under the profiler (the library's search) and through
# `memtrace export` of a recording cut short (memtrace-symbolize's).
# Prints "sym_dwz: N passed, N failed" last.
set -u
. "$(dirname "$0")/lib.sh"
export_=$build/memtrace-export
profiler=$build/libmemtrace-profiler.so
tracer=$build/libmemtrace.so
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_RECORD MEMTRACE_SAMPLE DEBUGINFOD_URLS \
    MEMTRACE_DEBUG_DIR
cd "$work" || exit 1
src=tests/progs/sym_dwz_prog.c
build_id() { readelf -n "$1" 2>/dev/null | awk '/Build ID:/ { print $3; exit }'; }

for v in a b; do
    (cd "$root" && gcc -O2 -g -Wall -Wextra -pthread -o "$work/$v" "$src" \
        -Wl,--build-id=0x"$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')") &&
        objcopy --only-keep-debug "$v" "$v.debug" || {
        fail build "cannot build $v"
        finish sym_dwz
        exit 1
    }
done
mkdir -p root/.dwz
dwz -m root/.dwz/common.debug -M /usr/lib/debug/.dwz/common.debug a.debug b.debug
if ! readelf -S a.debug 2>/dev/null | grep -q gnu_debugaltlink; then
    fail build "dwz made no .gnu_debugaltlink"
    finish sym_dwz
    exit 1
fi
strip --strip-debug -o prog a
id=$(build_id a) alt=$(build_id root/.dwz/common.debug)
mkdir -p "root/.build-id/${id:0:2}" "root/.build-id/${alt:0:2}"
cp a.debug "root/.build-id/${id:0:2}/${id:2}.debug"
by_id=root/.build-id/${alt:0:2}/${alt:2}.debug
by_name=root/.dwz/common.debug
mv "$by_name" common.debug
export MEMTRACE_DEBUG_DIR=$work/root

# What addr2line gives for the return address RET's call (RET - 1) in the
# unstripped program: "function|file|line" a row, inlined rows first.
oracle() {
    addr2line -i -f -C -e a "$(printf '0x%x' $(($1 - 1)))" |
        paste - - | sed -E 's/ \(discriminator [0-9]+\)//; s|\t.*/|\||; s/:([0-9]+)$/|\1/'
}
# The 1000-byte site of the export's JSON, frame 0's rows as oracle's, and
# its offset on the first line.
json_rows() {
    python3 - "$1" 2>/dev/null <<'PY'
import json, os, sys
for s in json.load(open(sys.argv[1]))["sites"]:
    if s["allocated_bytes"] == 1000:
        fr = s["frames"]
        print(fr[0].get("offset", "?"))
        for f in fr:
            if f["address"] != fr[0]["address"]:
                break
            print("%s|%s|%s" % (f["function"], os.path.basename(f["file"] or "None"), f["line"]))
PY
}
# The profiler's rows of the 1000-byte site's frame 0, as oracle's.
report_rows() {
    awk '/^memtrace: \[[0-9]+\] 1000 bytes live/ { on = 1; next } /^memtrace: / { on = 0 }
         on && /^  #0 / { print; r = 1; next } on && r && /^     inlined into / { print; next } { r = 0 }' "$1" |
        sed -E 's/^  #0 //; s/^     inlined into //; s/ at (.*\/)?([^/ :]*):([0-9]+)(:[0-9]+)?$/|\2|\3/'
}
note() {
    echo "memtrace: prog: the dwz common file $1 is not this build's or cannot be read; names it" \
        "holds are taken from the symbol table"
}

# run CASE: the profiled run and the export of a recording cut short.
run() {
    local name=$1 rc
    mkdir -p "$name"
    timeout 60 env LD_PRELOAD="$profiler" MEMTRACE_INTERVAL_MS=0 ./prog >/dev/null 2>"$name/prof.err"
    rc=$?
    check "$name: the profiled program's status" 0 "$rc"
    MEMTRACE_RECORD=$work/$name/cut.rec LD_PRELOAD=$tracer ./prog wait >"$name/cut.out" 2>"$name/cut.err" &
    local pid=$! i
    for i in $(seq 300); do grep -q '^ready' "$name/cut.out" 2>/dev/null && break; sleep 0.1; done
    sleep 1.5
    { kill -KILL $pid; wait $pid; } 2>/dev/null
    (cd "$name" && timeout 60 "$export_" --json cut.rec -o cut.json 2>export.err)
    rc=$?
    check "$name: export's status" 0 "$rc"
    json_rows "$name/cut.json" >"$name/json.rows"
    report_rows "$name/prof.err" >"$name/prof.rows"
}

# good: the common file at its build ID, a link as Debian's dh_dwz lays.
ln -s ../../.dwz/common.debug "$by_id"
mv common.debug "$by_name"
run good
off=$(head -1 good/json.rows)
if [[ $off == 0x* ]]; then
    oracle "$off" >good/want
    check "good: addr2line gives the three rows" "inner|outer|thr" "$(cut -d'|' -f1 good/want | paste -sd'|')"
    check "good: export's frame 0 as addr2line -i" "$(cat good/want)" "$(tail -n +2 good/json.rows)"
    check "good: the exit report's frame 0 as addr2line -i" "$(cat good/want)" "$(cat good/prof.rows)"
else
    fail "good: export's frame 0" "no 1000-byte site: $(cat good/export.err)"
fi
check "good: no note" "" "$(grep -h '^memtrace: prog' good/prof.err good/export.err)"

# bad CASE: the run with whatever is at both places; the rows are thr's.
bad() {
    local name=$1 want
    want=$(note "$work/$by_id")
    run "$name"
    check "$name: the exit report's frame 0 named from the symbol table" "thr" \
        "$(head -1 "$name/prof.rows" | cut -d'|' -f1)"
    check "$name: export's frame 0 named from the symbol table" "thr" \
        "$(sed -n 2p "$name/json.rows" | cut -d'|' -f1)"
    check "$name: the profiled program's one note" "$want" "$(grep '^memtrace: prog:' "$name/prof.err")"
    check "$name: export's one note" "$want" "$(grep '^memtrace: prog:' "$name/export.err")"
}
rm -f "$by_id" "$by_name"
mkfifo "$by_id" "$by_name"
bad fifo
rm -f "$by_id" "$by_name"
cp b.debug "$by_id" && cp b.debug "$by_name"
bad wrong
finish sym_dwz
