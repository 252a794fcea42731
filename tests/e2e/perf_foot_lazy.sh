#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The libraries memtrace loads on first need (src/base/lazy_libs.h): the
# always-on profiler (MEMTRACE_SAMPLE=524288, MEMTRACE_SYMBOLIZE=later)
# runs without libdw, libelf, zlib or libzstd mapped
# (tests/progs/perf_foot_lazy.c reads its own /proc/self/maps; libunwind
# stays DT_NEEDED, for SIGSEGV's handler), and still writes its pprof file
# at exit (zlib loaded then, through the trampolines: gzip and `go tool
# pprof` read it); neither library names them in DT_NEEDED; with `now`
# (the default) both have all of them loaded at start-up, as the dynamic
# loader did. A zlib without deflate is one memtrace: line, no pprof
# file, status 0. A few seconds.
set -u
. "$(dirname "$0")/lib.sh"
prog=$tests/perf_foot_lazy
prof=$build/libmemtrace-profiler.so
lib=$build/libmemtrace.so
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_PPROF_EVERY MEMTRACE_SAMPLE \
    MEMTRACE_SYMBOLIZE MEMTRACE_UNWIND MEMTRACE_RECORD MEMTRACE_GUARD_SAMPLE MEMTRACE_INTERVAL_MS

# run NAME LIB [VAR=VALUE...]: the program in $work/NAME/, its stdout in
# out, stderr in err; its exit status checked (0).
run() {
    local name=$1 l=$2
    shift 2
    mkdir -p "$work/$name"
    (cd "$work/$name" && timeout 60 env "$@" LD_PRELOAD="$l" "$prog" >out 2>err)
    check "$name: exit status" 0 "$?"
    has "$name: ran to its end" "$work/$name/out" "done"
}
maps() { grep '^map ' "$work/$1/out" | sed 's/^map //' | sort | tr '\n' ' '; }

for l in "$lib" "$prof"; do
    n=$(basename "$l" .so)
    needed=$(readelf -d "$l" | sed -nE 's/.*\(NEEDED\).*\[(.*)\]/\1/p' | tr '\n' ' ')
    case " $needed" in
    *" libdw"* | *" libelf"* | *" libz."* | *" libzstd"*)
        fail "$n: DT_NEEDED names none of the lazily loaded" "$needed" ;;
    *) pass "$n: DT_NEEDED names none of the lazily loaded ($needed)" ;;
    esac
    # now: all five mapped from start-up on, as when they were linked in
    run "$n-now" "$l" MEMTRACE_SAMPLE=524288
    check "$n now: the libraries mapped" "libdw libelf libunwind libz libzstd " "$(maps "$n-now")"
done

# later, the always-on profiler: none mapped while the program runs.
run later "$prof" MEMTRACE_SAMPLE=524288 MEMTRACE_SYMBOLIZE=later MEMTRACE_PPROF=p.pb.gz
check "later: the libraries mapped" "libunwind " "$(maps later)"
lacks "later: no memtrace: warning" "$work/later/err" "memtrace: cannot"
# ... and zlib, loaded at exit through the trampolines, wrote the pprof.
if gzip -t "$work/later/p.pb.gz" 2>/dev/null; then pass "later: p.pb.gz is whole gzip"
else fail "later: p.pb.gz is whole gzip" "$(ls -l "$work/later" | tr '\n' ' ')"; fi
if command -v go >/dev/null 2>&1; then
    samples=$(cd "$work" && HOME=$work/home PPROF_TMPDIR=$work/pprof-tmp timeout 60 \
        go tool pprof -raw "$work/later/p.pb.gz" 2>/dev/null | grep -c '^ *[0-9]')
    if [ "${samples:-0}" -ge 1 ]; then pass "later: go tool pprof reads p.pb.gz ($samples samples)"
    else fail "later: go tool pprof reads p.pb.gz" "no samples"; fi
fi

# later with libunwind as the unwinder: stacks taken, nothing else loaded.
run unwind "$prof" MEMTRACE_SAMPLE=1 MEMTRACE_SYMBOLIZE=later MEMTRACE_UNWIND=libunwind \
    MEMTRACE_OUTPUT=report
check "later, MEMTRACE_UNWIND=libunwind: the libraries mapped" "libunwind " "$(maps unwind)"
if grep -qE '^  #0 0x[0-9a-f]+ \(/[^ ]*perf_foot_lazy\+0x[0-9a-f]+\)' "$work/unwind/report"; then
    pass "later, MEMTRACE_UNWIND=libunwind: frames of the program in the report"
else fail "later, MEMTRACE_UNWIND=libunwind: frames of the program in the report" \
    "$(head -5 "$work/unwind/report")"; fi

# A zlib without deflate (first in LD_LIBRARY_PATH): one line, no file.
mkdir -p "$work/fake"
echo 'int mt_not_zlib(void) { return 0; }' >"$work/fake/z.c"
gcc -shared -fPIC -Wl,-soname,libz.so.1 -o "$work/fake/libz.so.1" "$work/fake/z.c"
run nozlib "$prof" LD_LIBRARY_PATH="$work/fake" MEMTRACE_SAMPLE=524288 MEMTRACE_SYMBOLIZE=later \
    MEMTRACE_PPROF=p.pb.gz
check "no deflate: memtrace's line" "memtrace: libz.so.1 has no deflate: no pprof files" \
    "$(grep -m1 'libz.so.1' "$work/nozlib/err")"
check "no deflate: that line once" 1 "$(grep -c '^memtrace: libz.so.1' "$work/nozlib/err")"
has "no deflate: the pprof file not written" "$work/nozlib/err" "p.pb.gz not written"

finish perf_foot_lazy
