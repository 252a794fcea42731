# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by the e2e scripts: paths, a scratch directory removed at exit,
# PASS/FAIL counting and the SITE: marker lookup. A script ends with
# `finish NAME`, which prints "NAME: N passed, N failed" and fails if any did.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$root/build
tests=$build/tests
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1: $2"; }

# Line of the marker "SITE:NAME" (followed by a space or the end of the line)
# in FILE, a path absolute or relative to the project root.
site_line() {
    local file=$1
    [ "${file#/}" = "$file" ] && file=$root/$file
    grep -nE "SITE:$2( |\$)" "$file" | head -1 | cut -d: -f1
}

# "FILE:LINE:" of the marker NAME in FILE.
at() { echo "$1:$(site_line "$1" "$2"):"; }

# The answer about ADDR in FILE: its "memtrace: ADDR:" line and the frame
# lines after it, up to the next line that starts with "memtrace: " or is
# not part of a report.
block_of() {
    awk -v a="memtrace: $1:" 'index($0, a) == 1 { on = 1; print; next }
                              /^memtrace: / || !/^  / { on = 0 } on' "$2"
}

# The address printed as "@@ VAR ADDR" in FILE (the scripts' gdb markers).
addr_of() { awk -v v="$1" '$1 == "@@" && $2 == v { print $3; exit }' "$2"; }

# The leak suites' checks: FILE has, or lacks, a fixed string; the last
# run's status ($RC) is EXPECTED.
has() { # NAME FILE FIXED-STRING
    if grep -qF -- "$3" "$2"; then pass "$1"; else fail "$1" "'$3' not in: $(cat "$2")"; fi
}
lacks() { # NAME FILE FIXED-STRING
    if grep -qF -- "$3" "$2"; then fail "$1" "'$3' in: $(cat "$2")"; else pass "$1"; fi
}
status() { # NAME EXPECTED
    if [ "$RC" = "$2" ]; then pass "$1: status $2"; else fail "$1" "status $RC, not $2"; fi
}

check() { # NAME EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "expected '$2', got '$3'"; fi
}

# The profiler's report N of FILE, from its header to its end line; N=exit
# for the exit report.
profiler_report() { # FILE N
    if [ "$2" = exit ]; then
        sed -n '/^memtrace: exit report/,/^memtrace: end of exit report/p' "$1"
    else
        sed -n "/^memtrace: report $2 (/,/^memtrace: end of report $2\$/p" "$1"
    fi
}

finish() {
    echo "$1: $passed passed, $failed failed"
    [ "$failed" = 0 ]
}

# when_written FILE: what a background subshell writes to FILE (`echo $!
# >FILE`, `echo $? >FILE`), once it is there; waits up to 20 s (under load
# the program it started may print before the subshell writes the file).
# Empty if it never came.
when_written() {
    for _ in $(seq 400); do
        [ -s "$1" ] && break
        sleep 0.05
    done
    cat "$1" 2>/dev/null
}

# ptrace_denied: empty when gdb may attach to a child of this shell
# (kernel.yama.ptrace_scope, a container without CAP_SYS_PTRACE permit
# it), else why not, for a SKIP or FAIL line.
ptrace_denied() {
    sleep 30 &
    local probe=$!
    if ! timeout 60 gdb -q -nx -batch -p "$probe" </dev/null >"$work/probe" 2>&1 ||
        grep -q "ptrace: Operation not permitted\|Could not attach" "$work/probe"; then
        echo "ptrace is not permitted here ($(grep -m1 -i "ptrace\|attach" "$work/probe"))"
    fi
    kill "$probe" 2>/dev/null
    wait "$probe" 2>/dev/null
}

# unwind_check NAME ERRFILE [MIN]: ERRFILE (a MEMTRACE_UNWIND=check run's
# stderr) holds one check line, with at least MIN captures (1 unless
# given) and 0 mismatches.
unwind_check() {
    local line n
    line=$(grep -E '^memtrace: unwind check: [0-9]+ captures, [0-9]+ mismatches, [0-9]+ fallbacks$' "$2")
    n=$(echo "$line" | awk '{print $4}')
    if [ "$(printf '%s\n' "$line" | grep -c .)" = 1 ] && [ "$n" -ge "${3:-1}" ] &&
        [ "$(echo "$line" | awk '{print $6}')" = 0 ]; then
        pass "$1: ${line#memtrace: unwind check: }"
    else
        fail "$1" "want one check line with at least ${3:-1} captures and 0 mismatches, got: $(grep '^memtrace: unwind check' "$2" | head -5)"
    fi
}

# irefs OUT ENV... -- CMD...: callgrind's instruction count of one run of
# CMD under ENV (its stdout in OUT), or "-" when the run failed.
irefs() {
    local out=$1 env=()
    shift
    while [ "$1" != -- ]; do env+=("$1"); shift; done
    shift
    if ! env "${env[@]}" timeout 120 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        "$@" >"$out" 2>"$work/irefs.err"; then
        echo -
        return
    fi
    awk '/ I +refs:/ { gsub(",", "", $4); print $4 }' "$work/irefs.err"
}

# step_over NAME BUDGET STEPS A1 B1 A2 B2: what B adds over A a step, from
# runs of two lengths STEPS steps apart (so that the start-up and the exit
# cancel), passes when at most BUDGET instructions.
step_over() {
    local name=$1 budget=$2 steps=$3 over
    shift 3
    case "$*" in
    *-*)
        fail "$name: counted" "a run failed: $*; $(head -3 "$work/irefs.err")"
        return
        ;;
    esac
    over=$(awk -v a1="$1" -v b1="$2" -v a2="$3" -v b2="$4" -v n="$steps" \
        'BEGIN { printf "%.2f", ((b2 - a2) - (b1 - a1)) / n }')
    if awk -v o="$over" -v b="$budget" 'BEGIN { exit !(o <= b) }'; then
        pass "$name: $over instructions over native's (budget $budget)"
    else
        fail "$name: instructions over native's" "$over, over the budget of $budget"
    fi
}
