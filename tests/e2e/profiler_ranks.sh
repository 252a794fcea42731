#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The profiler's rankings, temporary allocations, exact peak profile, the
# files of child processes and the tracer's word on profiler settings:
# tests/progs/profile_ranks.c runs under libmemtrace-profiler.so (and
# libmemtrace.so); its "SITE:<name>" sites have known allocation counts,
# temporary counts and bytes at the peak, and every report is asked for at
# a fixed point, so every number below is exact. Prints
# "profiler_ranks: N passed, N failed"; exits 1 on failure.
set -u
. "$(dirname "$0")/lib.sh"
prog=$build/tests/profile_ranks
corners=$build/tests/profile_corners
plib=$build/libmemtrace-profiler.so
tlib=$build/libmemtrace.so
src=tests/progs/profile_ranks.c
# Each entry of a report on one line, for the program's own sites only:
# "[RANK] LIVE BLOCKS | ALLOCATED ... FREED | SITE | TEMPORARY", SITE the
# name of the #0 frame's alloc_ function, checked against its SITE: line.
entries() {
    awk -v src="$src" '
        /^memtrace: \[[0-9]+\]/ { if (e != "") print e; e = $2 " " $3 " " $7 " | "; sub(/^[^:]*: [^:]*: /, ""); e = e $0; next }
        /^  #0 / { f = $2; if ($4 !~ "^" src ":") f = f "@" $4; e = e " | " f }
        /^  temporary: / { sub(/^  /, ""); e = e " | " $0 }
        END { if (e != "") print e }' | grep ' | alloc_' | sed -E 's/@[^ ]*//'
}

# The #0 frame of each program site must be at its SITE: line.
frames_ok() { # FILE
    local name bad=0
    for name in churn pair grow hold; do
        if grep -q "^  #0 alloc_$name at" "$1" &&
           ! grep -q "^  #0 alloc_$name at $(at "$src" "$name")" "$1"; then
            bad=1
        fi
    done
    return $bad
}

cd "$root" || exit 1

# ---------------------------------------------------------------- allocs
out=$work/allocs.out
env LD_PRELOAD="$plib" MEMTRACE_TOP_BY=allocs MEMTRACE_INTERVAL_MS=0 MEMTRACE_OUTPUT="$out" \
    "$prog" ranks 2>"$work/allocs.err"
check "allocs: exit code" 0 "$?"
check "allocs: nothing on stderr" "" "$(cat "$work/allocs.err")"
if frames_ok "$out"; then pass "allocs: each site's #0 frame at its SITE: line"; else
    fail "allocs: frames" "$(grep '^  #0 alloc_' "$out" | sort -u)"; fi
check "allocs: report 1 header" \
    "top 4 sites by allocations since last report, most last" \
    "$(profiler_report "$out" 1 | head -1 | sed -E 's/.*; (top .*)/\1/')"
check "allocs: report 1, the 600,000 malloc/free pairs first" \
    "[1] 0 0 | 9600000 bytes in 600000 blocks allocated, 9600000 bytes in 600000 blocks freed | alloc_churn | temporary: 600000 of 600000 blocks allocated
[2] 0 0 | 200000 bytes in 2000 blocks allocated, 200000 bytes in 2000 blocks freed | alloc_pair | temporary: 1000 of 2000 blocks allocated
[3] 1000 1 | 5500 bytes in 10 blocks allocated, 4500 bytes in 9 blocks freed | alloc_grow | temporary: 9 of 10 blocks allocated
[4] 150000 3 | 150000 bytes in 3 blocks allocated, 0 bytes in 0 blocks freed | alloc_hold | temporary: 0 of 3 blocks allocated" \
    "$(profiler_report "$out" 1 | entries | sort)"
check "allocs: report 2 ranks the interval's allocations" \
    "[1] 0 0 | 100000 bytes in 1000 blocks allocated, 100000 bytes in 1000 blocks freed | alloc_pair | temporary: 500 of 1000 blocks allocated" \
    "$(profiler_report "$out" 2 | entries | sort)"
check "allocs: exit report header" \
    "peak 151200 bytes live; 151000 bytes still live in 4 blocks at 2 sites; by allocations since start, most last" \
    "$(profiler_report "$out" exit | head -1 | sed -E 's/.*: (peak [0-9]+ bytes live) at [0-9]+ ms(; .*)/\1\2/')"
check "allocs: exit report, since start" \
    "[1] 0 0 | 9600000 bytes in 600000 blocks allocated, 9600000 bytes in 600000 blocks freed | alloc_churn | temporary: 600000 of 600000 blocks allocated
[2] 0 0 | 300000 bytes in 3000 blocks allocated, 300000 bytes in 3000 blocks freed | alloc_pair | temporary: 1500 of 3000 blocks allocated
[3] 1000 1 | 5500 bytes in 10 blocks allocated, 4500 bytes in 9 blocks freed | alloc_grow | temporary: 9 of 10 blocks allocated
[4] 150000 3 | 150000 bytes in 3 blocks allocated, 0 bytes in 0 blocks freed | alloc_hold | temporary: 0 of 3 blocks allocated" \
    "$(profiler_report "$out" exit | entries | sort)"
env LD_PRELOAD="$plib" MEMTRACE_TOP_BY=allocs MEMTRACE_INTERVAL_MS=0 MEMTRACE_EXIT_TOP=1 \
    "$prog" ranks 2>"$work/allocs1.err" >/dev/null
check "allocs, MEMTRACE_EXIT_TOP=1: the other sites summed up in one line" \
    "memtrace: 3 more sites not shown, 3013 blocks allocated, 1509 temporary (MEMTRACE_EXIT_TOP=1)" \
    "$(profiler_report "$work/allocs1.err" exit | grep 'more sites not shown')"

# ---------------------------------------------------------------- temporary
out=$work/temp.out
env LD_PRELOAD="$plib" MEMTRACE_TOP_BY=temporary MEMTRACE_INTERVAL_MS=0 MEMTRACE_OUTPUT="$out" \
    "$prog" ranks 2>/dev/null
check "temporary: exit report header" "by temporary allocations since start, most last" \
    "$(profiler_report "$out" exit | head -1 | sed -E 's/.*; (by .*)/\1/')"
check "temporary: exit report, a site with none not listed" \
    "[1] 0 0 | 9600000 bytes in 600000 blocks allocated, 9600000 bytes in 600000 blocks freed | alloc_churn | temporary: 600000 of 600000 blocks allocated
[2] 0 0 | 300000 bytes in 3000 blocks allocated, 300000 bytes in 3000 blocks freed | alloc_pair | temporary: 1500 of 3000 blocks allocated
[3] 1000 1 | 5500 bytes in 10 blocks allocated, 4500 bytes in 9 blocks freed | alloc_grow | temporary: 9 of 10 blocks allocated" \
    "$(profiler_report "$out" exit | entries | sort)"

env LD_PRELOAD="$plib" MEMTRACE_TOP_BY=temporary MEMTRACE_INTERVAL_MS=0 MEMTRACE_EXIT_TOP=1 \
    "$prog" ranks 2>"$work/temp1.err" >/dev/null
check "temporary, MEMTRACE_EXIT_TOP=1: the other sites with temporary allocations summed up" \
    "memtrace: 2 more sites not shown, 3010 blocks allocated, 1509 temporary (MEMTRACE_EXIT_TOP=1)" \
    "$(profiler_report "$work/temp1.err" exit | grep 'more sites not shown')"

# ---------------------------------------------------------------- heaptrack's temporary
# tests/progs/profile_temporary.c: a free is temporary when it comes right
# after its block's allocation, no other allocation or free in between
# (heaptrack's rule; a realloc frees the old block, then allocates). Exact
# counts, and heaptrack_print's for the same sites.
tsrc=tests/progs/profile_temporary.c
env LD_PRELOAD="$plib" MEMTRACE_TOP_BY=allocs MEMTRACE_INTERVAL_MS=0 MEMTRACE_EXIT_TOP=100 \
    "$build/tests/profile_temporary" \
    2>"$work/heaptemp.err"
check "heaptrack's temporary: exit code" 0 "$?"
# "FUNCTION TEMPORARY ALLOCATED" per program site, from the exit report.
ours=$(profiler_report "$work/heaptemp.err" exit |
    awk -v src="$tsrc" '/^  #0 alloc_/ { f = ($4 ~ "^" src ":") ? $2 : "" }
        /^  temporary: / && f != "" { print f, $2, $4; f = "" }' | sort)
check "heaptrack's temporary: each site's count" \
    "alloc_between 0 100
alloc_grow 500 500
alloc_older 0 100
alloc_simple 100 100
alloc_twice 0 100
alloc_twice 0 100" "$ours"
if command -v heaptrack >/dev/null && command -v heaptrack_print >/dev/null; then
    (cd "$work" && heaptrack -o "$work/ht" "$build/tests/profile_temporary" >/dev/null 2>&1)
    # heaptrack_print lists the sites with temporary allocations: "N
    # temporary allocations of M allocations in total (P%) from" and the
    # function on the next line.
    theirs=$(heaptrack_print "$work"/ht.* 2>/dev/null |
        awk '/^MOST TEMPORARY ALLOCATIONS/ { on = 1; next } /^[A-Z ]+$/ { on = 0 }
             on && / temporary allocations of .* from$/ { n = $1; m = $5; getline; print $1, n, m }' |
        grep '^alloc_' | sort)
    check "heaptrack's temporary: heaptrack_print counts the same" \
        "$(grep -v ' 0 ' <<<"$ours")" "$theirs"
else
    fail "heaptrack's temporary: heaptrack_print" "heaptrack is not installed (make deps installs it)"
fi

# ---------------------------------------------------------------- live
# The default: the headers as they always were; sites without live bytes
# are not listed; every entry still ends with its temporary count.
out=$work/live.out
env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=0 MEMTRACE_OUTPUT="$out" "$prog" ranks 2>/dev/null
check "live: report 1 header unchanged" "top 2 sites, largest last" \
    "$(profiler_report "$out" 1 | head -1 | sed -E 's/.*; (top .*)/\1/')"
check "live: report 1" \
    "[1] 150000 3 | 150000 bytes in 3 blocks allocated, 0 bytes in 0 blocks freed | alloc_hold | temporary: 0 of 3 blocks allocated
[2] 1000 1 | 5500 bytes in 10 blocks allocated, 4500 bytes in 9 blocks freed | alloc_grow | temporary: 9 of 10 blocks allocated" \
    "$(profiler_report "$out" 1 | entries | sort)"
check "live: exit report header unchanged" "at 2 sites, largest last" \
    "$(profiler_report "$out" exit | head -1 | sed -E 's/.*blocks (at .*)/\1/')"

# ---------------------------------------------------------------- bad value
env LD_PRELOAD="$plib" MEMTRACE_TOP_BY=bytes MEMTRACE_INTERVAL_MS=0 MEMTRACE_OUTPUT="$work/bad.out" \
    "$prog" ranks 2>"$work/bad.err"
check "bad MEMTRACE_TOP_BY: exit code" 0 "$?"
check "bad MEMTRACE_TOP_BY: one warning, and live" \
    'memtrace: MEMTRACE_TOP_BY="bytes" is not one of live, allocs, temporary, peak; using live' \
    "$(cat "$work/bad.err")"
check "bad MEMTRACE_TOP_BY: ranked by live bytes" "$(profiler_report "$work/live.out" 1 | entries | sort)" \
    "$(profiler_report "$work/bad.out" 1 | entries | sort)"

# ---------------------------------------------------------------- peak
# A peak of 32100 bytes reached and left within a few ms: the .peak file
# holds the sites' bytes at that moment exactly (a sample taken 10 ms apart
# would miss it), with and without the reporter thread.
for interval in 0 1000; do
    f=$work/peak$interval.folded
    env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=$interval MEMTRACE_FOLDED="$f" "$prog" peak \
        2>"$work/peak$interval.err"
    check "peak (interval $interval): exit code" 0 "$?"
    check "peak (interval $interval): the exit report's peak" \
        "peak 32100 bytes live; 100 bytes still live in 1 blocks at 1 sites" \
        "$(profiler_report "$work/peak$interval.err" exit | head -1 | sed -E 's/.*: (peak [0-9]+ bytes live) at [0-9]+ ms(; .* sites),.*/\1\2/')"
    check "peak (interval $interval): .peak holds each site's bytes at the peak" \
        "main;peak;alloc_a 20000
main;peak;alloc_b 6000
main;peak;alloc_c 6100" \
        "$(sed -E 's/^_start;__libc_start_main[^;]*;__libc_start_call_main;//' "$f.peak" | sort)"
    check "peak (interval $interval): the folded line gives its total" 1 \
        "$(grep -c "^memtrace: folded stacks: $f (at exit), $f.peak (32100 bytes, peak at 0.0[0-9][0-9] s)\$" "$work/peak$interval.err")"
    check "peak (interval $interval): the exit file" "main;peak;alloc_d 100" \
        "$(sed -E 's/^_start;__libc_start_main[^;]*;__libc_start_call_main;//' "$f")"
done

# ---------------------------------------------------------------- top by peak
# MEMTRACE_TOP_BY=peak: a program that freed its peak's blocks still shows
# the sites that made it, each with its bytes and blocks at the peak (the
# .peak file's exact snapshot), largest first; the rest summed up.
out=$work/bypeak.out
env LD_PRELOAD="$plib" MEMTRACE_TOP_BY=peak MEMTRACE_INTERVAL_MS=0 MEMTRACE_OUTPUT="$out" \
    "$prog" peak 2>"$work/bypeak.err"
check "top by peak: exit code" 0 "$?"
check "top by peak: nothing on stderr" "" "$(cat "$work/bypeak.err")"
check "top by peak: exit report header" \
    "peak 32100 bytes live; 100 bytes still live in 1 blocks at 1 sites; by bytes live at the peak, largest last" \
    "$(profiler_report "$out" exit | head -1 | sed -E 's/.*: (peak [0-9]+ bytes live) at [0-9]+ ms(; .*)/\1\2/')"
check "top by peak: the sites at the peak, largest first, all freed since" \
    "[1] 0 0 | alloc_a at $(at "$src" a)
  at the peak: 20000 bytes live in 2 blocks
[2] 0 0 | alloc_c at $(at "$src" c)
  at the peak: 6100 bytes live in 1 blocks
[3] 0 0 | alloc_b at $(at "$src" b)
  at the peak: 6000 bytes live in 1 blocks" \
    "$(profiler_report "$out" exit |
       awk '/^memtrace: \[/ { r = $2 " " $3 " " $7 } /^  #0 / { f = $2 " at " $4 }
            /^  at the peak: / { print r " | " f; print }' | sed -E 's/(\.c:[0-9]+:)[0-9]+$/\1/' | paste - - | sort | tr '\t' '\n')"
env LD_PRELOAD="$plib" MEMTRACE_TOP_BY=peak MEMTRACE_INTERVAL_MS=0 MEMTRACE_EXIT_TOP=1 \
    "$prog" peak 2>"$work/bypeak1.err" >/dev/null
check "top by peak, MEMTRACE_EXIT_TOP=1: the others' bytes at the peak in one line" \
    "memtrace: 2 more sites not shown, 12100 bytes in 2 blocks at the peak (MEMTRACE_EXIT_TOP=1)" \
    "$(profiler_report "$work/bypeak1.err" exit | grep 'more sites not shown')"

check "top by peak: no separate top at the peak (the ranking is it)" 0 \
    "$(profiler_report "$out" exit | grep -c -e '^memtrace: top .*at the peak' -e '^memtrace: at the peak \[' -e '^memtrace: end of top at the peak')"

# ---------------------------------------------------------------- top at the peak
# The default exit report of the same program: its ranking (the one site
# still live) as it always was, then its own section, heaptrack's PEAK
# MEMORY CONSUMERS: each site's exact bytes and blocks at the peak, at its
# SITE: line, largest last as in the ranking, its stack indented by two
# more spaces; MEMTRACE_TOP limits it.
at_peak() { # the section's entries: "[RANK] BYTES BLOCKS | EXIT BYTES BLOCKS | FUNC at FILE:LINE:"
    awk '/^memtrace: at the peak \[/ { r = $5 " " $6 " " $10 " | " $14 " " $17 }
         /^    #0 / && r != "" { print r " | " $2 " at " $4; r = "" }' |
        sed -E 's/(\.c:[0-9]+:)[0-9]+$/\1/'
}
out=$work/atpeak.out
env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=0 MEMTRACE_OUTPUT="$out" "$prog" peak 2>"$work/atpeak.err"
check "top at the peak: exit code" 0 "$?"
check "top at the peak: nothing on stderr" "" "$(cat "$work/atpeak.err")"
check "top at the peak: the ranking as it was, the one site still live" \
    "[1] 100 1 | 100 bytes in 1 blocks allocated, 0 bytes in 0 blocks freed | alloc_d | temporary: 0 of 1 blocks allocated" \
    "$(profiler_report "$out" exit | entries)"
check "top at the peak: its header, the peak's bytes" \
    "memtrace: top 3 sites at the peak (32100 bytes live at N ms), largest last" \
    "$(profiler_report "$out" exit | grep '^memtrace: top .* at the peak' | sed -E 's/at [0-9]+ ms/at N ms/')"
check "top at the peak: each site's bytes and blocks at the peak and at exit, at its SITE: line" \
    "[3] 6000 1 | 0 0 | alloc_b at $(at "$src" b)
[2] 6100 1 | 0 0 | alloc_c at $(at "$src" c)
[1] 20000 2 | 0 0 | alloc_a at $(at "$src" a)" \
    "$(profiler_report "$out" exit | at_peak)"
check "top at the peak: whole stacks, two more spaces, then its end and the report's" \
    "    #1 peak at $src:
memtrace: end of top at the peak
memtrace: end of exit report" \
    "$(profiler_report "$out" exit | sed -n '/^memtrace: at the peak \[1\]/,$p' |
       grep -v '^    #[02-9]' | tail -n +2 | sed -E 's/^(    #1 peak at [^:]*:).*/\1/')"
env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=0 MEMTRACE_TOP=1 "$prog" peak 2>"$work/atpeak1.err"
check "top at the peak, MEMTRACE_TOP=1: the largest, the others in one line" \
    "memtrace: 2 more sites at the peak not shown, 12100 bytes in 2 blocks (MEMTRACE_TOP=1)
[1] 20000 2 | 0 0 | alloc_a at $(at "$src" a)" \
    "$(profiler_report "$work/atpeak1.err" exit | grep 'more sites at the peak not shown'
       profiler_report "$work/atpeak1.err" exit | at_peak)"
if command -v heaptrack >/dev/null && command -v heaptrack_print >/dev/null; then
    (cd "$work" && heaptrack -o "$work/htpeak" "$prog" peak >/dev/null 2>&1)
    # heaptrack_print's PEAK MEMORY CONSUMERS: "SIZE peak memory consumed
    # over N calls from", the function, "  at FILE:LINE"; its sizes are
    # rounded (20.00K), the exact bytes are in its peak flame graph.
    theirs=$(heaptrack_print "$work"/htpeak.* 2>/dev/null |
        awk '/^PEAK MEMORY CONSUMERS/ { on = 1; next } /^[A-Z ]+$/ { on = 0 }
             on && / peak memory consumed over / { getline f; getline l; sub(/^ *at /, "", l); print f " at " l ":" }' |
        grep '^alloc_')
    heaptrack_print --print-peaks=0 --print-allocators=0 --print-temporary=0 --print-leaks=0 \
        --flamegraph-cost-type peak -F "$work/htpeak.fg" "$work"/htpeak.* >/dev/null 2>&1
    bytes=$(sed -nE 's/.*;(alloc_[a-z]+) \([^)]*\); ([0-9]+)$/\1 \2/p' "$work/htpeak.fg" | grep -v ' 0$')
    check "top at the peak: heaptrack_print's PEAK MEMORY CONSUMERS, same sites, order and bytes" \
        "$(profiler_report "$out" exit | at_peak | tac | awk -F' [|] ' '{ split($1, v, " "); print $3, v[2] }')" \
        "$(while read -r f l; do echo "$f $l $(awk -v f="$f" '$1 == f { print $2 }' <<<"$bytes")"; done <<<"$theirs")"
else
    fail "top at the peak: heaptrack_print" "heaptrack is not installed (make deps installs it)"
fi
# ---------------------------------------------------------------- children
# MEMTRACE_OUTPUT and MEMTRACE_FOLDED without %p; the parent reports, then
# starts a forked child and a fork+exec of /bin/ls, both exiting after it.
# The parent's report and files stay whole; the reports of all three are
# appended to the one file; each child's folded files are PATH.PID.
mkdir "$work/kids"
out=$work/kids/out
env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=0 MEMTRACE_OUTPUT="$out" \
    MEMTRACE_FOLDED="$work/kids/f" "$prog" spawn 2>"$work/kids.err"
check "children: exit code" 0 "$?"
for i in $(seq 100); do
    [ "$(grep -c '^memtrace: end of exit report$' "$out")" -ge 3 ] && break
    sleep 0.1
done
parent=$(sed -nE 's/^memtrace: report 1 \(on request\), pid ([0-9]+),.*/\1/p' "$out")
forked=$(sed -nE "s/^memtrace: exit report, pid ([0-9]+) \\(forked from $parent\\).*/\\1/p" "$out")
execd=$(sed -nE 's/^memtrace: exit report, pid ([0-9]+), .*/\1/p' "$out" | grep -vx "$parent")
check "children: the parent's report 1, whole" \
    "[1] 1000 1 | 1000 bytes in 1 blocks allocated, 0 bytes in 0 blocks freed | alloc_parent | temporary: 0 of 1 blocks allocated" \
    "$(profiler_report "$out" 1 | entries)"
check "children: three exit reports in the one file, the parent's first" "3 $parent" \
    "$(grep -c '^memtrace: end of exit report$' "$out") $(sed -nE 's/^memtrace: exit report, pid ([0-9]+).*/\1/p' "$out" | head -1)"
fold() { sed -E 's/^_start;__libc_start_main[^;]*;__libc_start_call_main;//' "$1" | sort; }
check "children: the parent's folded files, whole" "main;spawn;alloc_parent 1000
main;spawn;alloc_parent 2000
main;spawn;alloc_parent 1000
main;spawn;alloc_parent 2000" "$(fold "$work/kids/f"; fold "$work/kids/f.peak")"
check "children: the forked child's in PATH.PID" "main;spawn;alloc_child 300
main;spawn;alloc_parent 1000" "$(fold "$work/kids/f.$forked")"
check "children: the exec'd /bin/ls's in PATH.PID, named in its report" "yes 1" \
    "$(test -n "$execd" && test -f "$work/kids/f.$execd" && test -f "$work/kids/f.$execd.peak" && echo yes) $(grep -c "^memtrace: folded stacks: $work/kids/f.$execd (at exit), " "$out")"
check "children: no other file" \
    "$(printf '%s\n' f f.peak out "f.$execd" "f.$execd.peak" "f.$forked" "f.$forked.peak" | sort)" \
    "$(ls "$work/kids" | sort)"
check "children: nothing on stderr" "" "$(cat "$work/kids.err")"
# The parent's every byte of the peak is still live at exit: its top at
# the peak would repeat the ranking and is left out; /bin/ls freed some.
check "children: a top at the peak for /bin/ls, none for the parent" "0 1" \
    "$(sed -n "/^memtrace: exit report, pid $parent,/,/^memtrace: end of exit report/p" "$out" | grep -c 'at the peak') $(
       sed -n "/^memtrace: exit report, pid $execd,/,/^memtrace: end of exit report/p" "$out" | grep -c '^memtrace: end of top at the peak$')"

# ---------------------------------------------------------------- tracer
# Profiler settings given to libmemtrace.so: one line naming them, per
# process (a parent and its 3 exec'd children: 4); none without them.
env LD_PRELOAD="$tlib" MEMTRACE_INTERVAL_MS=0 MEMTRACE_TOP_BY=allocs MEMTRACE_FOLDED="$work/t.f" \
    "$prog" peak 2>"$work/tracer.err"
check "tracer: exit code" 0 "$?"
check "tracer: one line naming the profiler settings" \
    "memtrace: MEMTRACE_INTERVAL_MS, MEMTRACE_TOP_BY, MEMTRACE_FOLDED: profiler settings, no effect in libmemtrace.so, the tracer; preload libmemtrace-profiler.so for the profiler's reports" \
    "$(cat "$work/tracer.err")"
env LD_PRELOAD="$tlib" MEMTRACE_OUTPUT="$work/t.out" "$corners" exec 2>"$work/tracer4.err"
check "tracer: one line per process" \
    "4 memtrace: MEMTRACE_OUTPUT: a profiler setting, no effect in libmemtrace.so, the tracer; preload libmemtrace-profiler.so for the profiler's reports" \
    "$(sort "$work/tracer4.err" | uniq -c | sed -E 's/^ *//')"
check "tracer: no file written" "" "$(ls "$work" | grep '^t\.')"
env LD_PRELOAD="$tlib" "$prog" peak 2>"$work/tracer0.err"
check "tracer: nothing without profiler settings" "" "$(cat "$work/tracer0.err")"

finish profiler_ranks
