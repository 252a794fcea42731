#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The profiler's pprof profile labels its in-use values by tag scope and
# thread, as the tracer's in-use profile does (tests/progs/
# perf_profile_labels.c: known sizes in two scopes on two named threads,
# all live at exit). `go tool pprof` is the reader: -tags lists each
# label's in-use bytes exactly, -tagfocus keeps them; a stack whose blocks
# are in two scopes is two labelled samples; the allocation counts stay
# one unlabelled sample per stack (which thread allocated a freed block is
# not kept), so every total is the site counters' as before. Sampled
# (MEMTRACE_SAMPLE), the same labels. A few seconds.
set -u
. "$(dirname "$0")/lib.sh"
prof=$build/libmemtrace-profiler.so
prog=$tests/perf_profile_labels
P=tests/progs/perf_profile_labels.c
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_PPROF_EVERY MEMTRACE_SAMPLE \
    MEMTRACE_SAMPLE_SEED MEMTRACE_TAGS
export HOME=$work/home PPROF_TMPDIR=$work/pprof-tmp
mkdir -p "$HOME" "$PPROF_TMPDIR"
if ! command -v go >/dev/null; then
    fail "go tool pprof" "go is not installed (golang-go, make deps)"
    finish perf_profile_labels
    exit 1
fi

# labels FILE INDEX KEY: "BYTES NAME" of each value of label KEY that
# `go tool pprof -tags` lists for sample index INDEX, by name.
labels() {
    timeout 120 go tool pprof -sample_index="$2" -unit=B -tags "$1" 2>/dev/null |
        awk -v key="$3" '/^ [a-z]+: Total/ { in_key = ($1 == key ":") ; next }
                         in_key && NF >= 2 { v = $1; sub(/\.0B$/, "", v); sub(/B$/, "", v)
                                             name = $0; sub(/^[^:]*: /, "", name); print v, name }' |
        sort -k2
}
# focus FILE FILTER: the in-use bytes -tagfocus keeps.
focus() {
    timeout 120 go tool pprof -sample_index=inuse_space -unit=B -tagfocus="$2" -top "$1" 2>&1 |
        sed -n 's/^Showing nodes accounting for \([0-9]*\)B,.*/\1/p'
}
total() { # FILE INDEX: the profile's total of sample index INDEX
    timeout 120 go tool pprof -sample_index="$2" -unit=B -top "$1" 2>&1 |
        sed -n 's/^Showing nodes accounting for [0-9]*B, [0-9.]*% of \([0-9]*\)B total$/\1/p'
}

out=$(cd "$work" && timeout 60 env LD_PRELOAD="$prof" MEMTRACE_INTERVAL_MS=0 \
    MEMTRACE_PPROF="$work/p.pb.gz" "$prog" 2>"$work/p.err")
RC=$?
status "profiler" 0
check "profiler: the program ran" "kept 5" "$out"
check "tag labels, in-use bytes (-tags)" "800 io
2000 parse" "$(labels "$work/p.pb.gz" inuse_space tag)"
check "thread labels, in-use bytes (-tags)" "2300 2 (alpha)
570 3 (beta)" "$(labels "$work/p.pb.gz" inuse_space thread | grep -E '\((alpha|beta)\)$')"
check "-tagfocus=tag=^parse\$" 2000 "$(focus "$work/p.pb.gz" 'tag=^parse$')"
check "-tagfocus=tag=^io\$ (both threads)" 800 "$(focus "$work/p.pb.gz" 'tag=^io$')"
check "-tagfocus=thread=alpha" 2300 "$(focus "$work/p.pb.gz" 'thread=alpha')"
check "-tagfocus=thread=beta (in io and in none)" 570 "$(focus "$work/p.pb.gz" 'thread=beta')"
# alpha's one call site in both scopes: two labelled samples of its stack.
line=$(site_line $P scoped)
raw=$(timeout 120 go tool pprof -raw "$work/p.pb.gz" 2>/dev/null)
loc=$(awk -v at="$P:$line" '/^Locations/ { l = 1; next } /^Mappings/ { l = 0 }
      l && index($0, at) { print $1 + 0; exit }' <<<"$raw")
stack_samples=$(awk -v loc="$loc" '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 }
    s && $1 ~ /^[0-9]+$/ { split($0, a, ":"); n = split(a[2], ids, " "); cur = 0
        for (i = 1; i <= n; i++) if (ids[i] == loc) cur = 1
        if (cur) { v = a[1]; gsub(/ +/, " ", v); sub(/^ /, "", v); printf "%s%s", sep, v; sep = "\n" }
        next }
    s && cur { l = $0; sub(/^ +/, "", l); printf " %s", l }' <<<"$raw")
check "one stack in two scopes: allocations unlabelled, in-use by scope ($P:$line)" \
    "3 2300 0 0
0 0 2 2000 tag:[parse] thread:[2 (alpha)]
0 0 1 300 tag:[io] thread:[2 (alpha)]" "$stack_samples"
check "totals as the site counters: allocated = in use (all live)" \
    "$(total "$work/p.pb.gz" alloc_space)" "$(total "$work/p.pb.gz" inuse_space)"

# Sampled: the same labels (the values are estimates).
(cd "$work" && timeout 60 env LD_PRELOAD="$prof" MEMTRACE_INTERVAL_MS=0 MEMTRACE_SAMPLE=16 \
    MEMTRACE_SAMPLE_SEED=1 MEMTRACE_PPROF="$work/s.pb.gz" "$prog" >/dev/null 2>"$work/s.err")
RC=$?
status "sampled" 0
check "sampled: the tag labels" "io parse" "$(labels "$work/s.pb.gz" inuse_space tag | cut -d' ' -f2 | tr '\n' ' ' | sed 's/ $//')"
check "sampled: the threads' labels" "2 (alpha) 3 (beta)" \
    "$(labels "$work/s.pb.gz" inuse_space thread | grep -oE '[0-9]+ \((alpha|beta)\)$' | tr '\n' ' ' | sed 's/ $//')"

finish perf_profile_labels
