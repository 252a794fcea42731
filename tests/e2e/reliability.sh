#!/usr/bin/env bash
# Reliability: stress, fork, unloaded libraries, the API's corners, faults
# inside memtrace, real programs nobody here wrote, and bad input, under both
# builds. One PASS/FAIL line per check, "reliability: N passed, N failed"
# last; exit 1 on any failure.
set -u
. "$(dirname "$0")/lib.sh"
tracer=$build/libmemtrace.so
profiler=$build/libmemtrace-profiler.so

# expect_rc NAME WANT CMD...: the command exits WANT within 300 s (124: hung).
expect_rc() {
    local name=$1 want=$2
    shift 2
    timeout 300 "$@" >"$work/out" 2>"$work/err"
    local rc=$?
    if [ $rc = "$want" ]; then
        pass "$name"
    else
        fail "$name" "exit $rc, want $want (124 = hung); $(tail -3 "$work/err" | tr '\n' ' ')"
    fi
}

# same_as_native NAME CMD...: stdout and exit code under each build equal
# the native run's.
same_as_native() {
    local name=$1
    shift
    timeout 300 "$@" >"$work/native.out" 2>/dev/null
    local nrc=$?
    local lib
    for lib in "$tracer" "$profiler"; do
        local variant=tracer
        [ "$lib" = "$profiler" ] && variant=profiler
        timeout 600 env LD_PRELOAD="$lib" MEMTRACE_OUTPUT=/dev/null "$@" >"$work/traced.out" \
            2>"$work/traced.err"
        local trc=$?
        if [ $trc = $nrc ] && cmp -s "$work/native.out" "$work/traced.out"; then
            pass "$name under $variant: same stdout ($(wc -c <"$work/native.out") bytes), exit $nrc"
        else
            fail "$name under $variant" "exit $trc (native $nrc); stdout differs: $(diff \
                "$work/native.out" "$work/traced.out" | head -3 | tr '\n' ' ') \
                $(tail -2 "$work/traced.err" | tr '\n' ' ')"
        fi
    done
}

# ---------------------------------------------------------------- threads
for lib in "$tracer" "$profiler"; do
    v=$(basename "$lib" .so)
    expect_rc "8 threads x 200,000 operations, patterns intact, exact live count ($v)" 0 \
        env LD_PRELOAD="$lib" MEMTRACE_OUTPUT=/dev/null "$tests/stress_api"
done
expect_rc "live table, stack store, freed ring under ThreadSanitizer" 0 "$tests/tsan_tables"

# ---------------------------------------------------------------- fork
for lib in "$tracer" "$profiler"; do
    v=$(basename "$lib" .so)
    expect_rc "20 forks from a thread while 8 allocate, then fork+exec traced ($v)" 0 \
        env LD_PRELOAD="$lib" MEMTRACE_OUTPUT=/dev/null "$tests/stress_fork"
done

# ---------------------------------------------------------------- found in review
expect_rc "fork while another library's atfork handler allocates" 0 \
    env LD_PRELOAD="$tracer" "$tests/regressions" atfork
expect_rc "profiler: the program's reused descriptors stay its own (parent and child)" 0 \
    env LD_PRELOAD="$profiler" MEMTRACE_SIGNAL=USR2 MEMTRACE_OUTPUT=/dev/null \
    "$tests/regressions" fds "$work/fds.txt"
expect_rc "after recording stopped, 3000 aligned 1 MiB blocks from the real allocator" 0 \
    env LD_PRELOAD="$tracer" MEMTRACE_FAULT_MAP=1 "$tests/regressions" aligned
expect_rc "unwind=fp: malloc on a fiber stack with a wild frame pointer" 0 \
    env LD_PRELOAD="$tracer" MEMTRACE_UNWIND=fp "$tests/regressions" fiber
timeout 60 env LD_PRELOAD="$profiler" MEMTRACE_FAULT_MAP=40 "$tests/regressions" freeall \
    2>"$work/freeall.err"
if grep -q "^memtrace: exit report.*; 0 bytes still live in 0 blocks" "$work/freeall.err"; then
    pass "profiler: blocks freed after recording stopped leave the totals"
else
    fail "profiler after a stop" "$(grep -m1 'exit report' "$work/freeall.err")"
fi

# ---------------------------------------------------------------- API corners
same_as_native "API corners against glibc" "$tests/api_corners"

# ---------------------------------------------------------------- unloaded library, bad input
line=$(site_line tests/progs/dl_sites.c dlopen)
timeout 120 gdb -q -batch -nx -ex "set env LD_PRELOAD=$tracer" -ex "break checkpoint" \
    -ex "run 2>$work/gdb.err" -ex "call print_trace(g_unloaded)" -ex "call print_trace(0)" \
    -ex "call print_trace(g_stack_addr)" -ex "call print_trace((void *)0xdead0000000)" \
    -ex "call print_trace(&g_data[10])" -ex "printf \"@@ %p %p\\n\", g_stack_addr, &g_data[10]" \
    -ex "call print_trace((void *)-1)" -ex continue "$tests/unload" >"$work/gdb.out" 2>&1
if grep -qE "^  #0 dl_make at (.*/)?tests/progs/dl_sites.c:$line:[0-9]+ \(library unloaded since\)\$" \
    "$work/gdb.err"; then
    pass "block from a dlclosed library: dl_sites.c:$line, marked unloaded"
else
    fail "block from a dlclosed library" "$(cat "$work/gdb.err")"
fi
read -r _ stack_addr data_addr < <(grep '^@@ ' "$work/gdb.out")
for want in "memtrace: 0x0: a null pointer, not a heap block" \
            "memtrace: $stack_addr: not a live heap block known to memtrace" \
            "memtrace: 0xdead0000000: not a live heap block known to memtrace" \
            "memtrace: $data_addr: not a live heap block known to memtrace" \
            "memtrace: 0xffffffffffffffff: not a live heap block known to memtrace"; do
    if grep -qxF "$want" "$work/gdb.err"; then pass "bad input: '$want'"; else
        fail "bad input" "no line '$want' in $(cat "$work/gdb.err")"; fi
done
if grep -q "exited normally" "$work/gdb.out" && grep -q "unload: done" "$work/gdb.out"; then
    pass "unload: program runs to a normal exit after the lookups"
else
    fail "unload: normal exit" "$(tail -5 "$work/gdb.out")"
fi

# ---------------------------------------------------------------- faults
# Fail the Nth metadata mapping for every N the run makes: the program's
# output and exit code stay the same, and memtrace says exactly once that it
# stopped recording.
native=$("$tests/sites" 2>/dev/null)
n=1
fault_failures=0
while :; do
    out=$(timeout 60 env MEMTRACE_FAULT_MAP=$n LD_PRELOAD="$tracer" "$tests/sites" \
          2>"$work/fault.err")
    rc=$?
    said=$(grep -c "memtrace: stopped recording at allocation #[0-9]*: could not map" \
        "$work/fault.err")
    [ "$said" = 0 ] && [ $rc = 0 ] && [ "$out" = "$native" ] && break # past the last mapping
    if [ $rc != 0 ] || [ "$out" != "$native" ] || [ "$said" != 1 ]; then
        fault_failures=$((fault_failures + 1))
        echo "  mapping $n: exit $rc, said $said times: $(head -2 "$work/fault.err" | tr '\n' ' ')"
    fi
    n=$((n + 1))
    [ $n -gt 500 ] && break
done
if [ $fault_failures = 0 ] && [ $n -gt 2 ] && [ $n -le 500 ]; then
    pass "each of the $((n - 1)) metadata mappings failing in turn: same output, said once"
else
    fail "metadata mapping faults" "$fault_failures bad runs of $((n - 1))"
fi

# ---------------------------------------------------------------- settings
# Every MEMTRACE_* variable the README documents, with an empty, negative,
# non-numeric and huge value: the program runs unchanged, and the numeric
# ones warn, naming the variable.
vars=$(grep -oE '^\| `MEMTRACE_[A-Z_]+`' "$root/README.adoc" | tr -d '|` ' | sort -u)
numeric=" MEMTRACE_DEPTH MEMTRACE_FREED MEMTRACE_INTERVAL_MS MEMTRACE_TOP MEMTRACE_EXIT_TOP MEMTRACE_FAULT_MAP "
bad_settings=0
for var in $vars; do
    for value in "" "-3" "banana" "99999999999999999999999"; do
        out=$(timeout 60 env "$var=$value" LD_PRELOAD="$tracer" "$tests/sites" \
              2>"$work/set.err")
        rc=$?
        warned=1
        case "$numeric" in
            *" $var "*) grep -q "^memtrace: $var=\"$value\"" "$work/set.err" || warned=0 ;;
        esac
        if [ "$var" = MEMTRACE_UNWIND ]; then
            grep -q "^memtrace: MEMTRACE_UNWIND=\"$value\" is neither" "$work/set.err" || warned=0
        fi
        if [ $rc != 0 ] || [ "$out" != "$native" ] || [ $warned = 0 ]; then
            bad_settings=$((bad_settings + 1))
            echo "  $var='$value': exit $rc, warned $warned: $(head -2 "$work/set.err" | tr '\n' ' ')"
        fi
    done
done
if [ $bad_settings = 0 ] && [ -n "$vars" ]; then
    pass "bad values for $(echo $vars | wc -w) settings: program unchanged, numeric ones warn"
else
    fail "bad settings" "$bad_settings bad runs"
fi

# ---------------------------------------------------------------- real programs
cat >"$work/dicts.py" <<'PY'
d = {}
for i in range(200000):
    d[str(i)] = [i, i * 2, str(i) * 3, {"k": i}]
rows = sorted(d.items(), key=lambda kv: -kv[1][1])[:5]
print(sum(len(v[2]) for v in d.values()), len(d), [k for k, _ in rows])
PY
same_as_native "python3" python3 "$work/dicts.py"
same_as_native "python3 with PYTHONMALLOC=malloc" env PYTHONMALLOC=malloc python3 "$work/dicts.py"
cat >"$work/rows.sql" <<'SQL'
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000)
INSERT INTO t SELECT x, 'name' || x, x * 0.5 FROM c;
CREATE INDEX tv ON t(name);
SELECT count(*), sum(v) FROM t;
SELECT name FROM t WHERE id % 60000 = 0 ORDER BY name;
SELECT substr(name, 1, 5) AS p, count(*) FROM t GROUP BY p ORDER BY 2 DESC LIMIT 3;
SQL
same_as_native "sqlite3, 200,000 rows in memory" sqlite3 :memory: ".read $work/rows.sql"
same_as_native "g++ compile" sh -c "g++ -O2 -c '$root/tests/progs/sites_cxx.cpp' -o '$work/cxx.o' && sha256sum < '$work/cxx.o'"
jq -n '[range(40000) | {id: ., name: "n\(.)", tags: [., (. * 2)]}]' >"$work/big.json"
same_as_native "jq on $(($(wc -c <"$work/big.json") / 1000)) kB of JSON" \
    jq -c '[.[] | select(.id % 7 == 0) | .tags[1]] | add' "$work/big.json"
awk 'BEGIN { print "<root>"; for (i = 0; i < 50000; i++)
             printf "<item id=\"%d\"><name>n%d</name></item>\n", i, i; print "</root>" }' \
    >"$work/big.xml"
same_as_native "xmllint on $(($(wc -c <"$work/big.xml") / 1000)) kB of XML" \
    xmllint --xpath 'count(//item[@id mod 3 = 0])' "$work/big.xml"
same_as_native "gdb itself" gdb -nx -batch -ex 'print 6 * 7' -ex 'python print(sum(range(1000)))'

finish reliability
