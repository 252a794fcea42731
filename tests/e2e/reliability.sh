#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
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
    if [ $nrc = 126 ] || [ $nrc = 127 ]; then # not built, not installed
        fail "$name" "the command did not run natively (exit $nrc): $*"
        return
    fi
    local lib
    for lib in "$tracer" "$profiler"; do
        local variant=tracer
        [ "$lib" = "$profiler" ] && variant=profiler
        timeout 600 env LD_PRELOAD="$lib" MEMTRACE_OUTPUT=/dev/null "$@" >"$work/traced.out" \
            2>"$work/traced.err"
        local trc=$?
        # Redzones and the quarantine are on by default: no false report.
        if grep -qE '^memtrace: (heap-buffer-overflow|heap-buffer-underflow|write-after-free|use-after-free)' \
            "$work/traced.err"; then
            fail "$name under $variant" "a heap error report: $(grep -m1 '^memtrace: ' "$work/traced.err")"
        elif [ $trc = $nrc ] && cmp -s "$work/native.out" "$work/traced.out"; then
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

# fork from a signal handler that interrupts malloc/realloc/free (and so
# memtrace's own critical sections) in a single-threaded program. The
# profiler runs without its reporter thread (MEMTRACE_INTERVAL_MS=0): in a
# multi-threaded process glibc's own fork handler waits for the arena lock
# the interrupted malloc holds (doc/limits.adoc).
expect_rc "fork from a signal handler, 300 times, single-threaded (libmemtrace)" 0 \
    env LD_PRELOAD="$tracer" "$tests/signal_fork"
expect_rc "fork from a signal handler, 300 times, single-threaded (libmemtrace-profiler)" 0 \
    env LD_PRELOAD="$profiler" MEMTRACE_INTERVAL_MS=0 MEMTRACE_OUTPUT=/dev/null "$tests/signal_fork"
# The same while the live total keeps rising over 1,024 stacks: the
# profiler samples the peak profile in this thread under its report lock,
# and the fork handler used to wait for it (a hang in about 4 runs of 10;
# three runs here).
for run in 1 2 3; do
    expect_rc "fork from a signal handler while the peak rises, run $run (libmemtrace-profiler)" 0 \
        timeout 60 env LD_PRELOAD="$profiler" MEMTRACE_INTERVAL_MS=0 MEMTRACE_OUTPUT=/dev/null \
        "$tests/signal_fork" grow
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
# A rule learnt from a library is forgotten when it is unloaded: libcfi_b.so,
# loaded where libcfi_a.so was, returns from malloc to the same offset under
# another rule (tests/progs/dl_cfi.c). Its block's caller must be right.
# Without the quarantine: freed addresses not reused spread the blocks over
# more of the live table's shards, whose first mappings would then take the
# unloaded library's place.
out=$(env LD_PRELOAD="$tracer" MEMTRACE_QUARANTINE=0 "$tests/dl_cfi" 2>&1); rc=$?
cfi_line=$(grep -n 'SITE:b' "$root/tests/progs/dl_cfi.c" | cut -d: -f1)
if [ $rc = 0 ] && printf '%s\n' "$out" | grep -q "^  #1 call_from at tests/progs/dl_cfi.c:$cfi_line:" &&
   printf '%s\n' "$out" | grep -q "^  #2 main at tests/progs/dl_cfi.c:"; then
    pass "unwind=cfi: rules of an unloaded library are not used for the one loaded in its place"
else
    fail "unwind=cfi after dlclose" "exit $rc: $(printf '%s' "$out" | head -8 | tr '\n' '|')"
fi
# A thread whose first allocation is on a fiber keeps the bounds of its
# own stack: only the fiber's two captures fall back.
fallbacks=$(env LD_PRELOAD="$tracer" "$tests/regressions" threadfiber 2>&1)
if [ "$fallbacks" = "unwind fallbacks: 2" ]; then
    pass "unwind=cfi: a thread that first allocates on a fiber unwinds its own stack itself"
else
    fail "unwind=cfi: a thread that first allocates on a fiber" "printed '$fallbacks', not 'unwind fallbacks: 2'"
fi
# Off the thread's stack, above it: the walk gives up (regressions
# fiberabove; its bounds check wrapped and it read past that stack).
LD_PRELOAD="$tracer" "$tests/regressions" fiberabove; rc=$?
if [ $rc = 0 ]; then
    pass "unwind=cfi: malloc on a stack mapped above the thread's own"
elif [ $rc = 3 ]; then
    pass "unwind=cfi: malloc on a stack above the thread's own: not tested (no room for the mapping)"
else
    fail "unwind=cfi: malloc on a stack above the thread's own" "exit $rc"
fi
# A library glibc unloads itself (an iconv module), then a smaller one
# loaded inside its old span that allocates: the unwinder must not use what
# it learnt of the first (tests/progs/gconv_unload.c). Without address
# randomization (setarch -R, where the machine allows it) the layout that
# crashed is the same every run.
norand=""
setarch -R true 2>/dev/null && norand="setarch -R"
gconv_bad=0
for i in 1 2 3; do
    out=$(GCONV_PATH="$tests/gconv" $norand env LD_PRELOAD="$tracer" "$tests/gconv_unload" 2>&1)
    rc=$?
    [ $rc = 0 ] && [ "$out" = "gconv_unload: done" ] || { gconv_bad=$((gconv_bad + 1)); gconv_last="exit $rc: $out"; }
done
if [ $gconv_bad = 0 ]; then
    pass "unwind=cfi: a library unloaded by glibc itself, then another in its place (3 runs${norand:+, $norand})"
else
    fail "unwind=cfi after glibc's own unload" "$gconv_bad of 3 runs: $gconv_last"
fi
# The default unwinder gives up off the thread's stack: the fiber's malloc
# and free are captured by libunwind, and counted.
fallbacks=$(env LD_PRELOAD="$tracer" "$tests/regressions" fiber 2>&1)
if [ "$fallbacks" = "unwind fallbacks: 2" ]; then
    pass "unwind=cfi: a fiber's malloc and free fall back to libunwind, counted by memtrace_get_stats"
else
    fail "unwind=cfi: fallbacks on a fiber stack" "printed '$fallbacks', not 'unwind fallbacks: 2'"
fi
for lib in "$tracer" "$profiler"; do
    v=$(basename "$lib" .so)
    expect_rc "unwind=fp: first allocation inside pthread_getattr_np does not deadlock ($v)" 0 \
        env LD_PRELOAD="$lib" MEMTRACE_UNWIND=fp MEMTRACE_OUTPUT=/dev/null "$tests/regressions" getattr
    expect_rc "unwind=fp: malloc with rbp = -16 does not fault ($v)" 0 \
        env LD_PRELOAD="$lib" MEMTRACE_UNWIND=fp MEMTRACE_OUTPUT=/dev/null "$tests/regressions" wildrbp
done
timeout 60 env LD_PRELOAD="$tracer" MEMTRACE_FREED=0 "$tests/regressions" threadname \
    2>"$work/tname.err"
rc=$?
line=$(grep -n 'return malloc(77);' "$root/tests/progs/regressions.c" | cut -d: -f1)
if [ $rc = 0 ] && grep -q "^regressions threadname: pthread_t reused" "$work/tname.err" &&
    grep -qE "^memtrace: 0x[0-9a-f]+: start of a 77-byte block allocated by thread [0-9]+ \(allocation #[0-9]+\)\$" \
        "$work/tname.err" &&
    grep -qE "^  #0 allocates at (.*/)?tests/progs/regressions.c:$line:" "$work/tname.err"; then
    pass "a name given to a thread that exited unregistered does not pass to its pthread_t's next owner"
else
    fail "thread name of a reused pthread_t" "exit $rc; $(head -3 "$work/tname.err")"
fi
timeout 60 env LD_PRELOAD="$profiler" MEMTRACE_FAULT_MAP=40 "$tests/regressions" freeall \
    2>"$work/freeall.err"
if grep -q "^memtrace: exit report.*; 0 bytes still live in 0 blocks" "$work/freeall.err"; then
    pass "profiler: blocks freed after recording stopped leave the totals"
else
    fail "profiler after a stop" "$(grep -m1 'exit report' "$work/freeall.err")"
fi

# ---------------------------------------------------------------- API corners
# Without redzones every answer is glibc's; with them (the default) every
# answer but malloc_usable_size's, which is the size asked for.
same_as_native "API corners against glibc (MEMTRACE_REDZONE=0)" env MEMTRACE_REDZONE=0 \
    "$tests/api_corners"
"$tests/api_corners" 2>/dev/null |
    sed -E 's/^(malloc_usable_size\(malloc\(100\)\) +)[0-9]+$/\1100/' >"$work/corners.want"
for lib in "$tracer" "$profiler"; do
    timeout 60 env LD_PRELOAD="$lib" MEMTRACE_OUTPUT=/dev/null "$tests/api_corners" \
        >"$work/corners.out" 2>/dev/null
    rc=$?
    if [ $rc = 0 ] && cmp -s "$work/corners.want" "$work/corners.out"; then
        pass "API corners with redzones ($(basename "$lib" .so)): glibc's answers, malloc_usable_size(malloc(100)) = 100"
    else
        fail "API corners with redzones ($(basename "$lib" .so))" "exit $rc; $(diff "$work/corners.want" "$work/corners.out" | head -4 | tr '\n' ' ')"
    fi
done
# memtrace_get_stats' ABI (tests/progs/stats_abi.c): the first header's
# 40-byte struct, a newer header's and this one's, each followed by a
# canary that must survive; unknown fields zeroed, the bytes filled said.
for lib in "$tracer" "$profiler"; do
    v=$(basename "$lib" .so)
    timeout 60 env LD_PRELOAD="$lib" MEMTRACE_OUTPUT=/dev/null "$tests/stats_abi" >"$work/abi.out" 2>&1
    rc=$?
    if [ $rc = 0 ] && [ "$(grep -c ': ok$' "$work/abi.out")" = 11 ] && ! grep -q WRONG "$work/abi.out"; then
        pass "struct memtrace_stats of the first, a newer and this header: no byte past it written, 11 checks ($v)"
    else
        fail "struct memtrace_stats ABI ($v)" "exit $rc: $(grep -v ': ok$' "$work/abi.out" | head -3 | tr '\n' ' ')"
    fi
done

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

# ---------------------------------------------------------------- libraries replaced
# liba (no debug information) unloaded, libb loaded at its address, then
# unloaded too; dlopen'ed by relative paths. Exit 134 was libdwfl's removed
# callback freeing garbage; 3, libdebuginfod/libcurl loaded into the process.
# The layout is the address space's randomization's: with libdw loaded by
# the constructor (base/lazy_libs.h), 9 of 40 runs named the unloaded
# library's frame after a module 4 GiB below it (libdwfl's lookup,
# mt_sym_addrmodule), so each library runs it 16 times (about 3 s) and
# the first wrong run fails it: passed 16 times by chance at most 2%.
b_line=$(site_line tests/progs/dl_b.c b_alloc)
for lib in "$tracer" "$profiler"; do
    v=$(basename "$lib" .so)
    for round in $(seq 1 16); do
        # (MEMTRACE_QUARANTINE=0: as dl_cfi's above)
        (cd "$root" && timeout 120 env LD_PRELOAD="$lib" MEMTRACE_FREED=0 MEMTRACE_OUTPUT=/dev/null \
            MEMTRACE_QUARANTINE=0 DEBUGINFOD_URLS=http://127.0.0.1:9 build/tests/dl_reuse build/tests) \
            >"$work/reuse.out" 2>"$work/reuse.err"
        rc=$?
        frames=$(grep -E '^  #0 ' "$work/reuse.err" | sed -E 's/:[0-9]+ / /; s/:[0-9]+$//')
        if [ $rc = 0 ] && grep -q "libdl_b.so at $(sed -n 's/.*libdl_a.so at //p' "$work/reuse.out")\$" \
            "$work/reuse.out" && echo "$frames" | sed -n 1p | grep -q '^  #0 a_alloc in libdl_a.so+0x[0-9a-f]*$' &&
            echo "$frames" | sed -n 2p | grep -qE "^  #0 b_alloc at (.*/)?tests/progs/dl_b.c:$b_line\$" &&
            echo "$frames" | sed -n 3p |
                grep -qE "^  #0 b_alloc at (.*/)?tests/progs/dl_b.c:$b_line \(library unloaded since\)\$"; then
            [ "$round" = 16 ] &&
                pass "library replaced at the same address: a_alloc, then b_alloc at dl_b.c:$b_line, then unloaded ($v, 16 runs)"
        else
            fail "library replaced at the same address ($v, run $round)" "exit $rc; $(cat "$work/reuse.out") $frames"
            break
        fi
    done
done

# ---------------------------------------------------------------- SIGPIPE
# Reports to a stderr pipe whose reader is gone fail with EPIPE; the program
# is not killed by SIGPIPE (exit 141 before) and exits as it would have.
{ sleep 0.3; env LD_PRELOAD="$profiler" "$tests/profile_sites" demand; echo $? >"$work/sigpipe.rc"; } \
    2>&1 >/dev/null | true
rc=$(cat "$work/sigpipe.rc")
if [ "$rc" = 0 ]; then
    pass "profiler reports into a pipe with no reader: no SIGPIPE, exit 0"
else
    fail "profiler reports into a closed pipe" "exit $rc, want 0 (141 = SIGPIPE)"
fi

# ---------------------------------------------------------------- ulimit -v
# Under an address-space limit of about 2 GB the internal heap reserves a
# quarter of it instead of 4 GiB, and says so; print_trace and the profiler's
# totals work as without the limit.
limit_msg="memtrace: the address-space limit (ulimit -v) is 1953 MiB: memtrace's internal heap reserves 488 MiB instead of 4096 MiB"
(ulimit -v 2000000; cd "$root" && timeout 120 env LD_PRELOAD="$tracer" MEMTRACE_FREED=0 \
    build/tests/dl_reuse build/tests) >/dev/null 2>"$work/ulimit.err"
rc=$?
if [ $rc = 0 ] && grep -qxF "$limit_msg" "$work/ulimit.err" &&
    grep -qE "^  #0 b_alloc at (.*/)?tests/progs/dl_b.c:$b_line:" "$work/ulimit.err"; then
    pass "ulimit -v 2000000: print_trace resolves frames, the smaller reservation said"
else
    fail "ulimit -v, tracer" "exit $rc; $(head -3 "$work/ulimit.err")"
fi
(ulimit -v 2000000; timeout 120 env LD_PRELOAD="$profiler" "$tests/profile_sites" demand) \
    >/dev/null 2>"$work/ulimit.err"
rc=$?
if [ $rc = 0 ] && grep -qxF "$limit_msg" "$work/ulimit.err" && grep -qE \
    "^memtrace: exit report, .*: peak 141000 bytes live at [0-9]+ ms; 2554 bytes still live in 12 blocks at 2 sites, largest last\$" \
    "$work/ulimit.err" && grep -qE \
    "^  #0 alloc_small at (.*/)?tests/progs/profile_sites.c:$(site_line tests/progs/profile_sites.c small):" \
    "$work/ulimit.err"; then
    pass "ulimit -v 2000000: profiler exit report 2554 bytes in 12 blocks at 2 sites, peak 141000, symbolized"
else
    fail "ulimit -v, profiler" "exit $rc; $(grep -m2 'memtrace:' "$work/ulimit.err")"
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
# Every MEMTRACE_* variable doc/settings.adoc documents, with an empty, negative,
# non-numeric and huge value: the program runs unchanged, and the numeric
# ones warn, naming the variable. In the scratch directory: a path setting
# (MEMTRACE_PPROF, which the tracer library writes) makes files named after
# the values.
vars=$(grep -oE '^\| `MEMTRACE_[A-Z_]+`' "$root/doc/settings.adoc" | tr -d '|` ' | sort -u)
numeric=" MEMTRACE_DEPTH MEMTRACE_FREED MEMTRACE_INTERVAL_MS MEMTRACE_TOP MEMTRACE_EXIT_TOP MEMTRACE_FAULT_MAP "
bad_settings=0
for var in $vars; do
    for value in "" "-3" "banana" "99999999999999999999999"; do
        out=$(cd "$work" && timeout 60 env "$var=$value" LD_PRELOAD="$tracer" "$tests/sites" \
              2>"$work/set.err")
        rc=$?
        warned=1
        case "$numeric" in
            *" $var "*) grep -q "^memtrace: $var=\"$value\"" "$work/set.err" || warned=0 ;;
        esac
        if [ "$var" = MEMTRACE_UNWIND ]; then
            grep -q "^memtrace: MEMTRACE_UNWIND=\"$value\" is not one of" "$work/set.err" || warned=0
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
same_as_native "python3" python3 "$root/tests/progs/dicts.py" 200000
same_as_native "python3 with PYTHONMALLOC=malloc" env PYTHONMALLOC=malloc python3 "$root/tests/progs/dicts.py" 200000
same_as_native "sqlite3, 200,000 rows in memory" sqlite3 :memory: ".read $root/tests/progs/rows.sql"
same_as_native "g++ compile" sh -c "g++ -O2 -c '$root/tests/progs/sites_cxx.cpp' -o '$work/cxx.o' && sha256sum < '$work/cxx.o'"
# A link runs ld with the LTO plugin, which it dlcloses before exiting: the
# profiler's exit report then symbolizes after a dlclose.
same_as_native "gcc compile and link, then run" sh -c "gcc -O2 -pthread -o '$work/linked' \
    '$root/tests/progs/sites.c' -ldl && sha256sum < '$work/linked' && '$work/linked' | wc -l"
# Rust's std asks for the main thread's stack bounds first thing (inside
# pthread_getattr_np, which allocates): the fp unwinder must not ask again.
same_as_native "Rust program (Debian rustc), 4 threads, MEMTRACE_UNWIND=fp" \
    env MEMTRACE_UNWIND=fp "$tests/rust_threads"
same_as_native "node" node -e 'const m = new Map(); for (let i = 0; i < 100000; i++) m.set("k" + i, [i]);
    console.log(m.size, JSON.stringify([...m.keys()].slice(-3)))'
# A user namespace needs a single-threaded caller: the profiler starts its
# reporter thread only when a setting needs one.
same_as_native "unshare -U -r with MEMTRACE_INTERVAL_MS=0" \
    env MEMTRACE_INTERVAL_MS=0 unshare -U -r sh -c 'id -u; echo in a user namespace' 
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
