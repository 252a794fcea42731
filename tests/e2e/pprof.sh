#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# pprof profiles (MEMTRACE_PPROF, `memtrace pprof`), read back with their
# oracle, `go tool pprof -raw`: the sample types, exact objects and bytes per
# stack (allocated and in use), the sites' file:line and inlined functions,
# the peak and per-report profiles, %n numbering, a forked child's own file,
# -diff_base between two profiles, the tracer build's exit profile, the gdb
# command on a stopped process and on a gcore file (its total is `memtrace
# stats`'), and bad settings. Prints one PASS/FAIL line per check and
# "pprof: N passed, N failed" last; exits 1 on failure.
set -u
. "$(dirname "$0")/lib.sh"
ulimit -c 0
prof=$build/libmemtrace-profiler.so
tracer=$build/libmemtrace.so
helper=$root/gdb/memtrace.py
P=tests/progs/pprof_sites.c
prog=$tests/pprof_sites
# go tool pprof keeps its cache and fetched profiles under HOME and
# PPROF_TMPDIR: both in the scratch directory, nothing written outside it.
export HOME=$work/home PPROF_TMPDIR=$work/pprof-tmp
mkdir -p "$HOME" "$PPROF_TMPDIR"
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_PPROF_EVERY

if ! command -v go >/dev/null; then
    fail "go tool pprof" "go is not installed (golang-go, make deps)"
    finish pprof
    exit 1
fi

# samples FILE: the profile's samples as go tool pprof -raw reads them, one
# line each: "VALUES [thread=LABEL] | LOCATION ; LOCATION ...", innermost
# first, a Location written as its Lines "FUNCTION FILE:LINE" joined by
# " / " (innermost first: the inlined function, then its caller).
samples() {
    go tool pprof -raw "$@" 2>"$work/pprof.err" | python3 -c '
import os, re, sys
lines = sys.stdin.read().split("\n")
locs, samples, section, cur = {}, [], None, None
for l in lines:
    if l in ("Samples:", "Locations", "Mappings"):
        section = l; continue
    if section == "Samples:":
        m = re.match(r"^\s*([-\d ]+):((?: \d+)*) ?$", l)
        if m:
            cur = [m.group(1).split(), m.group(2).split(), []]
            samples.append(cur)
        elif cur and "thread:[" in l:
            cur[2].append(l.strip())
    elif section == "Locations":
        m = re.match(r"^\s+(\d+): 0x[0-9a-f]+ (?:M=\d+ )?(.+) (\S*) s=\d+(?:\(\S*\))?$", l)
        if m:
            cur_loc = m.group(1); locs[cur_loc] = ["%s %s" % (m.group(2), m.group(3))]
            continue
        m = re.match(r"^\s+(.+) (\S*) s=\d+(?:\(\S*\))?$", l)
        if m:
            locs[cur_loc].append("%s %s" % (m.group(1), m.group(2)))
if os.environ.get("MT_MERGE_STACKS"):
    merged = {}
    for vals, ids, labels in samples:
        key = " ".join(ids)
        if key in merged:
            merged[key][0] = [str(int(a) + int(b)) for a, b in zip(merged[key][0], vals)]
        else:
            merged[key] = [vals, ids, []]
    samples = list(merged.values())
for vals, ids, labels in samples:
    frames = " ; ".join(" / ".join(locs.get(i, ["?"])) for i in ids)
    print(" ".join(vals) + "".join(" " + x for x in labels) + " | " + frames)
'
}
# site_samples FILE: the same with each stack's samples summed into one,
# unlabelled: the profiler's per-site values (its allocation counts and the
# in-use values it labels by tag scope and thread are samples apart;
# tests/e2e/perf_profile_labels.sh checks the labels).
site_samples() { MT_MERGE_STACKS=1 samples "$@"; }

# site NAME: "FUNCTION FILE:LINE" of the frame at the marker (FILE relative,
# as the test program is compiled).
site() { echo "$1 $P:$(site_line $P "$2")"; }
keep_loc="$(site inlined_alloc inlined) / $(site alloc_keep keep)"
freed_loc=$(site alloc_freed freed)
thread_loc=$(site alloc_thread thread)
peak_loc=$(site alloc_peak peak)
child_loc=$(site alloc_child child)

# check_sample NAME TEXT PREFIX: a sample line of TEXT starts with PREFIX.
check_sample() {
    if printf '%s\n' "$2" | grep -qF -- "$3" && printf '%s\n' "$2" | awk -v p="$3" 'index($0, p) == 1 { f = 1 } END { exit !f }'; then
        pass "$1"
    else
        fail "$1" "no sample '$3' in:
$2
$(cat "$work/pprof.err")"
    fi
}
check_no_sample() {
    if printf '%s\n' "$2" | grep -qF -- "$3"; then
        fail "$1" "a sample with '$3' in:
$2"
    else
        pass "$1"
    fi
}
check_eq() { if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "'$2', expected '$3'"; fi; }

# ---------------------------------------------------------------- profiler
run=$work/run
mkdir -p "$run"
MEMTRACE_INTERVAL_MS=0 MEMTRACE_PPROF="$run/p.pb.gz" LD_PRELOAD=$prof "$prog" \
    >"$work/p.out" 2>&1
rc=$?
check_eq "profiler: the program's exit status" "$rc" 0
check_eq "profiler: files at exit and at the peak, nothing else" \
    "$(cd "$run" && ls | tr '\n' ' ')" "p.pb.gz p.pb.gz.peak "
check_eq "profiler: the exit report names them" \
    "$(grep '^memtrace: pprof profile' "$work/p.out")" \
    "memtrace: pprof profile: $run/p.pb.gz (at exit)
memtrace: pprof profile: $run/p.pb.gz.peak (at the peak)"
types=$(go tool pprof -raw "$run/p.pb.gz" 2>&1 | sed -n '/^Samples:/{n;p;q}')
check_eq "profiler: Go's four sample types, inuse_space by default" "$types" \
    "alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes[dflt]"
s=$(site_samples "$run/p.pb.gz")
check_sample "exit: kept site through an inlined function: 7 objects, 336 bytes, all in use" \
    "$s" "7 336 7 336 | $keep_loc ; $(site keep_some keep_call)"
check_sample "exit: freed site: 5 objects, 320 bytes allocated, 0 in use" "$s" \
    "5 320 0 0 | $freed_loc ; $(site sites freed_call)"
check_sample "exit: thread site: 3 objects, 600 bytes in use" "$s" \
    "3 600 3 600 | $thread_loc ; $(site worker thread_call)"
check_sample "exit: peak site: 1 object of 100000 bytes allocated, freed" "$s" \
    "1 100000 0 0 | $peak_loc ; $(site sites peak_call)"
check_no_sample "exit: no thread label on the profiler's per-site samples" "$s" "thread="
# The peak profile: each site's live blocks and bytes at the moment of the
# peak (the exact snapshot the folded .peak file writes), in use only.
check_eq "peak: the in-use sample types" \
    "$(go tool pprof -raw "$run/p.pb.gz.peak" 2>&1 | sed -n '/^Samples:/{n;p;q}')" \
    "inuse_objects/count inuse_space/bytes[dflt]"
s=$(samples "$run/p.pb.gz.peak")
check_sample "peak: the peak site in use at the peak" "$s" "1 100000 | $peak_loc"
check_sample "peak: the kept site" "$s" "7 336 | $keep_loc"
check_sample "peak: the thread site" "$s" "3 600 | $thread_loc"
check_no_sample "peak: the freed site, freed before the peak" "$s" "$freed_loc"
total=$(go tool pprof -raw "$run/p.pb.gz" 2>/dev/null | grep -c '^Mappings')
check_eq "profiler: the profile has mappings" "$total" 1
maps=$(go tool pprof -raw "$run/p.pb.gz" 2>/dev/null | sed -n '/^Mappings/,$p')
build_id=$(readelf -n "$prog" | awk '/Build ID/ { print $3 }')
if printf '%s\n' "$maps" | grep -qE "^[0-9]+: 0x[0-9a-f]+/0x[0-9a-f]+/0x0 $prog $build_id \[FN\]\[FL\]\[LN\]\[IN\]$"; then
    pass "mapping: the program's file name, range and build-id"
else
    fail "mapping: the program's file name, range and build-id" "no $prog $build_id in $maps"
fi
if printf '%s\n' "$maps" | grep -qE " /[^ ]*libc\.so\.6 [0-9a-f]{40} "; then
    pass "mapping: libc with its build-id"
else
    fail "mapping: libc with its build-id" "$maps"
fi

# ---------------------------------------------------------------- = exit report
# The oracle for the frames is memtrace's own text: every site of the exit
# report, as "BYTES BLOCKS | FUNCTION FILE:LINE ; ..." (its frame and
# "inlined into" lines, the rebuilt tail-call frames among them, innermost
# first), must be a sample of the exit profile with the same lines in the
# same order; rows without a file (from the symbol table) are left out.
report_sites() {
    sed -n '/^memtrace: exit report/,$p' "$1" |
    awk '/^memtrace: \[[0-9]+\] / { if (cur != "") print cur; cur = $3 " " $7 " |"; sep = " "; next }
         /^memtrace: / { if (cur != "") print cur; cur = ""; next }
         cur != "" {
             line = $0; sub(/ \(tail call\)$/, "", line); sub(/ \(library unloaded since\)$/, "", line)
             if (line !~ / at [^ ]+:[0-9]+(:[0-9]+)?$/) next
             sub(/^  #[0-9]+ /, "", line); sub(/^     inlined into /, "", line)
             n = split(line, w, " at "); loc = w[n]; if (loc ~ /:[0-9]+:[0-9]+$/) sub(/:[0-9]+$/, "", loc)
             fn = substr(line, 1, length(line) - length(w[n]) - 4)
             cur = cur sep fn " " loc; sep = " ; " }
         END { if (cur != "") print cur }' | sort
}
profile_sites() {
    site_samples "$1" | awk -F ' [|] ' '{ split($1, v, " "); if (v[4] == 0) next
        n = split($2, f, / ; | \/ /); out = v[4] " " v[3] " |"; sep = " "
        for (i = 1; i <= n; i++) if (f[i] !~ / :0$/) { out = out sep f[i]; sep = " ; " }
        print out }' | sort
}
check_same_sites() { # NAME PROGRAM ARGS...
    local name=$1
    shift
    MEMTRACE_INTERVAL_MS=0 MEMTRACE_PPROF="$work/same.pb.gz" LD_PRELOAD=$prof "$@" \
        >"$work/same.out" 2>&1
    local want got
    want=$(report_sites "$work/same.out")
    got=$(profile_sites "$work/same.pb.gz")
    if [ -n "$want" ] && [ "$want" = "$got" ]; then
        pass "$name: every site's frames as the exit report has them ($(wc -l <<<"$want") sites)"
    else
        fail "$name: the exit report's sites" "$(diff <(echo "$want") <(echo "$got"))"
    fi
}
check_same_sites "pprof_sites" "$prog"
check_same_sites "tail calls (C, -O2)" "$tests/tail_calls" leak
check_same_sites "tail calls (C++, -O2)" "$tests/tail_calls_cxx" leak
check_same_sites "C++ names" "$tests/profile_cxx"
s=$(site_samples "$work/same.pb.gz")
lambda=$(site_line tests/progs/profile_cxx.cpp lambda)
check_sample "C++: demangled function names" "$s" \
    "1 4242 1 4242 | main::{lambda()#1}::operator()() const tests/progs/profile_cxx.cpp:$lambda"
if go tool pprof -raw "$work/same.pb.gz" 2>&1 |
   grep -qxE " +[0-9]+: 0x[0-9a-f]+ M=[0-9]+ main::\{lambda\(\)#1\}::operator\(\)\(\) const tests/progs/profile_cxx.cpp:$lambda s=0\(_ZZ4mainENKUlvE_clEv\)"; then
    pass "C++: the mangled name as the function's system name"
else
    fail "C++: the mangled name as the function's system name" \
        "$(go tool pprof -raw "$work/same.pb.gz" 2>&1 | grep lambda)"
fi

# ---------------------------------------------------------------- %n, reports
run=$work/numbered
mkdir -p "$run"
MEMTRACE_INTERVAL_MS=0 MEMTRACE_PPROF="$run/n.%n.pb.gz" MEMTRACE_PPROF_EVERY=report \
    LD_PRELOAD=$prof "$prog" >"$work/n.out" 2>&1
check_eq "%n: report 1, report 2, exit, peak numbered 0 to 3" \
    "$(grep '^memtrace: pprof profile' "$work/n.out")" \
    "memtrace: pprof profile: $run/n.0.pb.gz (report 1)
memtrace: pprof profile: $run/n.1.pb.gz (report 2)
memtrace: pprof profile: $run/n.2.pb.gz (at exit)
memtrace: pprof profile: $run/n.3.pb.gz (at the peak)"
check_eq "%n: exactly those files" "$(cd "$run" && ls | tr '\n' ' ')" \
    "n.0.pb.gz n.1.pb.gz n.2.pb.gz n.3.pb.gz "
s=$(site_samples "$run/n.0.pb.gz")
check_sample "report 1: kept site" "$s" "7 336 7 336 | $keep_loc"
check_sample "report 1: freed site" "$s" "5 320 0 0 | $freed_loc"
check_no_sample "report 1: no thread site yet" "$s" "$thread_loc"
s=$(site_samples "$run/n.1.pb.gz")
check_sample "report 2: the thread site" "$s" "3 600 3 600 | $thread_loc"
run=$work/reports
mkdir -p "$run"
MEMTRACE_INTERVAL_MS=0 MEMTRACE_PPROF="$run/r.pb.gz" MEMTRACE_PPROF_EVERY=report \
    LD_PRELOAD=$prof "$prog" >"$work/r.out" 2>&1
check_eq "without %n: PATH, PATH.peak, PATH.N per report" "$(cd "$run" && ls | tr '\n' ' ')" \
    "r.pb.gz r.pb.gz.1 r.pb.gz.2 r.pb.gz.peak "

# ---------------------------------------------------------------- -diff_base
# Exit minus report 1: the thread site's 600 bytes, the peak site's 100000
# allocated, pthread_create's block; the kept and freed sites cancel out.
diff=$(go tool pprof -top -sample_index=alloc_space -diff_base "$work/numbered/n.0.pb.gz" \
       "$work/numbered/n.2.pb.gz" 2>&1)
flat() { printf '%s\n' "$diff" | awk -v f="$1" '$NF == f { print $1 }'; }
check_eq "-diff_base: the thread site's difference" "$(flat alloc_thread)" 600B
check_eq "-diff_base: the peak site's difference" "$(flat alloc_peak)" 100000B
check_eq "-diff_base: the kept site cancels out" "$(flat inlined_alloc)" ""
check_eq "-diff_base: the freed site cancels out" "$(flat alloc_freed)" ""
diff=$(go tool pprof -raw -diff_base "$work/numbered/n.0.pb.gz" "$work/numbered/n.2.pb.gz" 2>&1)
# (the kept site's allocations and its in-use values, labelled by thread,
# are two samples)
if printf '%s\n' "$diff" | grep -qE '^ +-7 +-336 +0 +0: ' &&
   printf '%s\n' "$diff" | grep -qE '^ +0 +0 +-7 +-336: ' &&
   printf '%s\n' "$diff" | grep -qE '^ +-5 +-320 +0 +0: '; then
    pass "-diff_base: the base's samples negated exactly"
else
    fail "-diff_base: the base's samples negated exactly" "$diff"
fi

# ---------------------------------------------------------------- fork
run=$work/fork
mkdir -p "$run"
MEMTRACE_INTERVAL_MS=0 MEMTRACE_PPROF="$run/f.%p.pb.gz" LD_PRELOAD=$prof "$prog" fork \
    >"$work/f.out" 2>&1
pids=$(sed -n 's/^memtrace: exit report, pid \([0-9]*\).*/\1/p' "$work/f.out" | sort -n | tr '\n' ' ')
files=$(cd "$run" && ls | grep -v peak | sed 's/^f\.\([0-9]*\)\.pb\.gz$/\1/' | sort -n | tr '\n' ' ')
check_eq "fork: parent and child each write their own file (%p)" "$files" "$pids"
child=$(sed -n 's/^memtrace: exit report, pid \([0-9]*\) (forked from.*/\1/p' "$work/f.out")
s=$(site_samples "$run/f.$child.pb.gz")
check_sample "fork: the child's profile has its own site" "$s" "2 1000 2 1000 | $child_loc"
parent=$(printf '%s\n' $pids | grep -vx "$child")
s=$(site_samples "$run/f.$parent.pb.gz")
check_no_sample "fork: the parent's profile has not" "$s" "$child_loc"
check_sample "fork: the parent's kept site" "$s" "7 336 7 336 | $keep_loc"
run=$work/fork2
mkdir -p "$run"
MEMTRACE_INTERVAL_MS=0 MEMTRACE_PPROF="$run/g.pb.gz" LD_PRELOAD=$prof "$prog" fork \
    >"$work/g.out" 2>&1
child=$(sed -n 's/^memtrace: exit report, pid \([0-9]*\) (forked from.*/\1/p' "$work/g.out")
check_eq "fork without %p: the child's file is PATH.PID, the parent's is kept" \
    "$(cd "$run" && ls | tr '\n' ' ')" "g.pb.gz g.pb.gz.$child g.pb.gz.$child.peak g.pb.gz.peak "
# A program the traced one execs (here: a shell running the test program)
# finds MEMTRACE_PPROF=PATH.%p in its environment: it writes PATH.PID.
run=$work/exec
mkdir -p "$run"
MEMTRACE_INTERVAL_MS=0 MEMTRACE_PPROF="$run/x.pb.gz" LD_PRELOAD=$prof \
    sh -c '"$1" plain; true' sh "$prog" >"$work/x.out" 2>&1
xchild=$(cd "$run" && ls | sed -n 's/^x\.pb\.gz\.\([0-9][0-9]*\)$/\1/p')
# (dash leaves by _exit, without an exit report or profile of its own.)
check_eq "exec without %p: the exec'd program's files are PATH.PID, never PATH" \
    "$(cd "$run" && ls | tr '\n' ' ')" "x.pb.gz.$xchild x.pb.gz.$xchild.peak "
s=$(site_samples "$run/x.pb.gz.$xchild")
check_sample "exec without %p: the program's own profile has its site" "$s" "7 336 7 336 | $keep_loc"

# ---------------------------------------------------------------- tracer build
# The tracer's answer to the program's memtrace_report calls is not ours.
quiet() { grep -v '^memtrace: memtrace_report: reports are made by the profiler build' "$1"; }
run=$work/tracer
mkdir -p "$run"
MEMTRACE_PPROF="$run/t.pb.gz" LD_PRELOAD=$tracer "$prog" >"$work/t.out" 2>&1
check_eq "tracer: one file, nothing said" "$(cd "$run" && ls) $(quiet "$work/t.out")" "t.pb.gz "
types=$(go tool pprof -raw "$run/t.pb.gz" 2>&1 | sed -n '/^Samples:/{n;p;q}')
check_eq "tracer: the in-use sample types" "$types" "inuse_objects/count inuse_space/bytes[dflt]"
s=$(samples "$run/t.pb.gz")
check_sample "tracer: kept site, main thread" "$s" "7 336 thread:[1] | $keep_loc"
check_sample "tracer: the named thread's site, its number and name" "$s" \
    "3 600 thread:[2 (pprof-worker)] | $thread_loc"
check_no_sample "tracer: no freed site" "$s" "$freed_loc"
MEMTRACE_PPROF="$run/t2.pb.gz" MEMTRACE_PPROF_EVERY=report LD_PRELOAD=$tracer "$prog" \
    >"$work/t2.out" 2>&1
check_eq "tracer: MEMTRACE_PPROF_EVERY=report gets one warning" \
    "$(grep -c '^memtrace: MEMTRACE_PPROF_EVERY=report: reports are made by the profiler build' "$work/t2.out") $(quiet "$work/t2.out" | wc -l)" "1 1"

# ---------------------------------------------------------------- gdb
# Stopped at checkpoint(): the in-use profile from the live process, and a
# core file of it; each total is `memtrace stats`'.
out=$work/gdb.out
timeout 120 gdb -q -batch -nx -ex "set env LD_PRELOAD=$tracer" -ex "break checkpoint" \
    -ex "run" -ex "source $helper" -ex "memtrace stats" -ex "memtrace pprof $work/live.pb.gz" \
    -ex "gcore $work/pprof.core" -ex "kill" "$prog" >"$out" 2>&1
core_out=$work/core.out
timeout 120 gdb -q -batch -nx "$prog" "$work/pprof.core" -ex "source $helper" \
    -ex "memtrace stats" -ex "memtrace pprof $work/core.pb.gz" -ex "memtrace pprof" \
    -ex "memtrace pprof $work/no/such/dir/x.pb.gz" >"$core_out" 2>&1
# total FILE: "BLOCKS BYTES" summed over the in-use samples.
total() {
    go tool pprof -raw "$1" 2>/dev/null |
        awk '/^Samples:/ { on = 1; next } /^Locations/ { on = 0 }
             on && /:/ { split($0, a, ":"); split(a[1], v, " "); o += v[1]; b += v[2] }
             END { print o + 0, b + 0 }'
}
for what in live core; do
    o=$out
    [ $what = core ] && o=$core_out
    stats=$(sed -n 's/^memtrace: \([0-9]*\) live blocks, \([0-9]*\) live bytes,.*/\1 \2/p' "$o")
    check_eq "gdb $what: the profile's total is memtrace stats'" "$(total "$work/$what.pb.gz")" \
        "${stats:-no stats}"
    check_eq "gdb $what: the command's line" \
        "$(grep '^memtrace: pprof profile' "$o" | sed 's/: [0-9]* live bytes in [0-9]* blocks at [0-9]* call sites$//')" \
        "memtrace: pprof profile: $work/$what.pb.gz"
    s=$(samples "$work/$what.pb.gz")
    check_sample "gdb $what: kept site, thread 1" "$s" "7 336 thread:[1] | $keep_loc"
    check_sample "gdb $what: the named thread's site" "$s" \
        "3 600 thread:[2 (pprof-worker)] | $thread_loc"
done
check_grep() { if grep -qF -- "$3" "$2"; then pass "$1"; else fail "$1" "'$3' not in $(cat "$2")"; fi; }
check_grep "gdb: no file name" "$core_out" "memtrace: usage: memtrace pprof FILE"
check_grep "gdb: a file that cannot be made" "$core_out" \
    "memtrace: pprof: $work/no/such/dir/x.pb.gz not written (No such file or directory)"
if grep -qE 'Traceback|Python Exception' "$out" "$core_out"; then
    fail "gdb: no Python traceback" "$(cat "$out" "$core_out")"
else
    pass "gdb: no Python traceback"
fi

# ---------------------------------------------------------------- bad settings
MEMTRACE_INTERVAL_MS=0 MEMTRACE_PPROF="$work/no/such/dir/x.pb.gz" LD_PRELOAD=$prof "$prog" \
    >"$work/bad.out" 2>&1
rc=$?
check_eq "bad path: the program's exit status" "$rc" 0
check_grep "bad path: said in the exit report" "$work/bad.out" \
    "memtrace: pprof profile: $work/no/such/dir/x.pb.gz not written (No such file or directory)"
MEMTRACE_PPROF="$work/no/such/dir/x.pb.gz" LD_PRELOAD=$tracer "$prog" >"$work/bad2.out" 2>&1
rc=$?
check_eq "tracer, bad path: exit status 0, one warning" "$rc $(quiet "$work/bad2.out")" \
    "0 memtrace: MEMTRACE_PPROF: $work/no/such/dir/x.pb.gz not written (No such file or directory)"
ln -s "$work/victim" "$work/link.pb.gz"
MEMTRACE_PPROF="$work/link.pb.gz" LD_PRELOAD=$tracer "$prog" >"$work/link.out" 2>&1
check_eq "a symbolic link is not followed" "$(quiet "$work/link.out"; ls "$work/victim" 2>/dev/null)" \
    "memtrace: MEMTRACE_PPROF: $work/link.pb.gz not written (a symbolic link; not followed)"
MEMTRACE_INTERVAL_MS=0 MEMTRACE_PPROF_EVERY=often MEMTRACE_PPROF="$work/e.pb.gz" \
    LD_PRELOAD=$prof "$prog" >"$work/every.out" 2>&1
check_grep "MEMTRACE_PPROF_EVERY=often: one warning" "$work/every.out" \
    'memtrace: MEMTRACE_PPROF_EVERY="often" is not report or exit; using exit'

# ---------------------------------------------------------------- the main executable first
# pprof takes the first Mapping for the profile's binary (`File:` in its
# reports, the file it looks for). A program whose every block comes from
# libc (strdup, stdout's buffer) first symbolizes a libc frame: its Mapping
# must still come after the program's, in the profiler's profile and the
# gdb command's, on a process and on a core file.
printf '#include <stdio.h>\n#include <string.h>\nint main(void) { char *s = strdup("libc first"); puts(s); return 0; }\n' \
    >"$work/libc_first.c"
${CC:-gcc} -O0 -g -o "$work/libc_first" "$work/libc_first.c"
first_mapping() { # FILE: the file name of Mapping 1
    go tool pprof -raw "$1" 2>/dev/null | sed -n '/^Mappings/,$p' | awk '$1 == "1:" { print $3 }'
}
MEMTRACE_INTERVAL_MS=0 MEMTRACE_PPROF="$work/lf.pb.gz" LD_PRELOAD=$prof "$work/libc_first" \
    >/dev/null 2>&1
check_eq "profiler: Mapping 1 is the program, not libc" "$(first_mapping "$work/lf.pb.gz")" \
    "$work/libc_first"
check_eq "profiler: the peak profile's Mapping 1 is the program" \
    "$(first_mapping "$work/lf.pb.gz.peak")" "$work/libc_first"
check_eq "profiler: go tool pprof names the program" \
    "$(go tool pprof -top "$work/lf.pb.gz" 2>/dev/null | sed -n 1p)" "File: libc_first"
MEMTRACE_PPROF="$work/lft.pb.gz" LD_PRELOAD=$tracer "$work/libc_first" >/dev/null 2>&1
check_eq "tracer: Mapping 1 is the program" "$(first_mapping "$work/lft.pb.gz")" "$work/libc_first"
timeout 120 gdb -q -batch -nx -ex "set env LD_PRELOAD=$tracer" -ex "break puts" -ex "run" \
    -ex "source $helper" -ex "memtrace pprof $work/lfg.pb.gz" -ex "gcore $work/lf.core" -ex "kill" \
    "$work/libc_first" >"$work/lfg.out" 2>&1
timeout 120 gdb -q -batch -nx "$work/libc_first" "$work/lf.core" -ex "source $helper" \
    -ex "memtrace pprof $work/lfc.pb.gz" >"$work/lfc.out" 2>&1
check_eq "gdb live: Mapping 1 is the program" "$(first_mapping "$work/lfg.pb.gz")" "$work/libc_first"
check_eq "gdb core: Mapping 1 is the program" "$(first_mapping "$work/lfc.pb.gz")" "$work/libc_first"

finish pprof
