#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Tag scopes (memtrace_tag_push/pop, MEMTRACE_TAGS, `memtrace tags`), on
# tests/progs/tags.cpp: built without -lmemtrace, it runs as is (every
# call returns 0) and under the library; its scopes' counts, known by
# construction (the program's comment), are checked exactly against
# PATH.json, per thread (a free from another thread counted against the
# allocating scope) and merged; dot -Tsvg renders PATH.dot; the refused
# calls each get their one line and change nothing; the push cache is
# checked, not trusted; `memtrace tags` in gdb says the same live and on a
# core. A few seconds.
set -u
. "$(dirname "$0")/lib.sh"
lib=${MEMTRACE_LIB:-$build/libmemtrace.so}
prog=$tests/tags
helper=$build/memtrace.py

# ---------------------------------------------------------------- without memtrace
out=$(cd "$work" && timeout 30 "$prog" 2>&1)
check "without memtrace: runs as ever" "done 10" "$out"
out=$(cd "$work" && timeout 30 "$prog" bad 2>&1 | tr '\n' ' ')
check "without memtrace: every call returns 0, nothing said" \
    "pop-empty 0 push-null 0 push-empty 0 push-long 0 push-47 0 pop-47 0 deep 100 popped 100 " "$out"

# ---------------------------------------------------------------- the files
(cd "$work" && timeout 30 env LD_PRELOAD="$lib" MEMTRACE_TAGS="$work/t" MEMTRACE_PPROF="$work/exit.pb.gz" "$prog" \
    >"$work/run.out" 2>"$work/run.err")
RC=$?
status "under memtrace" 0
check "under memtrace: nothing on stderr" "" "$(cat "$work/run.err")"

# One line per scope: THREAD PATH then self and total as bytes/blocks/allocs/frees.
flat() { # JSON-FILE
    python3 - "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
def c(x): return "%d/%d/%d/%d" % (x["bytes"], x["blocks"], x["allocs"], x["frees"])
def walk(who, n, path):
    if path:
        print(who, path, "self", c(n["self"]), "total", c(n["total"]))
    for k in n["children"]:
        walk(who, k, path + "/" + k["name"])
for t in d["threads"]:
    walk(t["name"] or "thread%d" % t["thread"], t["root"], "")
walk("merged", d["merged"], "")
EOF
}
if [ -s "$work/t.json" ] && flat "$work/t.json" >"$work/flat" 2>"$work/flat.err"; then
    pass "PATH.json written, and JSON"
else
    fail "PATH.json" "$(ls "$work"; cat "$work/flat.err" 2>/dev/null)"
fi
check "alpha: io, 2 of its 4 blocks freed by main" \
    "alpha /io self 100/2/4/2 total 107/3/5/2" "$(grep '^alpha /io ' "$work/flat")"
check "alpha: io/read" "alpha /io/read self 7/1/1/0 total 7/1/1/0" \
    "$(grep '^alpha /io/read ' "$work/flat")"
check "beta: io (new[], delete[], the RAII scope)" "beta /io self 120/2/3/1 total 120/2/3/1" \
    "$(grep '^beta /io ' "$work/flat")"
check "main: main_work" "thread1 /main_work self 200/2/3/1 total 7200/5/7/2" \
    "$(grep '^thread1 /main_work ' "$work/flat")"
check "main: main_work/parse (a realloc: its old block freed)" \
    "thread1 /main_work/parse self 7000/3/4/1 total 7000/3/4/1" \
    "$(grep '^thread1 /main_work/parse ' "$work/flat")"
check "merged: io of both threads" "merged /io self 220/4/7/3 total 227/5/8/3" \
    "$(grep '^merged /io ' "$work/flat")"
check "merged: every scope once" "4" "$(grep -c '^merged ' "$work/flat")"

# Sampled or not, every allocation counts in its scope: with almost every
# block unsampled (its tag id in its trailer) the counts are the full
# mode's, exactly.
(cd "$work" && timeout 30 env LD_PRELOAD="$lib" MEMTRACE_TAGS="$work/ts" MEMTRACE_SAMPLE=100000000 \
    MEMTRACE_SAMPLE_SEED=7 "$prog" >/dev/null 2>"$work/sampled.err")
RC=$?
status "sampled" 0
if [ -s "$work/ts.json" ] && flat "$work/ts.json" >"$work/flat.sampled" 2>>"$work/sampled.err"; then
    check "sampled: every scope's counts as in the full mode" "$(cat "$work/flat")" \
        "$(cat "$work/flat.sampled")"
else
    fail "sampled: PATH.json" "$(cat "$work/sampled.err")"
fi

if timeout 30 dot -Tsvg "$work/t.dot" >"$work/t.svg" 2>"$work/dot.err" &&
    grep -q '<svg' "$work/t.svg" && grep -q '>main_work<' "$work/t.svg"; then
    pass "dot -Tsvg renders PATH.dot"
else
    fail "dot -Tsvg" "$(cat "$work/dot.err"; head -c 300 "$work/t.dot")"
fi
# Fill by self bytes, white to red at the most of the graph: alpha's and
# beta's io hold all their threads' bytes (alpha's io, read, beta's io in
# the file's order); alpha's read 7 of io's 100.
check "DOT: fill by self bytes" '#ff0000 #ffeeee #ff0000' \
    "$(grep -E '^  t[0-9]+ \[label="(io|read)"' "$work/t.dot" | grep -o '#ff[0-9a-f]*' | tr '\n' ' ' | sed 's/ $//')"

# The profiler writes the files with a report too (PATH.1.json for report
# 1), and at exit.
(cd "$work" && timeout 30 env LD_PRELOAD="$build/libmemtrace-profiler.so" MEMTRACE_INTERVAL_MS=0 \
    MEMTRACE_TAGS="$work/p" "$prog" report >/dev/null 2>"$work/prof.err")
if [ -s "$work/p.1.json" ] && flat "$work/p.1.json" >"$work/p1.flat" 2>&1 &&
    flat "$work/p.json" >"$work/p.flat" 2>&1; then
    pass "profiler: PATH.1.json with report 1, PATH.json at exit"
else
    fail "profiler: PATH.1.json" "$(ls "$work"; cat "$work/p1.flat")"
fi
check "profiler: report 1's merged io" "merged /io self 220/4/7/3 total 227/5/8/3" \
    "$(grep '^merged /io ' "$work/p1.flat")"
check "profiler: report 1's .dot" "yes" "$([ -s "$work/p.1.dot" ] && echo yes)"

# ---------------------------------------------------------------- refused calls
(cd "$work" && timeout 30 env LD_PRELOAD="$lib" MEMTRACE_TAGS="$work/bad" "$prog" bad \
    >"$work/bad.out" 2>"$work/bad.err")
check "refused calls return -1, the others 0; 64 scopes deep at most" \
    "pop-empty -1 push-null -1 push-empty -1 push-long -1 push-47 0 pop-47 0 deep 64 popped 64 " \
    "$(tr '\n' ' ' <"$work/bad.out")"
check "refused calls: one line each" \
    "memtrace: memtrace_tag_pop: no scope entered on this thread; nothing changed
memtrace: memtrace_tag_push(NULL): a scope needs a name; nothing changed
memtrace: memtrace_tag_push(\"\"): a scope needs a name; nothing changed
memtrace: memtrace_tag_push: name longer than 47 bytes; nothing changed
memtrace: memtrace_tag_push: scopes nested more than 64 deep; nothing changed
memtrace: memtrace_tag_pop: no scope entered on this thread; nothing changed" \
    "$(cat "$work/bad.err")"
flat "$work/bad.json" >"$work/bad.flat" 2>&1
check "refused calls changed nothing: the 47-byte scope and 64 nested d's only" \
    "65 1" "$(grep -c '^thread1 ' "$work/bad.flat") $(grep -c '^thread1 /x' "$work/bad.flat")"

# ---------------------------------------------------------------- the push cache
# A push found in the thread's cache is checked (the node's parent and
# name): a buffer rewritten between pushes, and the same name under more
# parents than the cache has slots (the program's comment).
(cd "$work" && timeout 30 env LD_PRELOAD="$lib" MEMTRACE_TAGS="$work/cache" "$prog" cache \
    >"$work/cache.out" 2>"$work/cache.err")
RC=$?
status "push cache: runs" 0
check "push cache: its 202 blocks, nothing on stderr" "cache 202" "$(cat "$work/cache.out" "$work/cache.err")"
flat "$work/cache.json" >"$work/cache.flat" 2>&1
check "push cache: one buffer as a, then as b: two nodes" \
    "thread1 /a self 11/1/1/0 total 11/1/1/0
thread1 /b self 13/1/1/0 total 13/1/1/0" "$(grep -E '^thread1 /(a|b) ' "$work/cache.flat" | sort)"
for i in $(seq 0 99); do
    echo "thread1 /p$i/c self $((2 * i + 2))/2/2/0 total $((2 * i + 2))/2/2/0"
done | sort >"$work/cache.want"
check "push cache: c under each of 100 parents counts its own 2 blocks (the lines that differ)" "" \
    "$(grep '^thread1 /p[0-9]*/c ' "$work/cache.flat" | sort | diff "$work/cache.want" - | grep '^[<>]' | head -6)"

# ---------------------------------------------------------------- two copies
# Linked with -lmemtrace and run under the preloaded profiler: the linked
# copy stands aside, although libstdc++'s initializer reaches its malloc
# (the profiler's next malloc) before its own constructor runs. One set of
# files with the counts above, one exit report, and no word from the copy
# aside (no "malloc here is", no warning about the profiler's settings, no
# false double free from two copies tracing the same blocks).
(cd "$work" && timeout 30 env LD_PRELOAD="$build/libmemtrace-profiler.so" MEMTRACE_TAGS="$work/two" \
    MEMTRACE_INTERVAL_MS=0 "$tests/tags_linked" >"$work/copies.out" 2>"$work/copies.err")
RC=$?
status "two copies: runs" 0
check "two copies: one set of files" "two.dot two.json" "$(cd "$work" && echo two.*)"
flat "$work/two.json" >"$work/two.flat" 2>&1
check "two copies: every scope's counts as with one copy" "$(cat "$work/flat")" "$(cat "$work/two.flat")"
check "two copies: one exit report, nothing from the copy aside" "1 0" \
    "$(grep -c '^memtrace: exit report' "$work/copies.err") $(grep -c -E 'malloc here is|double free|no effect in' "$work/copies.err")"

# ---------------------------------------------------------------- gdb, live and core
gdb_tags() { # OUT [core]
    if [ $# -gt 1 ]; then
        timeout 120 gdb -q -batch -nx "$prog" "$work/tags.core" -ex "source $helper" \
            -ex "memtrace tags" -ex "memtrace tags json" >"$1" 2>&1
    else
        (cd "$work" && timeout 120 gdb -q -batch -nx -ex "set env LD_PRELOAD=$lib" \
            -ex "break checkpoint" -ex "run" -ex "source $helper" -ex "memtrace tags" \
            -ex "memtrace tags json" -ex "memtrace pprof $work/gdb.pb.gz" \
            -ex "gcore $work/tags.core" -ex "kill" "$prog" >"$1" 2>&1)
    fi
}
# The text trees and the JSON line, without gdb's own lines.
answer() { sed -n '/^memtrace tags: /,/^"merged"/p' "$1"; }
gdb_tags "$work/live.out"
gdb_tags "$work/core.out" core
has "gdb live: alpha's io" "$work/live.out" \
    "    io: 107 bytes in 3 blocks, 5 allocations, 2 frees; self 100 bytes in 2 blocks, 4 allocations, 2 frees"
has "gdb live: merged io" "$work/live.out" \
    "    io: 227 bytes in 5 blocks, 8 allocations, 3 frees; self 220 bytes in 4 blocks, 7 allocations, 3 frees"
has "gdb live: the thread's name" "$work/live.out" 'thread 3 "beta":'
sed -n '/^{"version"/,/^"merged"/p' "$work/live.out" >"$work/live.json"
if flat "$work/live.json" >"$work/live.flat" 2>&1 &&
    grep -q '^merged /main_work/parse self 7000/3/4/1 total 7000/3/4/1$' "$work/live.flat"; then
    pass "gdb live: memtrace tags json"
else
    fail "gdb live: memtrace tags json" "$(cat "$work/live.flat")"
fi
if [ -n "$(answer "$work/live.out")" ] && [ "$(answer "$work/core.out")" = "$(answer "$work/live.out")" ]; then
    pass "gdb core: the same trees as live"
else
    fail "gdb core" "$(diff <(answer "$work/live.out") <(answer "$work/core.out") | head -20)"
fi

# ---------------------------------------------------------------- pprof labels
# The in-use profiles (the tracer's at exit, gdb's `memtrace pprof`) label
# each sample with its tag scope's path and thread: -tagfocus keeps the
# scope's live bytes exactly.
export HOME=$work/home PPROF_TMPDIR=$work/pprof-tmp
mkdir -p "$HOME" "$PPROF_TMPDIR"
focus() { # PROFILE FILTER: the bytes the filter keeps
    timeout 120 go tool pprof -sample_index=inuse_space -unit=B -tagfocus="$2" -top "$1" 2>&1 |
        sed -n 's/^Showing nodes accounting for \([0-9]*\)B,.*/\1/p'
}
for prof in exit gdb; do
    check "pprof ($prof): -tagfocus=tag=^io\$ (both threads' io)" 220 "$(focus "$work/$prof.pb.gz" 'tag=^io$')"
    check "pprof ($prof): -tagfocus=tag=main_work (and parse)" 7200 \
        "$(focus "$work/$prof.pb.gz" 'tag=^main_work')"
    check "pprof ($prof): -tagfocus=thread=alpha" 107 "$(focus "$work/$prof.pb.gz" 'thread=alpha')"
done

finish tags
