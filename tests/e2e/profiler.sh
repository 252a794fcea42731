#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Profiler end-to-end tests: tests/progs/profile_sites.c runs under
# libmemtrace-profiler.so; the reports it asks for (memtrace_report via dlsym)
# must hold the exact bytes and blocks of each "SITE:<name>" site, at the
# marker's file:line, largest last; the exit report the peak and the leaks;
# the folded files the per-stack bytes; forks and 8 threads consistent totals.
# Periodic reports are counted with wide bounds (timing is not exact on a
# loaded machine). Prints "profiler: N passed, N failed"; exits 1 on failure.
set -u
. "$(dirname "$0")/lib.sh"
prog=$build/tests/profile_sites
plib=$build/libmemtrace-profiler.so
tlib=$build/libmemtrace.so
src=tests/progs/profile_sites.c
src_c=tests/progs/profile_corners.c
line_of() { site_line "$src" "$1"; }
# Each entry of a report on one line: "LIVE BLOCKS | ALLOC ... | #0 frame".
entries() {
    awk '/^memtrace: \[[0-9]+\]/ { if (e != "") print e; e = $3 " " $7 " | "; sub(/^[^:]*: [^:]*: /, ""); e = e $0; next }
         /^  #0 / { e = e " | " $0 }
         END { if (e != "") print e }'
}

# The "#0 FUNC at FILE:LINE" of site NAME.
frame_of() { echo "  #0 alloc_$1 at $src:$(line_of "$1"):"; }

cd "$root" || exit 1

# ---------------------------------------------------------------- on demand
out=$work/demand.%p.out
env LD_PRELOAD="$plib" MEMTRACE_OUTPUT="$out" MEMTRACE_TOP=3 MEMTRACE_INTERVAL_MS=0 \
    MEMTRACE_FOLDED="$work/demand.folded" "$prog" demand 2>"$work/demand.err"
rc=$?
files=("$work"/demand.*.out)
check "demand: exit code" 0 "$rc"
check "demand: %p expands to one file per process" 1 "${#files[@]}"
f=${files[0]}
pid=$(basename "$f" | cut -d. -f2)
if grep -q "^memtrace: report 1 (on request), pid $pid, " "$f"; then
    pass "demand: %p is the pid in the report"
else
    fail "demand: %p" "no report from pid $pid in $f"
fi
check "demand: nothing on stderr" "" "$(cat "$work/demand.err")"
check "demand: 3 reports and 1 exit report" "3 1" \
    "$(grep -c '^memtrace: report [0-9]* (' "$f") $(grep -c '^memtrace: exit report' "$f")"

e1=$(profiler_report "$f" 1 | entries)
expect1="1000 10 | 1000 bytes in 10 blocks allocated, 0 bytes in 0 blocks freed | $(frame_of small)
20000 4 | 20000 bytes in 4 blocks allocated, 0 bytes in 0 blocks freed | $(frame_of mid)
120000 3 | 120000 bytes in 3 blocks allocated, 0 bytes in 0 blocks freed | $(frame_of big)"
# The frame lines end with the column; compare up to the ':' after the line.
strip_col() { sed -E 's/(\.c:[0-9]+:)[0-9]+$/\1/'; }
check "report 1: bytes, blocks, interval, file:line, largest last" "$expect1" \
    "$(printf '%s\n' "$e1" | strip_col)"
check "report 1: header total and peak" "141000 141000" \
    "$(profiler_report "$f" 1 | head -1 | sed -E 's/.*: ([0-9]+) bytes live at .* peak ([0-9]+) bytes.*/\1 \2/')"
e2=$(profiler_report "$f" 2 | entries | strip_col)
expect2="1000 10 | 0 bytes in 0 blocks allocated, 0 bytes in 0 blocks freed | $(frame_of small)
40000 1 | 0 bytes in 0 blocks allocated, 80000 bytes in 2 blocks freed | $(frame_of big)
50000 10 | 30000 bytes in 6 blocks allocated, 0 bytes in 0 blocks freed | $(frame_of mid)"
check "report 2: new order and interval counts" "$expect2" "$e2"
e3=$(profiler_report "$f" 3 | entries | strip_col)
check "report 3: an unchanged interval reports zero changes" \
    "$(printf '%s\n' "$expect2" | sed -E 's/\| [0-9]+ bytes in [0-9]+ blocks allocated, [0-9]+ bytes in [0-9]+ blocks freed/| 0 bytes in 0 blocks allocated, 0 bytes in 0 blocks freed/')" "$e3"

ex=$(profiler_report "$f" exit)
check "exit: peak and what is still live" "peak 141000 bytes live; 2554 bytes still live in 12 blocks at 2 sites" \
    "$(printf '%s\n' "$ex" | head -1 | sed -E 's/.*: (peak [0-9]+ bytes live) at [0-9]+ ms(; .* sites),.*/\1\2/')"
check "exit: leaks by site, largest last" \
    "1000 10 | 1000 bytes in 10 blocks allocated, 0 bytes in 0 blocks freed | $(frame_of small)
1554 2 | 1554 bytes in 2 blocks allocated, 0 bytes in 0 blocks freed | $(frame_of leak)" \
    "$(printf '%s\n' "$ex" | entries | strip_col)"
check "exit: leak entries say since start" 2 "$(printf '%s\n' "$ex" | grep -c '; since start: ')"

folded() { sed -E 's/^_start;__libc_start_main[^;]*;__libc_start_call_main;//' "$1" | sort; }
check "folded at exit" "main;demand;alloc_leak 1554
main;demand;alloc_small 1000" "$(folded "$work/demand.folded")"
check "folded at peak" "main;demand;alloc_big 120000
main;demand;alloc_mid 20000
main;demand;alloc_small 1000" "$(folded "$work/demand.folded.peak")"

# ---------------------------------------------------------------- periodic
err=$work/periodic.err
env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=100 "$prog" periodic 2>"$err"
n=$(grep -c '^memtrace: report [0-9]* (periodic)' "$err")
# 5 changes 400 ms apart then 1.4 s of quiet: about 30 intervals, of which
# 6 to 12 (a change may straddle two) have something to report.
if [ "$n" -ge 3 ] && [ "$n" -le 14 ]; then
    pass "periodic: $n reports, none for the quiet intervals"
else
    fail "periodic: report count" "$n periodic reports (want 3..14 of ~30 intervals)"
fi
# The frees at the end may get a report of their own: look at every report.
check "periodic: a report holds all 5 blocks of the site" "15000 5" \
    "$(grep -A1 -E '^memtrace: \[[0-9]+\] 15000 bytes live in 5 blocks' "$err" | entries | strip_col |
       grep -F "$(frame_of big)" | awk '{print $1, $2; exit}')"

# ---------------------------------------------------------------- threads
err=$work/threads.err
env LD_PRELOAD="$plib" MEMTRACE_TOP=1000 MEMTRACE_INTERVAL_MS=5 "$prog" threads 2>"$err"
# Periodic reports (every 5 ms, while the threads run) come first and make
# their own intervals: take the on-request one and the exit report's totals.
n=$(sed -nE 's/^memtrace: report ([0-9]+) \(on request\).*/\1/p' "$err" | head -1)
r=$(profiler_report "$err" "${n:-0}")
total=$(printf '%s\n' "$r" | head -1 | sed -E 's/.*: ([0-9]+) bytes live at.*/\1/')
sum=$(printf '%s\n' "$r" | entries | awk '{s += $1} END {print s + 0}')
check "8 threads: sum of sites = total live" "$total" "$sum"
check "8 threads: the thread site's live bytes" "57600 800 $(frame_of thread)" \
    "$(printf '%s\n' "$r" | entries | strip_col | grep alloc_thread | awk -F' \\| ' '{print $1, $3}')"
check "8 threads: the thread site since start" \
    "57600 800 | 1152000 bytes in 16000 blocks allocated, 1094400 bytes in 15200 blocks freed | $(frame_of thread)" \
    "$(profiler_report "$err" exit | entries | strip_col | grep alloc_thread)"

# Threads that end leave their counts to the threads that take over their
# tables (site.c); a block freed in another thread than its allocation's.
err=$work/handover.err
env LD_PRELOAD="$plib" MEMTRACE_TOP=1000 "$prog" handover 2>"$err"
check "handover: exit code" 0 "$?"
check "handover: the site's counts on request" "44160 1120 $(frame_of handover)" \
    "$(profiler_report "$err" 1 | entries | strip_col | grep alloc_handover | awk -F' \\| ' '{print $1, $3}')"
check "handover: the site since start" \
    "44160 1120 | 76960 bytes in 2420 blocks allocated, 32800 bytes in 1300 blocks freed | $(frame_of handover)" \
    "$(profiler_report "$err" exit | entries | strip_col | grep alloc_handover)"

# ---------------------------------------------------------------- fork
env LD_PRELOAD="$plib" MEMTRACE_OUTPUT="$work/fork.%p.out" MEMTRACE_TOP=1000 \
    "$prog" fork 2>"$work/fork.err"
check "fork: exit code" 0 "$?"
files=("$work"/fork.*.out)
check "fork: one file per process" 2 "${#files[@]}"
child="" parent=""
for f in "${files[@]}"; do
    p=$(basename "$f" | cut -d. -f2)
    if ! grep -q "^memtrace: report 1 (on request), pid $p, " "$f"; then
        fail "fork: $f" "not the report of pid $p"
    fi
    if grep -q "^memtrace: exit report, pid $p (forked from" "$f"; then child=$f; else parent=$f; fi
done
for f in "$child" "$parent"; do
    [ -n "$f" ] || continue
    for n in 1 exit; do
        r=$(profiler_report "$f" $n)
        total=$(printf '%s\n' "$r" | head -1 | sed -E 's/.*: (peak [0-9]+ bytes live at [0-9]+ ms; )?([0-9]+) bytes (still )?live .*/\2/')
        sum=$(printf '%s\n' "$r" | entries | awk '{s += $1} END {print s + 0}')
        check "fork: $(basename "$f") report $n: sum of sites = total live" "$total" "$sum"
    done
done
check "fork: the child's own heap" "1000 2 $(frame_of child)
2000 2 $(frame_of big)" \
    "$(profiler_report "$child" 1 | entries | strip_col | grep alloc_ | awk -F' \\| ' '{print $1, $3}')"
check "fork: the parent's heap, without the child's" "3000 3 $(frame_of big)" \
    "$(profiler_report "$parent" 1 | entries | strip_col | grep alloc_ | awk -F' \\| ' '{print $1, $3}')"
check "fork: one exit report each" "1 1" \
    "$(grep -c '^memtrace: exit report' "$child") $(grep -c '^memtrace: exit report' "$parent")"

# ---------------------------------------------------------------- signal
out=$work/signal.out
timeout 60 env LD_PRELOAD="$plib" MEMTRACE_SIGNAL=USR2 MEMTRACE_OUTPUT="$out" \
    MEMTRACE_INTERVAL_MS=0 "$prog" signal "$out" 2>"$work/signal.err"
check "MEMTRACE_SIGNAL=USR2: program saw its report and exited 0" 0 "$?"
check "signal: report holds the site" "4321 1" \
    "$(sed -n '/(signal)/,/^memtrace: end of report/p' "$out" | entries | grep alloc_big | awk '{print $1, $2}')"

# ---------------------------------------------------------------- cancel
# A thread cancelled while its memtrace_report blocks in the open of a FIFO
# that nobody reads yet: the report still completes when a reader comes (the
# cancel lands after it), and so does the exit report.
corners=$build/tests/profile_corners
fifo=$work/cancel.fifo
mkfifo "$fifo"
timeout 20 env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=0 MEMTRACE_OUTPUT="$fifo" \
    "$corners" cancel 2>"$work/cancel.err" &
cpid=$!
sleep 1
# One reader for both reports, holding a write end too, so that the FIFO
# never reaches end-of-file (or loses its reader) between them.
timeout 15 python3 - "$fifo" >"$work/cancel.out" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
keep = os.open(sys.argv[1], os.O_WRONLY)
data = b""
while b"memtrace: end of exit report\n" not in data:
    data += os.read(fd, 65536)
sys.stdout.buffer.write(data)
PY
wait $cpid
check "cancel: exit code 0 (not hung on the report lock)" 0 "$?"
check "cancel: the report and the exit report" "1 1" \
    "$(grep -c '^memtrace: end of report 1$' "$work/cancel.out") $(grep -c '^memtrace: end of exit report$' "$work/cancel.out")"
check "cancel: nothing on stderr" "" "$(cat "$work/cancel.err")"
# The same for print_trace, blocked writing to a full pipe on fd 2 while it
# holds the symbolizer's lock: the print after it is symbolized and prompt.
timeout 20 env LD_PRELOAD="$tlib" MEMTRACE_DEPTH=256 "$corners" cancel_trace "$work/ct.out"
check "cancel in print_trace: exit code" 0 "$?"
check "cancel in print_trace: both traces complete and symbolized" "2 0 2" \
    "$(grep -c '^memtrace: 0x' "$work/ct.out") $(grep -c 'another thread holds the symbolizer' "$work/ct.out") $(grep -c "^  #250 pad at $src_c:" "$work/ct.out")"

# ---------------------------------------------------------------- fd 2
# A daemon that closed stderr and opened its data file as fd 2: its 4096
# bytes stay 4096 bytes, the reports go to the stderr it started with. When
# it also closed memtrace's copy and reused that number, the reports have
# nowhere safe to go and are dropped.
head -c 4096 /dev/zero | tr '\0' d >"$work/expected.data"
env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=0 "$corners" stderr2 "$work/fd2.data" 2>"$work/fd2.err"
check "fd 2 reused: exit code" 0 "$?"
check "fd 2 reused: the data file holds only the program's 4096 bytes" "4096 same" \
    "$(stat -c %s "$work/fd2.data") $(cmp -s "$work/fd2.data" "$work/expected.data" && echo same)"
check "fd 2 reused: both reports on the original stderr" "1 1" \
    "$(grep -c '^memtrace: end of report 1$' "$work/fd2.err") $(grep -c '^memtrace: end of exit report$' "$work/fd2.err")"
env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=0 "$corners" stderr2 "$work/fd2c.data" closefrom \
    2>"$work/fd2c.err"
check "fd 2 and memtrace's copy reused: exit code" 0 "$?"
check "fd 2 and memtrace's copy reused: the data file holds only the program's 4096 bytes" \
    "4096 same" "$(stat -c %s "$work/fd2c.data") $(cmp -s "$work/fd2c.data" "$work/expected.data" && echo same)"
check "fd 2 and memtrace's copy reused: nothing on the original stderr" "" "$(cat "$work/fd2c.err")"

# ---------------------------------------------------------------- setproctitle
# The program overwrites its argv and environment strings and clears its
# environment: the settings and the %e name were copied at start-up.
mkdir "$work/pt"
(cd "$work/pt" && env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=0 MEMTRACE_OUTPUT="$work/%e.pt.out" \
    MEMTRACE_FOLDED="$work/%e.pt.folded" "$corners" proctitle 2>"$work/pt.err")
check "setproctitle: exit code" 0 "$?"
check "setproctitle: the exit report in MEMTRACE_OUTPUT, named by %e" 1 \
    "$(grep -c '^memtrace: end of exit report$' "$work/profile_corners.pt.out" 2>/dev/null)"
check "setproctitle: folded files named by %e" "yes yes" \
    "$(test -s "$work/profile_corners.pt.folded" && echo yes) $(test -s "$work/profile_corners.pt.folded.peak" && echo yes)"
check "setproctitle: no stray file in the working directory" "" "$(ls -A "$work/pt")"
check "setproctitle: nothing on stderr" "" "$(cat "$work/pt.err")"

# ---------------------------------------------------------------- long paths
# Templates that fit (4090 bytes: "./" components, then 30 x %e) but expand
# past 4095 bytes: never a file with a cut name (the cut one would be a
# valid path); one line each says what happened.
mkdir "$work/long"
long=$work/long/
while [ ${#long} -lt 4030 ]; do long=$long./; done
long=$long$(printf '%%e%.0s' $(seq 30))
env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=0 MEMTRACE_OUTPUT="$long" MEMTRACE_FOLDED="$long" \
    "$corners" proctitle 2>"$work/long.err"
check "long paths: exit code" 0 "$?"
check "long paths: no file written" "" "$(ls -A "$work/long")"
check "long paths: one warning for MEMTRACE_OUTPUT, the reports on stderr" \
    "memtrace: MEMTRACE_OUTPUT: the path expands to more than 4095 bytes; reporting on stderr
1" "$(grep -v '^memtrace: [[]\|^  \|^memtrace: end of\|^memtrace: exit report\|^memtrace: folded' "$work/long.err")
$(grep -c '^memtrace: end of exit report$' "$work/long.err")"
check "long paths: the exit report says the folded files were not written" \
    "memtrace: folded stacks: not written: the path MEMTRACE_FOLDED expands to is longer than 4090 bytes (4095 with .peak)" \
    "$(grep '^memtrace: folded' "$work/long.err")"

# ---------------------------------------------------------------- symlinks
# Links planted at the output paths: the files they point to stay as they
# were, one warning each, the reports go to stderr.
for v in victim victim.f victim.fp; do echo precious >"$work/$v"; done
ln -s "$work/victim" "$work/sym.out"
ln -s "$work/victim.f" "$work/sym.folded"
ln -s "$work/victim.fp" "$work/sym.folded.peak"
env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=0 MEMTRACE_OUTPUT="$work/sym.out" \
    MEMTRACE_FOLDED="$work/sym.folded" "$corners" proctitle 2>"$work/sym.err"
check "symlinks: exit code" 0 "$?"
check "symlinks: the files they point to are unchanged" "precious precious precious" \
    "$(cat "$work/victim") $(cat "$work/victim.f") $(cat "$work/victim.fp")"
check "symlinks: one warning for MEMTRACE_OUTPUT" \
    "memtrace: MEMTRACE_OUTPUT: $work/sym.out is a symbolic link; not following it; reporting on stderr" \
    "$(grep '^memtrace: MEMTRACE_OUTPUT' "$work/sym.err")"
check "symlinks: the exit report on stderr" 1 "$(grep -c '^memtrace: end of exit report$' "$work/sym.err")"

# ---------------------------------------------------------------- folded C++ names
# Folded names are the symbolizer's function names, whole: a C++ name with
# " (" inside is not cut there.
cxx=$build/tests/profile_cxx
env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=0 MEMTRACE_FOLDED="$work/cxx.folded" \
    "$cxx" 2>"$work/cxx.err"
check "folded C++: exit code" 0 "$?"
cxx_line=$(grep ' 4242$' "$work/cxx.folded")
cxx_lambda=$(site_line tests/progs/profile_cxx.cpp lambda)
check "folded C++: one stack holds the 4242 bytes" 1 "$(grep -c ' 4242$' "$work/cxx.folded")"
case $cxx_line in
*";std::function<void ()>::operator()() const;"*"main::{lambda()#1}::operator()() const 4242")
    pass "folded C++: std::function<void ()>::operator()() const and the lambda, whole" ;;
*) fail "folded C++: whole names" "$cxx_line" ;;
esac
check "folded C++: the lambda's line in the exit report" 1 \
    "$(grep -c "^  #0 main::{lambda()#1}::operator()() const at tests/progs/profile_cxx.cpp:$cxx_lambda:" "$work/cxx.err")"

# ---------------------------------------------------------------- frames without symbols
# A frame no symbol names is module+offset in the folded file (not a bare
# address), the offset addr2line takes for the module's unstripped file.
for p in nopie nopie_pie; do
    env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=0 MEMTRACE_FOLDED="$work/$p.folded" \
        "$build/tests/$p.stripped" 2>/dev/null
    check "stripped $p: exit code" 0 "$?"
    stack=$(grep ' 100$' "$work/$p.folded" | head -1)
    leaf=${stack% 100}
    leaf=${leaf##*;}
    caller=${stack%;*}
    caller=${caller##*;}
    names=""
    for frame in "$caller" "$leaf"; do
        case $frame in
        "$p.stripped+0x"*) names="$names $(addr2line -f -e "$build/tests/$p" "${frame#*+}" | head -1)" ;;
        *) names="$names <$frame>" ;;
        esac
    done
    check "stripped $p: the folded stack ends in module+offset frames of main and make_block" \
        " main make_block" "$names"
done

# ---------------------------------------------------------------- unloaded library
# A block leaked from a library dlclosed before exit: the exit report and
# the folded file name its function, from the library's file, marked as
# unloaded in the report.
dl_line=$(site_line tests/progs/dl_sites.c dlopen)
env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=0 MEMTRACE_FOLDED="$work/unl.folded" \
    "$build/tests/unload" leak >/dev/null 2>"$work/unl.err"
check "unloaded library: exit code" 0 "$?"
check "unloaded library: the exit report names the frame, unloaded" 1 \
    "$(grep -cE "^  #0 dl_make at (.*/)?tests/progs/dl_sites.c:$dl_line:[0-9]+ \(library unloaded since\)\$" "$work/unl.err")"
check "unloaded library: the folded stack ends in dl_make" 1 \
    "$(grep -cE ';main;dl_make 321$' "$work/unl.folded")"

# ---------------------------------------------------------------- folded failures
# The exit report's "folded stacks:" line names only the files written and
# says why the others were not.
mkdir "$work/fdir"
env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=0 MEMTRACE_FOLDED="$work/fdir" \
    "$corners" proctitle 2>"$work/fdir.err"
check "folded to a directory: exit code" 0 "$?"
check "folded to a directory: the line says so; the .peak file was written" \
    "memtrace: folded stacks: $work/fdir not written (Is a directory), $work/fdir.peak (100 bytes, peak at T)
main;proctitle_case 100" \
    "$(grep '^memtrace: folded' "$work/fdir.err" | sed -E 's/peak at [0-9.]+ s/peak at T/')
$(folded "$work/fdir.peak" | sed 's/^_start;__libc_start_main_impl;__libc_start_call_main;//')"
check "folded to a directory: nothing else about it" 0 "$(grep -c '^memtrace: MEMTRACE_FOLDED' "$work/fdir.err")"
env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=0 MEMTRACE_FOLDED="$work/nodir/x" \
    "$corners" proctitle 2>"$work/nodir.err"
check "folded to a missing directory: neither file claimed" \
    "memtrace: folded stacks: $work/nodir/x not written (No such file or directory), $work/nodir/x.peak not written (No such file or directory)" \
    "$(grep '^memtrace: folded' "$work/nodir.err")"
check "folded through links: neither file claimed" \
    "memtrace: folded stacks: $work/sym.folded not written (a symbolic link; not followed), $work/sym.folded.peak not written (a symbolic link; not followed)" \
    "$(grep '^memtrace: folded' "$work/sym.err")"

# ---------------------------------------------------------------- exec
# A parent that fork+execs 3 traced children, all with one MEMTRACE_OUTPUT
# without %p: reports are appended, never truncated, so the file holds the
# 4 exit reports, and a second run adds its 4.
for run in 1 2; do
    env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=0 MEMTRACE_OUTPUT="$work/exec.out" \
        "$corners" exec 2>"$work/exec.err"
    check "exec run $run: exit code" 0 "$?"
    check "exec run $run: exit reports of 4 processes so far" "$((run * 4)) $((run * 4))" \
        "$(grep -c '^memtrace: end of exit report$' "$work/exec.out") $(grep '^memtrace: exit report, pid' "$work/exec.out" | cut -d, -f2 | sort -u | wc -l)"
done
check "exec: nothing on stderr" "" "$(cat "$work/exec.err")"

# ---------------------------------------------------------------- no reporter
# With MEMTRACE_INTERVAL_MS=0 and no MEMTRACE_SIGNAL the process stays
# single-threaded: unshare(CLONE_NEWUSER) refuses multi-threaded callers.
if unshare -U -r true 2>/dev/null; then
    env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=0 MEMTRACE_OUTPUT="$work/unshare.out" \
        unshare -U -r true 2>"$work/unshare.err"
    check "no reporter: unshare -U -r true exits 0" 0 "$?"
    ex=$(profiler_report "$work/unshare.out" exit)
    total=$(printf '%s\n' "$ex" | head -1 | sed -E 's/.*; ([0-9]+) bytes still live .*/\1/')
    sum=$(printf '%s\n' "$ex" | entries | awk '{s += $1} END {print s + 0}')
    check "no reporter: unshare's exit report, its sites adding up" "1 $total" \
        "$(grep -c '^memtrace: end of exit report$' "$work/unshare.out") $sum"
    check "no reporter: no error" "" "$(cat "$work/unshare.err")"
else
    echo "SKIP no reporter: unshare -U -r true fails here without memtrace"
fi
# The peak profile without the reporter thread: site.c's snapshot.
env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=0 MEMTRACE_FOLDED="$work/peak.folded" \
    "$corners" peak 2>"$work/peak.err"
check "no reporter: exit code" 0 "$?"
check "no reporter: exit peak and leak" "peak 50000 bytes live; 100 bytes still live in 1 blocks at 1 sites" \
    "$(profiler_report "$work/peak.err" exit | head -1 | sed -E 's/.*: (peak [0-9]+ bytes live) at [0-9]+ ms(; .* sites),.*/\1\2/')"
check "no reporter: the peak profile" "main;peak_case;alloc_peak 50000" "$(folded "$work/peak.folded.peak")"
check "no reporter: the folded line names the peak's bytes and time" 1 \
    "$(grep -cE "^memtrace: folded stacks: $work/peak.folded \(at exit\), $work/peak.folded.peak \(50000 bytes, peak at 0\.(1[2-9]|[2-9][0-9])[0-9] s\)\$" "$work/peak.err")"

# ---------------------------------------------------------------- the reporter thread
# memtrace's reporter thread (default settings: periodic reports) must not
# change what the program sees of its own threads.
# unshare(CLONE_NEWUSER), and setns into a mount namespace, refuse a
# multi-threaded process: both calls succeed, and the reports go on after.
if unshare -U -r true 2>/dev/null; then
    env LD_PRELOAD="$plib" "$corners" unshare mnt 2>"$work/ns.err"
    check "reporter: setns and unshare(CLONE_NEWUSER) succeed (default settings)" 0 "$?"
    check "reporter: nothing on stderr but the exit report" "" \
        "$(grep -v '^memtrace: \[\|^  \|^memtrace: exit report\|^memtrace: end of exit report$\|^memtrace: top [0-9]* sites at the peak (\|^memtrace: at the peak \[\|^memtrace: end of top at the peak$' "$work/ns.err")"
    env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=50 "$corners" unshare 2>"$work/ns50.err"
    check "reporter: unshare every 50 ms, exit code" 0 "$?"
    check "reporter: a periodic report after unshare holds the block allocated after it" \
        "777 1 | $src_c:$(site_line "$src_c" after_unshare):" \
        "$(grep -A1 '^memtrace: \[[0-9]*\] 777 bytes live' "$work/ns50.err" | entries |
           sed -E 's/^([0-9]+ [0-9]+) \|.*\|   #0 alloc_after_unshare at ([^:]*:[0-9]+:).*/\1 | \2/' | head -1)"
else
    echo "SKIP reporter: unshare -U -r true fails here without memtrace"
fi
# main ending with pthread_exit: the process ends with its last thread, as
# natively (status 0), and the exit report is made; a reporter that kept it
# alive blocking every signal would be killed by timeout (124 or 137).
timeout -k 2 10 env LD_PRELOAD="$plib" "$corners" pthread_exit 2>"$work/pexit.err"
check "reporter: main ends with pthread_exit, the process with its last thread: exit code" 0 "$?"
check "reporter: after pthread_exit, the exit report holds the last thread's block" "1 1" \
    "$(grep -c '^memtrace: \[[0-9]*\] 555 bytes live in 1 blocks' "$work/pexit.err") $(grep -c '^memtrace: end of exit report$' "$work/pexit.err")"
# The leak check stops the program's threads, not memtrace's own.
env LD_PRELOAD="$plib" MEMTRACE_LEAK_CHECK=1 "$corners" peak 2>"$work/lcr.err"
check "reporter: the leak check's exit code" 0 "$?"
check "reporter: the leak check does not wait for memtrace's thread" \
    "memtrace: leaks: 0 bytes definitely lost in 0 blocks, 0 bytes indirectly lost in 0 blocks, 0 bytes possibly lost in 0 blocks, 100 bytes still reachable in 1 blocks" \
    "$(grep '^memtrace: leaks: ' "$work/lcr.err")"

# ---------------------------------------------------------------- two copies
# A program linked with -lmemtrace run under the preloaded profiler: one
# memtrace owns malloc; the other says nothing (no "malloc here is", no
# warning about the profiler's settings) and gives no second verdict.
env MEMTRACE_LEAK_CHECK=1 MEMTRACE_TOP=3 "$build/memtrace" run --profile \
    "$build/tests/profile_corners_linked" peak 2>"$work/two.err"
check "two copies: exit code" 0 "$?"
check "two copies: the profiler's exit report and one leak verdict, nothing else" \
    "memtrace: exit report, pid P, at T: peak 50000 bytes live at T; 100 bytes still live in 1 blocks at 1 sites, largest last
memtrace: top 1 sites at the peak (50000 bytes live at T), largest last
memtrace: at the peak [1] 50000 bytes live in 5 blocks; at exit 0 bytes in 0 blocks
memtrace: end of top at the peak
memtrace: end of exit report
memtrace: leak check, pid P: 1 live blocks, N root regions, scanned in T
memtrace: leaks: 0 bytes definitely lost in 0 blocks, 0 bytes indirectly lost in 0 blocks, 0 bytes possibly lost in 0 blocks, 100 bytes still reachable in 1 blocks" \
    "$(grep -v '^memtrace: \[\|^  ' "$work/two.err" |
       sed -E 's/pid [0-9]+/pid P/; s/at [0-9]+\.[0-9]+ s/at T/; s/at [0-9]+ ms/at T/; s/[0-9]+ root regions/N root regions/; s/in [0-9.]+ s$/in T/')"

# ---------------------------------------------------------------- address space full
# ulimit -v: the program mallocs 64 KiB blocks until malloc fails, then
# exits 0. memtrace took its internal heap and stacks at start-up: the
# exit report is made (not a SIGSEGV growing the main thread's stack
# inside libdw), with the site at its file:line, and print_trace of the
# first block, in both builds, answers symbolized. Near the end memtrace's
# live table may find no room to grow, and memtrace then says it stopped
# recording (its documented way out; which block meets the limit first
# depends on where the kernel placed the mappings): that line is allowed.
fill=$(site_line "$src_c" fill)
(ulimit -v 200000 && exec env LD_PRELOAD="$plib" "$corners" fill) >"$work/fill.out" 2>"$work/fill.err"
check "address space full: profiler exit code" 0 "$?"
check "address space full: the exit report, its site at file:line, print_trace symbolized" "1 1 1" \
    "$(grep -c '^memtrace: end of exit report$' "$work/fill.err") $(profiler_report "$work/fill.err" exit | grep -c "^  #0 fill_case at $src_c:$fill:") $(grep -A1 '^memtrace: 0x[0-9a-f]*: start of a 65536-byte block' "$work/fill.err" | grep -c "^  #0 fill_case at $src_c:$fill:")"
check "address space full: nothing said but the reduced heap" \
    "memtrace: the address-space limit (ulimit -v) is 195 MiB: memtrace's internal heap reserves 48 MiB instead of 4096 MiB" \
    "$(grep '^memtrace: ' "$work/fill.err" | grep -v '^memtrace: \[\|^memtrace: exit report\|^memtrace: end of exit report$\|^memtrace: 0x' |
       grep -v '^memtrace: stopped recording at allocation #[0-9]*: could not map [0-9]* bytes for the live table (Cannot allocate memory); the program runs on untraced$')"
(ulimit -v 200000 && exec env LD_PRELOAD="$tlib" MEMTRACE_LEAK_CHECK=1 "$corners" fill) \
    >"$work/tfill.out" 2>"$work/tfill.err"
check "address space full: tracer exit code" 0 "$?"
check "address space full: tracer's print_trace symbolized" 1 \
    "$(grep -A1 '^memtrace: 0x[0-9a-f]*: start of a 65536-byte block' "$work/tfill.err" | grep -c "^  #0 fill_case at $src_c:$fill:")"
# A tighter limit: memtrace's internal heap (a quarter of it) runs out while
# libdw reads the line tables. libdw's default handler would end the
# process ("libdw: Cannot allocate memory", status 1); the symbolizer gives
# module+offset from then on, said in one line at most.
(ulimit -v 60000 && exec env LD_PRELOAD="$tlib" "$corners" fill) >"$work/tfill2.out" 2>"$work/tfill2.err"
check "internal heap exhausted: tracer exit code" 0 "$?"
check "internal heap exhausted: print_trace answers, the program's frame symbolized; at most one line about libdw" \
    "1 0 yes" "$(grep -A1 '^memtrace: 0x[0-9a-f]*: start of a 65536-byte block' "$work/tfill2.err" | grep -c "^  #0 fill_case at $src_c:$fill:") $(grep -c 'Cannot allocate memory' "$work/tfill2.err") $([ "$(grep -c '^memtrace: libdw ran out of memory' "$work/tfill2.err")" -le 1 ] && echo yes)"
(ulimit -v 60000 && exec env LD_PRELOAD="$plib" "$corners" fill) >"$work/fill2.out" 2>"$work/fill2.err"
check "internal heap exhausted: profiler exit code" 0 "$?"
check "internal heap exhausted: the exit report lists the site, no frame a bare address" "1 1 0" \
    "$(profiler_report "$work/fill2.err" exit | grep -c '^memtrace: \[1\] [0-9]* bytes live in [0-9]* blocks') $(grep -c '^memtrace: end of exit report$' "$work/fill2.err") $(profiler_report "$work/fill2.err" exit | grep -cE '^  #[0-9]+ 0x[0-9a-f]+$')"

# ---------------------------------------------------------------- scale
# 2^20 distinct stacks (a binary counter of 20 recursive calls, then 20
# more frames), each holding 8 bytes at exit: the exit report lists the
# MEMTRACE_EXIT_TOP (1000) largest, symbolized, and one line for the rest;
# the folded files hold every stack, symbolized; all well within 60 s.
t0=$(date +%s%N)
timeout 120 env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=0 MEMTRACE_OUTPUT="$work/scale.out" \
    MEMTRACE_FOLDED="$work/scale.folded" "$corners" scale 20 20 2>"$work/scale.err"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
check "1,048,576 stacks: exit code" 0 "$rc"
if [ "$ms" -le 60000 ]; then pass "1,048,576 stacks: $ms ms"; else fail "1,048,576 stacks: time" "$ms ms"; fi
check "1,048,576 stacks: exit report header" \
    "peak 8388608 bytes live; 8388608 bytes still live in 1048576 blocks at 1048576 sites" \
    "$(profiler_report "$work/scale.out" exit | head -1 | sed -E 's/.*: (peak [0-9]+ bytes live) at [0-9]+ ms(; .* sites),.*/\1\2/')"
check "1,048,576 stacks: one line for the sites not listed" \
    "memtrace: 1047576 more sites not shown, 8380608 bytes in 1047576 blocks (MEMTRACE_EXIT_TOP=1000)" \
    "$(grep 'more sites not shown' "$work/scale.out")"
check "1,048,576 stacks: 1000 entries, all symbolized" "1000 1000" \
    "$(grep -c '^memtrace: \[' "$work/scale.out") $(grep -c "^  #0 pad at $src_c:" "$work/scale.out")"
for f in scale.folded scale.folded.peak; do
    check "1,048,576 stacks: $f holds every stack, symbolized" 1048576 \
        "$(grep -c ';main;scale_case;grow;grow;.*;grow;pad;pad;.*;pad 8$' "$work/$f")"
done
rm -f "$work"/scale.*

# ---------------------------------------------------------------- settings
err=$work/bad.err
env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=banana MEMTRACE_TOP=-3 MEMTRACE_SIGNAL=NOPE \
    "$prog" demand 2>"$err"
check "bad settings: program runs on" 0 "$?"
check "bad MEMTRACE_INTERVAL_MS: one warning with the default" 1 \
    "$(grep -c '^memtrace: MEMTRACE_INTERVAL_MS="banana" is not a whole number .*; using 1000$' "$err")"
check "bad MEMTRACE_TOP: one warning with the default" 1 \
    "$(grep -c '^memtrace: MEMTRACE_TOP="-3" is not a whole number .*; using 10$' "$err")"
check "bad MEMTRACE_SIGNAL: one warning" 1 \
    "$(grep -c '^memtrace: MEMTRACE_SIGNAL="NOPE" is not a signal' "$err")"
check "bad settings: reports still made" 3 "$(grep -c '^memtrace: report [0-9]* (on request)' "$err")"

# ---------------------------------------------------------------- tracer build
err=$work/tracer.err
env LD_PRELOAD="$tlib" MEMTRACE_INTERVAL_MS=1 "$prog" demand 2>"$err"
check "tracer build: exit code" 0 "$?"
check "tracer build: no report, one line per memtrace_report call" \
    "3 0" "$(grep -c 'reports are made by the profiler build' "$err") $(grep -c -e '^memtrace: report' -e '^memtrace: exit report' "$err")"

finish profiler
