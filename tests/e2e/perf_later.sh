#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# MEMTRACE_SYMBOLIZE=later: nothing is symbolized in the traced process.
# tests/progs/perf_later.c, built gcc -O0 (make), clang -O0, gcc -O2 (a
# tail call) and gcc -no-pie (module offsets are addresses), runs under the profiler tracing every block
# (MEMTRACE_SAMPLE=1) and under the tracer's leak check, with later and
# with now. With later: the reports' frames are raw ("0xPC (PATH+0xOFF)
# (BuildId: ...)") with no file:line, and the process (strace) opens
# neither its own file nor a debug file, as symbolizing would; `memtrace
# symbolize` of the raw report and folded file gives exactly what now
# wrote (less the lines with times and pids); the raw pprof profile's
# Mappings carry file and build ID and no functions, and `go tool pprof`
# symbolizes the known site to addr2line's function and file:line. A copy
# of the program with one byte of its build ID changed, or a missing file,
# leaves that module's frames raw with one memtrace: line, status 0. A bad
# value is one warning, and now. About 20 s.
set -u
. "$(dirname "$0")/lib.sh"
prof=$build/libmemtrace-profiler.so
lib=$build/libmemtrace.so
sym=$build/memtrace
P=tests/progs/perf_later.c
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_PPROF_EVERY MEMTRACE_SAMPLE \
    MEMTRACE_SAMPLE_SEED MEMTRACE_INTERVAL_MS MEMTRACE_DEBUG_DIR MEMTRACE_SYMBOLIZE \
    MEMTRACE_LEAK_CHECK DEBUGINFOD_URLS
export HOME=$work/home PPROF_TMPDIR=$work/pprof-tmp
for tool in strace go addr2line clang; do
    if ! command -v $tool >/dev/null 2>&1; then
        fail "$tool" "not installed (make deps)"
        finish perf_later
        exit 1
    fi
done

# A frame line as later writes it.
raw_re='^  #[0-9]+ 0x[0-9a-f]+ \(/[^ ]+\+0x[0-9a-f]+\)( \(BuildId: [0-9a-f]+\))?$'
# The lines that differ between two runs whatever they symbolize: the
# exit report's first (pid, times), the folded files' (peak time), the
# leak check's first (pid, time).
untimed() { grep -v '^memtrace: exit report, pid \|^memtrace: folded stacks: \|^memtrace: leak check, pid ' "$1"; }

# run NAME BIN MODE: the profiler and the tracer's leak check on BIN, in
# $work/NAME.run/ whatever MODE (the reports name their files), then
# moved to $work/NAME.MODE/.
run() {
    local d=$work/$1.run
    mkdir -p "$d"
    (cd "$d" && timeout 60 strace -f -qq -o trace -e trace=open,openat -E LD_PRELOAD="$prof" \
        -E MEMTRACE_SYMBOLIZE=$3 -E MEMTRACE_SAMPLE=1 -E MEMTRACE_INTERVAL_MS=0 \
        -E MEMTRACE_OUTPUT=report -E MEMTRACE_FOLDED=folded -E MEMTRACE_PPROF=p.pb.gz \
        "$2" >out 2>err)
    echo $? >"$d/rc"
    (cd "$d" && timeout 60 env LD_PRELOAD="$lib" MEMTRACE_SYMBOLIZE=$3 MEMTRACE_LEAK_CHECK=1 \
        "$2" >/dev/null 2>leaks)
    echo $? >"$d/leak_rc"
    mv "$d" "$work/$1.$3"
}

# symbolizer_opens DIR BIN: the files the traced process opened (DIR/trace)
# that only symbolizing opens: BIN itself, debug files, a file opened twice;
# not /proc, /dev, nor memtrace's outputs (in $work/NAME.run), nor the
# loader's cache (read again by each dlopen: memtrace loads zlib on first
# need, src/base/lazy_libs.h).
symbolizer_opens() {
    grep -v ' = -1 ' "$1/trace" | grep -oE 'open(at)?\(.*"[^"]+"' | sed -E 's/.*"([^"]+)"$/\1/' |
        grep -v "^/proc/\|^/dev/\|^$work/\|^/etc/ld\.so\.cache$" | sort | uniq -c |
        awk -v b="$2" '$1 > 1 || $2 == b || $2 ~ /^\/usr\/lib\/debug|\.debug$/'
}

# A frame's "0xPC (BIN+0xOFF)": its OFF (hex).
frame_off() { sed -E 's/.*\+0x([0-9a-f]+)\).*/\1/'; }

suite() { # NAME BIN
    local name=$1 bin=$2 d=$work/$1.later n=$work/$1.now
    run "$name" "$bin" later
    run "$name" "$bin" now
    check "$name: profiler status" "0 0" "$(cat "$d/rc") $(cat "$n/rc")"
    check "$name: leak check status (23: a block lost)" "23 23" \
        "$(cat "$d/leak_rc") $(cat "$n/leak_rc")"
    # Raw: every frame line of every report is raw, and there are some.
    local frames bad
    frames=$(cat "$d/report" "$d/leaks" | grep -c '^  #')
    bad=$(cat "$d/report" "$d/leaks" | grep '^  #' | grep -cvE "$raw_re")
    check "$name: later, every frame raw ($frames frames)" "0" "$bad"
    [ "$frames" -ge 12 ] && pass "$name: later, frames written" ||
        fail "$name: later, frames written" "$frames"
    lacks "$name: later, no file:line in the report" "$d/report" "$P:"
    lacks "$name: later, no file:line in the leak report" "$d/leaks" "$P:"
    has "$name: now, the file:line in the report" "$n/report" \
        "not_inlined at $P:$(site_line $P not_inlined):"
    # The process opened neither its own file nor a debug file, nor a
    # library a second time (the loader opens each once; libdwfl opens
    # them again to symbolize, as now does: the check's own witness).
    check "$name: later, no ELF or debug file opened to symbolize" "" "$(symbolizer_opens "$d" "$bin")"
    # nor libdw, which only symbolizing needs (loaded on first need)
    check "$name: later, libdw not loaded" "" "$(grep -v ' = -1 ' "$d/trace" | grep -o '/libdw[^"]*"')"
    [ -n "$(symbolizer_opens "$n" "$bin")" ] && pass "$name: now opens them (the witness)" ||
        fail "$name: now opens them (the witness)" "$(cat "$n/trace")"
    # memtrace symbolize gives back what now wrote.
    "$sym" symbolize "$d/report" >"$d/report.sym" 2>"$d/sym.err"
    RC=$?
    status "$name: symbolize the report" 0
    check "$name: symbolize: no message" "" "$(cat "$d/sym.err")"
    if diff <(untimed "$n/report") <(untimed "$d/report.sym") >"$d/diff"; then
        pass "$name: symbolize the report: what now wrote, line for line"
    else
        fail "$name: symbolize the report: what now wrote" "$(head -20 "$d/diff")"
    fi
    "$sym" symbolize <"$d/leaks" >"$d/leaks.sym" 2>/dev/null
    if diff <(untimed "$n/leaks") <(untimed "$d/leaks.sym") >"$d/diff"; then
        pass "$name: symbolize the leak report (standard input): what now wrote"
    else
        fail "$name: symbolize the leak report: what now wrote" "$(head -20 "$d/diff")"
    fi
    "$sym" symbolize "$d/folded" "$d/folded.peak" >"$d/folded.sym" 2>/dev/null
    check "$name: symbolize the folded files: what now wrote" \
        "$(cat "$n/folded" "$n/folded.peak")" "$(cat "$d/folded.sym")"
    grep -q '(BuildId: ' "$d/folded" && pass "$name: later, folded frames raw" ||
        fail "$name: later, folded frames raw" "$(head -2 "$d/folded")"

    # pprof: unsymbolized Mappings and Locations, then go tool pprof's own.
    go tool pprof -raw -symbolize=none "$d/p.pb.gz" >"$d/pprof.none" 2>&1
    local id
    id=$(readelf -n "$bin" | awk '/Build ID:/ { print $3; exit }')
    has "$name: pprof Mapping: the file and its build ID" "$d/pprof.none" " $bin $id"
    lacks "$name: pprof Mappings: no functions" "$d/pprof.none" "[FN]"
    lacks "$name: pprof Locations: no lines" "$d/pprof.none" "perf_later.c"
    go tool pprof -raw -symbolize=local "$d/p.pb.gz" >"$d/pprof.local" 2>&1
    local frame off want got
    # The not_inlined site's frame #0, and what addr2line says of it.
    frame=$(awk '/^memtrace: \[/ { s = $0 } /^  #0 / && s ~ / 300 bytes live/ { print; exit }' \
        "$d/report")
    off=$(echo "$frame" | frame_off)
    want=$(addr2line -i -f -C -e "$bin" "0x$off" | paste -sd' ' | sed -E 's|^([^ ]+) .*/|\1 |')
    check "$name: addr2line of the site's frame" "not_inlined perf_later.c:$(site_line $P not_inlined)" \
        "$(echo "$want" | sed 's/ (discriminator [0-9]*)//')"
    got=$(awk -v a="$(echo "$frame" | awk '{ print $2 }')" '$2 == a { print $4, $5; exit }' \
        "$d/pprof.local" | sed -E 's|^([^ ]+) .*/|\1 |')
    check "$name: go tool pprof symbolizes the site as addr2line does" "$want" "$got"

    # A copy with another build ID, and a missing file: frames left raw.
    cp "$bin" "$d/copy"
    python3 - "$d/copy" "$id" <<'EOF'
import sys
path, hexid = sys.argv[1], sys.argv[2]
data = bytearray(open(path, "rb").read())
at = data.find(bytes.fromhex(hexid))
data[at] ^= 0xff
open(path, "wb").write(data)
EOF
    sed "s|($bin+|($d/copy+|" "$d/report" >"$d/report.copy"
    "$sym" symbolize "$d/report.copy" >"$d/copy.sym" 2>"$d/copy.err"
    RC=$?
    status "$name: another build" 0
    check "$name: another build: one line" \
        "memtrace: symbolize: $d/copy: its build ID is not the recorded one (rebuilt or replaced since); its frames are left raw" \
        "$(cat "$d/copy.err")"
    check "$name: another build: its frames raw, the others symbolized" \
        "$(grep -c "($d/copy+" "$d/report.copy") 0" \
        "$(grep -c "($d/copy+" "$d/copy.sym") $(grep -c '(/.*libc.so.6+' "$d/copy.sym")"
    sed "s|($bin+|($d/gone+|" "$d/report" | "$sym" symbolize >/dev/null 2>"$d/gone.err"
    RC=$?
    status "$name: a missing file" 0
    check "$name: a missing file: one line" "1" "$(grep -c "^memtrace: symbolize: $d/gone: " "$d/gone.err")"
}

suite gcc "$tests/perf_later"
(cd "$root" && clang -O0 -g -Iinclude $P -o "$work/perf_later_clang") || fail "clang build" ""
suite clang "$work/perf_later_clang"
(cd "$root" && gcc -O2 -g -Iinclude $P -o "$work/perf_later_o2") || fail "gcc -O2 build" ""
suite gcc-O2 "$work/perf_later_o2"
(cd "$root" && gcc -O0 -g -no-pie -Iinclude $P -o "$work/perf_later_nopie") ||
    fail "gcc -no-pie build" ""
suite gcc-no-pie "$work/perf_later_nopie"
has "gcc -O2: now, a tail call" "$work/gcc-O2.now/report" " (tail call)"
has "gcc -O2: now, an inlined frame" "$work/gcc-O2.now/report" "     inlined into build at $P:"

# A bad value: one warning, and now.
timeout 60 env LD_PRELOAD="$prof" MEMTRACE_SYMBOLIZE=soon MEMTRACE_SAMPLE=1 \
    MEMTRACE_INTERVAL_MS=0 "$tests/perf_later" >/dev/null 2>"$work/bad.err"
check "a bad value: one warning" \
    "1 memtrace: MEMTRACE_SYMBOLIZE=\"soon\" is not one of now, later; using now" \
    "$(grep -c 'MEMTRACE_SYMBOLIZE' "$work/bad.err") $(head -1 "$work/bad.err")"
has "a bad value: now's frames" "$work/bad.err" "not_inlined at $P:$(site_line $P not_inlined):"
"$sym" symbolize "$work/nonexistent" >/dev/null 2>"$work/none.err"
RC=$?
status "no input read" 1

finish perf_later
