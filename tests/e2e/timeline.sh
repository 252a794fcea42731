#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The recording (MEMTRACE_RECORD) and its exports (memtrace export): a
# program with known phases (tests/progs/timeline_phases.c), which logs
# its own live bytes and blocks at every change, under both libraries:
# the JSON's series equal the program's counts at every sample time away
# from a change, the peak is the profiler's exit report's, the temporary
# allocations, leaks and allocation counts are exact, and so are the
# sites' (by file:line); with MEMTRACE_RECORD_CULL_MS the temporaries are
# counted, not recorded, and the file shrinks; heaptrack_print, the
# oracle, reads the heaptrack export (.gz and .zst) with the same peak,
# leak and allocation totals; a run killed with SIGKILL reads as
# truncated; python3 records over a million events and exports; the
# launcher's --record and its closing line; bad settings. Prints one
# PASS/FAIL line per check and "timeline: N passed, N failed" last.
set -u
. "$(dirname "$0")/lib.sh"
ulimit -c 0
prof=$build/libmemtrace-profiler.so
tracer=$build/libmemtrace.so
export_=$build/memtrace-export
prog=$tests/timeline_phases
P=tests/progs/timeline_phases.c
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_RECORD MEMTRACE_RECORD_CULL_MS

if ! command -v heaptrack_print >/dev/null; then
    fail "heaptrack_print" "heaptrack is not installed (make deps)"
    finish timeline
    exit 1
fi

# json_check NAME JSON LOG [EXIT-PEAK]: the JSON against the program's log
# (see the program) and the numbers its phases make; prints one line per
# problem, nothing when all hold.
json_check() {
    python3 - "$2" "$3" "$root/$P" "${4-}" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
log = [tuple(map(int, l.split())) for l in open(sys.argv[2])]
src = open(sys.argv[3]).read().split("\n")
exit_peak = sys.argv[4]
line = {m: i + 1 for i, l in enumerate(src) for m in re.findall(r"SITE:(\w+)", l)}
bad = []
# The program's state at time T (its own clock, from main): the last
# logged change at or before T. The recording's clock starts before main
# (its constructor), by DELTA: the peak's event, the last block of the
# peak phase, lies between the program's notes before and after that
# loop, which bounds DELTA to [DMIN, DMAX]. A sample at recording time t
# is program time t - DELTA; samples whose window [t - DMAX, t - DMIN]
# meets a loop (between the notes around it) are skipped, every other one
# must be exact.
def state(t):
    s = (0, 0)
    for ns, b, k in log:
        if ns <= t:
            s = (b, k)
    return s
after = next(i for i, (ns, b, k) in enumerate(log) if b == 3000000)
dmin, dmax = d["peak"]["time_ns"] - log[after][0], d["peak"]["time_ns"] - log[after - 1][0]
checked = 0
for i, t in enumerate(d["times_ns"]):
    hi = state(t - dmin)
    # the program logs around each loop: notes 2k and 2k + 1 bound one
    if any(log[k][0] <= t - dmin and t - dmax <= log[k + 1][0] for k in range(0, len(log) - 1, 2)):
        continue
    got = (d["total"]["bytes"][i], d["total"]["blocks"][i])
    checked += 1
    if got != hi:
        bad.append("at %d ns: bytes, blocks %s, the program's %s" % (t, got, hi))
if checked < 100:
    bad.append("only %d samples away from a change" % checked)
if d["times_ns"] != sorted(d["times_ns"]) or len(d["times_ns"]) > 2000:
    bad.append("times_ns not ascending or over 2000")
if sum(d["total"]["allocations"]) != d["totals"]["allocations"]:
    bad.append("allocations series sums to %d" % sum(d["total"]["allocations"]))
# temporary: the 5,000 temp pairs, and the first peak block, freed right
# after the peak's last allocation of its size and site (heaptrack's rule,
# src/store/temporary.h; heaptrack itself says 5,002 with its kind-0 quirk).
want = {"allocations": 6500, "frees": 6400, "allocated_bytes": 3320000,
        "leaked_bytes": 100000, "leaked_blocks": 100, "temporary": 5001}
for k, v in want.items():
    if d["totals"][k] != v:
        bad.append("totals.%s %d, not %d" % (k, d["totals"][k], v))
if d["peak"]["bytes"] != 3000000 or d["peak"]["blocks"] != 1500:
    bad.append("peak %s" % d["peak"])
if exit_peak and d["peak"]["bytes"] != int(exit_peak):
    bad.append("peak %d, the exit report's %s" % (d["peak"]["bytes"], exit_peak))
if d["truncated"]:
    bad.append("truncated")
def site(name):
    for s in d["sites"]:
        f = s["frames"][0] if s["frames"] else {}
        if (f.get("file") or "").endswith("timeline_phases.c") and f.get("line") == line[name]:
            return s
    bad.append("no site at timeline_phases.c:%d (%s)" % (line[name], name))
    return None
for name, k, v in [("hold", "leaked_bytes", 100000), ("hold", "leaked_blocks", 100),
                   ("hold", "allocations", 1000), ("peak", "peak_bytes", 2000000),
                   ("hold", "peak_bytes", 1000000), ("temp", "temporary", 5000), ("peak", "temporary", 1),
                   ("temp", "allocated_bytes", 320000)]:
    s = site(name)
    if s and s[k] != v:
        bad.append("site %s: %s %d, not %d" % (name, k, s[k], v))
s = site("peak")
if s and (d["sites"][0] is not s or max(s.get("bytes", [0])) != 2000000):
    bad.append("the peak site is not first with its series")
print("\n".join(bad))
PY
}

# run_phases NAME LIB [ENV...]: the program under LIB recording to
# $work/NAME.rec, its stderr in $work/NAME.err, its log in $work/NAME.log.
run_phases() {
    local name=$1 lib=$2
    shift 2
    [ "$lib" = "$prof" ] && set -- MEMTRACE_INTERVAL_MS=0 "$@"
    env "$@" MEMTRACE_RECORD="$work/$name.rec" LD_PRELOAD="$lib" "$prog" "$work/$name.log" \
        >/dev/null 2>"$work/$name.err"
    RC=$?
}

for build_ in profiler tracer; do
    lib=$prof
    [ $build_ = tracer ] && lib=$tracer
    run_phases $build_ "$lib"
    status "$build_: the program's status" 0
    check "$build_: the closing line" \
        "memtrace: recording: $work/$build_.rec (12900 events); view it with: memtrace view $work/$build_.rec" \
        "$(grep '^memtrace: recording:' "$work/$build_.err")"
    "$export_" --json "$work/$build_.rec" -o "$work/$build_.json" 2>"$work/$build_.export"
    check "$build_: export --json's status" 0 $?
    peak=
    [ $build_ = profiler ] &&
        peak=$(sed -n 's/^memtrace: exit report, .*: peak \([0-9]*\) bytes live.*/\1/p' "$work/$build_.err")
    [ $build_ = profiler ] && [ -z "$peak" ] && fail "$build_: the exit report's peak" "none in $work/$build_.err"
    out=$(json_check $build_ "$work/$build_.json" "$work/$build_.log" "$peak")
    check "$build_: the JSON's series, peak, totals and sites are the program's" "" "$out"
done

# Culling: the temporaries become a count on their site.
run_phases cull "$prof" MEMTRACE_RECORD_CULL_MS=50
"$export_" --json "$work/cull.rec" -o "$work/cull.json" 2>/dev/null
check "cull: the JSON is the program's (temporary 5001)" "" "$(json_check cull "$work/cull.json" "$work/cull.log")"
check "cull: 10000 events fewer" "memtrace: recording: $work/cull.rec (12900 events); view it with: memtrace view $work/cull.rec" \
    "$(grep '^memtrace: recording:' "$work/cull.err")"
full=$(stat -c %s "$work/profiler.rec")
culled=$(stat -c %s "$work/cull.rec")
if [ "$culled" -lt $((full * 2 / 3)) ]; then pass "cull: the file shrinks ($full -> $culled bytes)"
else fail "cull: the file shrinks" "$full -> $culled bytes"; fi

# heaptrack_print, the oracle, on the heaptrack export.
fmt() { # heaptrack_print's sizes: base 1000, two decimals, the unit's letter
    python3 -c 'import sys
b = float(sys.argv[1]); u = "BKMGT"; i = 0
while i < 4 and abs(b) > 1000: b /= 1000; i += 1
print("%dB" % int(sys.argv[1]) if i == 0 else "%.2f%s" % (b, u[i]))' "$1"
}
for rec in profiler cull; do
    for ext in gz zst; do
        out=$work/$rec.heaptrack.$ext
        "$export_" --heaptrack "$work/$rec.rec" -o "$out" 2>"$work/ht.err"
        check "heaptrack ($rec, .$ext): export's line" \
            "memtrace export: $out (open it with: heaptrack_gui $out)" "$(cat "$work/ht.err")"
        heaptrack_print "$out" >"$work/ht.txt" 2>&1
        check "heaptrack ($rec, .$ext): heaptrack_print's calls" "calls to allocation functions: 6500" \
            "$(grep -o '^calls to allocation functions: [0-9]*' "$work/ht.txt")"
        check "heaptrack ($rec, .$ext): heaptrack_print's peak" \
            "peak heap memory consumption: $(fmt 3000000)" "$(grep '^peak heap memory' "$work/ht.txt")"
        check "heaptrack ($rec, .$ext): heaptrack_print's leaked" \
            "total memory leaked: $(fmt 100000)" "$(grep '^total memory leaked' "$work/ht.txt")"
    done
done
"$export_" --heaptrack "$work/profiler.rec" -o "$work/x.heaptrack" 2>"$work/ht.err"
check "heaptrack: a name heaptrack cannot read refused" \
    "1 memtrace-export: $work/x.heaptrack: a heaptrack file's name ends in .gz or .zst (heaptrack picks its decompressor by it)" \
    "$? $(cat "$work/ht.err")"

# A run killed mid-way: a readable prefix, said to be one.
MEMTRACE_INTERVAL_MS=0 MEMTRACE_RECORD="$work/killed.rec" LD_PRELOAD=$prof "$prog" "$work/killed.log" forever \
    >/dev/null 2>&1 &
pid=$!
sleep 2.5
{ kill -KILL $pid; wait $pid; } 2>/dev/null
"$export_" --json "$work/killed.rec" -o "$work/killed.json" 2>"$work/killed.err"
check "killed: export's status" 0 $?
has "killed: said truncated" "$work/killed.err" "memtrace export: $work/killed.rec is truncated ("
check "killed: the JSON says truncated, with the phases in it" "True True" \
    "$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
print(d["truncated"], d["totals"]["allocations"] >= 6500 and d["totals"]["leaked_bytes"] >= 100000)' "$work/killed.json")"
# (no symbols in the file: the export names the frames from the modules)
check "killed: frames symbolized afterwards, with module and address" "True $prog True" \
    "$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); f = d["sites"][0]["frames"][0]
print(f["function"] in ("hold_block", "peak_block", "temp_block"), f["module"], f["address"].startswith("0x"))' "$work/killed.json")"
head -c 20 "$work/killed.rec" >"$work/cut.rec"
"$export_" --json "$work/cut.rec" -o "$work/cut.json" 2>"$work/cut.err"
check "cut in the first block: read as empty, truncated" \
    "0 memtrace export: $work/cut.rec is truncated (a block is cut): the run up to 0.000 s" \
    "$? $(cat "$work/cut.err")"
echo garbage >"$work/garbage.rec"
"$export_" --json "$work/garbage.rec" 2>"$work/garbage.err"
check "not a recording: one line, status 1" \
    "1 memtrace-export: $work/garbage.rec: not a memtrace recording (MEMTRACE_RECORD)" "$? $(cat "$work/garbage.err")"

# A full disk (the file size limit, SIGXFSZ ignored: writes fail with
# EFBIG): one line, the program runs on, the file is a readable prefix.
(trap '' XFSZ; ulimit -f 1024
 PYTHONMALLOC=malloc MEMTRACE_RECORD=$work/full.rec LD_PRELOAD=$tracer "$(python3 -c 'import sys; print(sys.executable)')" \
     -c 'd = {str(i): [i] for i in range(600000)}; print("done")' >"$work/full.out" 2>"$work/full.err")
check "full disk: the program's status and output" "0 done" "$? $(cat "$work/full.out")"
has "full disk: said once" "$work/full.err" "memtrace: MEMTRACE_RECORD: a write failed (File too large); recording stopped, the file holds what came before"
has "full disk: the end says so" "$work/full.err" "memtrace: recording: $work/full.rec is cut short (a write failed)"
"$export_" --json "$work/full.rec" -o "$work/full.json" 2>"$work/full.export"
has "full disk: export says truncated" "$work/full.export" "memtrace export: $work/full.rec is truncated ("
check "full disk: the prefix has events" "True" \
    "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["totals"]["allocations"] > 1000)' "$work/full.json")"

# Bad settings: one line, the program runs as it would.
MEMTRACE_RECORD=$work/no/such/dir/x.rec LD_PRELOAD=$tracer "$prog" "$work/bad.log" 2>"$work/bad.err" >/dev/null
check "unwritable MEMTRACE_RECORD: status and one line" \
    "0 memtrace: MEMTRACE_RECORD: $work/no/such/dir/x.rec not written (No such file or directory); no recording" \
    "$? $(cat "$work/bad.err")"
MEMTRACE_RECORD=$work/badcull.rec MEMTRACE_RECORD_CULL_MS=soon LD_PRELOAD=$tracer "$prog" "$work/bad.log" \
    2>"$work/bad.err" >/dev/null
has "bad MEMTRACE_RECORD_CULL_MS: said" "$work/bad.err" "MEMTRACE_RECORD_CULL_MS"
has "bad MEMTRACE_RECORD_CULL_MS: records anyway" "$work/bad.err" "memtrace: recording: $work/badcull.rec ("

# The launcher: run --record[=PATH] and export.
(cd "$work" && "$build/memtrace" run --record "$prog" "$work/l.log" >/dev/null 2>"$work/l.err")
# (named by its full path: a relative one is the start-up directory's)
lpid=$(sed -n "s|^memtrace: recording: $(cd "$work" && pwd -P)/memtrace\.timeline_phases\.\([0-9]*\)\.rec .*|\1|p" \
    "$work/l.err")
if [ -n "$lpid" ] && [ -s "$work/memtrace.timeline_phases.$lpid.rec" ]; then
    pass "launcher: --record writes memtrace.PROG.PID.rec"
else fail "launcher: --record writes memtrace.PROG.PID.rec" "$(cat "$work/l.err")"; fi
"$build/memtrace" run --record="$work/l2.rec" "$prog" "$work/l2.log" >/dev/null 2>"$work/l2.err"
has "launcher: --record=PATH's closing line" "$work/l2.err" \
    "memtrace: recording: $work/l2.rec (12900 events); view it with: memtrace view $work/l2.rec"
"$build/memtrace" export --json "$work/l2.rec" 2>/dev/null
check "launcher: export --json writes REC.json" "" "$(json_check l2 "$work/l2.rec.json" "$work/l2.log")"

# unshare(CLONE_NEWUSER) wants a single thread: the writer ends around it.
if unshare -U -r true 2>/dev/null; then
    MEMTRACE_RECORD=$work/us.rec LD_PRELOAD=$tracer unshare -U -r true 2>"$work/us.err"
    check "unshare -U -r true records and exits 0" 0 "$?"
    lacks "unshare: no failure" "$work/us.err" "unshare failed"
else
    echo "SKIP unshare: this machine refuses unshare -U (no user namespaces)"
fi

# A forked child records nothing; a program it execs, its own file.
py=$(python3 -c 'import sys; print(sys.executable)')
MEMTRACE_RECORD=$work/fork.rec LD_PRELOAD=$tracer "$py" -c '
import os, subprocess
pid = os.fork()
if pid == 0:
    x = [str(i) for i in range(1000)]
    os._exit(0)
os.waitpid(pid, 0)
subprocess.run(["true"])' 2>"$work/fork.err"
check "fork: the parent's file and the exec'd child's, no forked child's" "2 2" \
    "$(ls "$work" | grep -c '^fork\.rec') $(grep -c '^memtrace: recording:' "$work/fork.err")"

# Recording off from the start (MEMTRACE_START=0): nothing recorded.
MEMTRACE_START=0 MEMTRACE_RECORD=$work/off.rec LD_PRELOAD=$tracer "$prog" "$work/off.log" 2>"$work/off.err" >/dev/null
check "MEMTRACE_START=0: no event" \
    "memtrace: recording: $work/off.rec (0 events); view it with: memtrace view $work/off.rec" "$(cat "$work/off.err")"

# An exec by the recording process: what it recorded is written first.
MEMTRACE_RECORD=$work/exec.rec LD_PRELOAD=$tracer bash -c 'x=$(echo a b c); exec true' 2>/dev/null
"$export_" --json "$work/exec.rec" -o "$work/exec.json" 2>"$work/exec.err"
check "exec: the recording up to the exec, truncated" "True True" \
    "$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
print(d["truncated"], d["totals"]["allocations"] > 100)' "$work/exec.json")"

# 300 threads, each ring freed once its thread has exited and it is
# drained: every event in the JSON, each free matching its allocation.
PYTHONMALLOC=malloc MEMTRACE_RECORD=$work/thr.rec LD_PRELOAD=$tracer "$py" -c '
import threading
def work():
    x = [str(i) for i in range(2000)]
ts = [threading.Thread(target=work) for _ in range(300)]
[t.start() for t in ts]; [t.join() for t in ts]' 2>"$work/thr.err"
"$export_" --json "$work/thr.rec" -o "$work/thr.json" 2>/dev/null
events=$(sed -n 's/^memtrace: recording: .* (\([0-9]*\) events).*/\1/p' "$work/thr.err")
check "threads: the JSON's allocations and frees are the recorded events" "$events" \
    "$(python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))["totals"]
print(t["allocations"] + t["frees"])' "$work/thr.json")"

# A real program: python3, over a million events, exported both ways
# (PYTHONMALLOC=malloc: every object from malloc, not pymalloc's arenas).
PYTHONMALLOC=malloc MEMTRACE_RECORD=$work/py.rec LD_PRELOAD=$tracer "$py" -c '
d = {}
for i in range(100000):
    d[str(i)] = [i, str(i * 2)]
' 2>"$work/py.err"
events=$(sed -n 's/^memtrace: recording: .* (\([0-9]*\) events).*/\1/p' "$work/py.err")
if [ "${events:-0}" -gt 1000000 ]; then pass "python3: $events events recorded"
else fail "python3: over a million events" "$(cat "$work/py.err")"; fi
start=$(date +%s%N)
"$export_" --json "$work/py.rec" -o "$work/py.json" 2>/dev/null
check "python3: export --json's status" 0 $?
"$export_" --heaptrack "$work/py.rec" -o "$work/py.gz" 2>/dev/null
check "python3: export --heaptrack's status" 0 $?
echo "python3: both exports of $events events in $((($(date +%s%N) - start) / 1000000)) ms"
allocs=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["totals"]["allocations"])' "$work/py.json")
check "python3: heaptrack_print counts the JSON's allocations" "calls to allocation functions: $allocs" \
    "$(heaptrack_print "$work/py.gz" 2>/dev/null | grep -o '^calls to allocation functions: [0-9]*')"

finish timeline
