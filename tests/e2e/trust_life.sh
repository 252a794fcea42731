#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Trust: the traced program's life: exit
# with a thread in fgets(stdin), a signal handler that allocates, the free
# of a read-only block, forked children's exit status, gcore's size; and
# real programs under the defaults and --check. One PASS/FAIL line per
# check, "trust_life: N passed, N failed" last.
set -u
. "$(dirname "$0")/lib.sh"
tracer=$build/libmemtrace.so
profiler=$build/libmemtrace-profiler.so
memtrace=$build/memtrace
ulimit -S -c 0 # no core of a crash here: gcore's is asked for

# ---------------------------------------------------------------- exit status, stdin locked
# A thread waits in fgets(stdin) (a FIFO opened read-write: no data, never
# an end), holding stdin's lock; main loses a block (leak) or overflows one
# (error) and returns 0. memtrace's status must not wait on that lock.
mkfifo "$work/fifo"
for mode in leak error; do
    want=23 # MEMTRACE_LEAK_EXITCODE's default
    [ $mode = error ] && want=1 # MEMTRACE_ERROR_EXITCODE's default
    timeout 60 env LD_PRELOAD="$tracer" MEMTRACE_LEAK_CHECK=1 "$tests/trust_life_stdin_exit" \
        $mode 0<>"$work/fifo" >"$work/out" 2>"$work/err"
    RC=$?
    status "exit with $mode found while a thread waits in fgets(stdin) (124: hung)" $want
    check "exit with $mode found: the program's buffered stdout written" "main done" \
        "$(cat "$work/out")"
done
timeout 60 env LD_PRELOAD="$tracer" MEMTRACE_LEAK_CHECK=1 "$tests/trust_life_stdin_exit" \
    leak 0<>"$work/fifo" >/dev/null 2>"$work/err"
has "exit with leak found: the leak reported, at its site" "$work/err" \
    "#0 main at $(at tests/progs/trust_life_stdin_exit.c lost)"

# ---------------------------------------------------------------- a signal handler that allocates
# SIGALRM every 200 us, its handler mallocs and frees 32 bytes while main
# allocates in a loop: every entry point is interrupted by an allocating
# handler somewhere, also while its thread holds a table's lock or is
# inside glibc's malloc.
timeout 60 "$tests/trust_life_sigalloc" 3 >"$work/native.out" 2>&1
nrc=$?
for lib in "$tracer" "$profiler"; do
    v=$(basename "$lib" .so)
    for q in default 0; do
        qenv=()
        [ $q = 0 ] && qenv=(MEMTRACE_QUARANTINE=0)
        [ "$lib" = "$profiler" ] && qenv+=(MEMTRACE_OUTPUT=/dev/null)
        timeout 120 env LD_PRELOAD="$lib" "${qenv[@]}" \
            "$tests/trust_life_sigalloc" 3 >"$work/out" 2>"$work/err"
        RC=$?
        name="allocating signal handler for 3 s ($v, quarantine $q)"
        if [ $RC = $nrc ] && [ $nrc = 0 ] && cmp -s "$work/native.out" "$work/out"; then
            pass "$name: exit 0, stdout as native"
        else
            fail "$name" "exit $RC (native $nrc, 124 = hung, 134 = glibc abort): $(cat "$work/out") \
                $(tail -2 "$work/err" | tr '\n' ' ')"
        fi
    done
done

# ---------------------------------------------------------------- free of a read-only block
for lib in "$tracer" "$profiler"; do
    v=$(basename "$lib" .so)
    timeout 60 env LD_PRELOAD="$lib" MEMTRACE_OUTPUT=/dev/null "$tests/trust_life_readonly" \
        >"$work/out" 2>"$work/err"
    RC=$?
    status "free of a 1 MiB block made PROT_READ ($v, defaults; 139 = SIGSEGV)" 0
    check "free of a read-only block ($v): the program went on" "freed" "$(cat "$work/out")"
done

# ---------------------------------------------------------------- forked children's status
timeout 60 env LD_PRELOAD="$tracer" "$tests/trust_life_fork_status" >"$work/out" 2>"$work/err"
RC=$?
status "a parent with a heap error: its own status" 1
check "its 5 forked children, no error of their own: each exits 0" \
    "child 0: 0,child 1: 0,child 2: 0,child 3: 0,child 4: 0" "$(paste -sd, "$work/out")"
check "the parent's heap error reported once" 1 \
    "$(grep -c '^memtrace: heap-buffer-overflow' "$work/err")"

# ---------------------------------------------------------------- gcore's size
# The internal heap's 4 GiB reservation stays out of cores; what memtrace
# committed of it (memtrace_print_trace symbolized: libdw's data there)
# stays in, and `memtrace core` answers from the core.
if ! command -v gdb >/dev/null; then
    fail "gcore" "gdb is not installed (make deps)"
else
    env LD_PRELOAD="$tracer" "$tests/trust_life_sleeper" >"$work/sleeper.out" 2>"$work/sleeper.err" &
    sleeper=$!
    for _ in $(seq 100); do
        grep -q '^@@ block' "$work/sleeper.out" && break
        sleep 0.1
    done
    addr=$(addr_of block "$work/sleeper.out")
    # Every mapping of memtrace's that holds something is in a core: none
    # writable is marked "dd" (MADV_DONTDUMP).
    dd=$(awk '/^[0-9a-f]+-[0-9a-f]+ / { m = $0 } /^VmFlags:/ && / dd/ && / wr/ { print m }' \
        "/proc/$sleeper/smaps")
    check "gcore: no writable mapping left out of cores" "" "$dd"
    timeout 120 gdb -q -batch -nx -p "$sleeper" -ex "gcore $work/core" >"$work/gcore.out" 2>&1
    kill "$sleeper" 2>/dev/null
    wait "$sleeper" 2>/dev/null
    if [ ! -f "$work/core" ]; then
        fail "gcore" "no core written: $(tail -3 "$work/gcore.out" | tr '\n' ' ')"
    else
        bytes=$(stat -c %s "$work/core")
        if [ "$bytes" -lt $((200 << 20)) ]; then
            pass "gcore of a traced sleeping program: $((bytes >> 20)) MiB, under 200 MiB"
        else
            fail "gcore of a traced sleeping program" "$((bytes >> 20)) MiB"
        fi
        timeout 120 "$memtrace" core -batch -ex "memtrace $addr" -- "$tests/trust_life_sleeper" \
            "$work/core" >"$work/answer" 2>&1
        has "memtrace core: the block's allocation site from the core" "$work/answer" \
            "#0 make at $(at tests/progs/trust_life_sleeper.c known)"
        rm -f "$work/core"
    fi
fi

# ---------------------------------------------------------------- real programs
# Each installed one: under `memtrace run` and `memtrace run --check`, the
# same stdout and status as native and no memtrace: line on stderr.
real() { # NAME CMD...
    local name=$1 nrc rc arm
    shift
    timeout 300 "$@" >"$work/native.out" 2>/dev/null
    nrc=$?
    for arm in run "run --check"; do
        # shellcheck disable=SC2086
        timeout 600 "$memtrace" $arm "$@" >"$work/traced.out" 2>"$work/traced.err"
        rc=$?
        local said
        said=$(grep '^memtrace: ' "$work/traced.err" | head -3)
        if [ -n "$said" ]; then
            fail "$name under memtrace $arm" "a report: $said"
        elif [ $rc = $nrc ] && cmp -s "$work/native.out" "$work/traced.out"; then
            pass "$name under memtrace $arm: same stdout ($(wc -c <"$work/native.out") bytes), exit $nrc"
        else
            fail "$name under memtrace $arm" "exit $rc (native $nrc); stdout differs: $(diff \
                "$work/native.out" "$work/traced.out" | head -3 | tr '\n' ' ')"
        fi
    done
}
have() { command -v "$1" >/dev/null; }

if have python3; then
    python=$(python3 -c 'import sys; print(sys.executable)') # not a pyenv shim
    real "python3" "$python" -c 'import json
d = {str(i): list(range(i % 10)) for i in range(20000)}
print(len(json.dumps(d)), sum(map(len, d.values())))'
fi
have perl && real "perl" perl -e 'my %h; $h{$_} = [1 .. ($_ % 10)] for 1 .. 20000;
my $n = 0; $n += @$_ for values %h; print scalar(keys %h), " $n\n"'
have sqlite3 && real "sqlite3 :memory:" sqlite3 :memory: 'create table t(a, b);
with recursive c(x) as (select 1 union all select x + 1 from c where x < 20000)
insert into t select x, printf("%08d", x * 7) from c;
create index tb on t(b); select count(*), sum(length(b)), max(b) from t;'
if have git; then
    mkdir -p "$work/git"
    printf 'hello\n' >"$work/git/file"
    real "git --version" git --version
    real "git init" git init -q "$work/git"
    real "git hash-object" git -C "$work/git" hash-object file
fi
cat >"$work/small.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
int main(void)
{
    char *p = malloc(64);
    snprintf(p, 64, "%d", 6 * 7);
    puts(p);
    free(p);
    return 0;
}
EOF
cat >"$work/small.cpp" <<'EOF'
#include <iostream>
#include <map>
#include <string>
int main()
{
    std::map<std::string, int> m;
    for (int i = 0; i < 1000; i++)
        m["k" + std::to_string(i)] = i;
    std::cout << m.size() << '\n';
}
EOF
if have gcc; then
    real "gcc compiling a small file" gcc -O2 -o "$work/small" "$work/small.c"
    check "gcc: what it built under memtrace --check runs" 42 "$("$work/small")"
fi
if have g++; then
    real "g++ compiling a small file" g++ -O2 -o "$work/smallxx" "$work/small.cpp"
    check "g++: what it built under memtrace --check runs" 1000 "$("$work/smallxx")"
fi
have node && real "node" node -e 'const m = new Map();
for (let i = 0; i < 20000; i++) m.set("k" + i, [i]);
console.log(m.size)'
have ruby && real "ruby" ruby -e 'h = {}; 20000.times { |i| h["k#{i}"] = [i] }; puts h.size'

finish trust_life
