#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Bad frees (tests/progs/bad_frees.cpp, one case per run): memtrace reports
# a double free, a realloc of a freed block, a free inside a block and
# mismatched new/delete pairs before the real allocator sees them, with the
# exact file:line of the marked sites in each stack; the program then ends
# as it does without memtrace (glibc's abort included), except that a
# report is an error: the status is MEMTRACE_ERROR_EXITCODE (default 1)
# and MEMTRACE_ON_ERROR=abort (run --check) aborts at it. Untraced blocks
# (the fork window) and unknown pointers get no report, cheaply.
set -u
. "$(dirname "$0")/lib.sh"
lib=${MEMTRACE_LIB:-$build/libmemtrace.so}
prog=$tests/bad_frees
src=tests/progs/bad_frees.cpp

# Runs the program's case ARGS natively and under memtrace (with the extra
# environment in the array MT_ENV, VAR=VALUE each), with stdout and stderr
# in $work/NAME.{native,mt}.{out,err} and the status as the shell reports
# it (128 + signal for a signal) in NATIVE_RC and MT_RC.
MT_ENV=()
run_case() { # NAME ARGS...
    local name=$1
    shift
    (cd "$work" && timeout 60 "$prog" "$@" >"$work/$name.native.out" 2>"$work/$name.native.err") \
        2>/dev/null
    NATIVE_RC=$?
    (cd "$work" && timeout 60 env LD_PRELOAD="$lib" "${MT_ENV[@]}" "$prog" "$@" \
        >"$work/$name.mt.out" 2>"$work/$name.mt.err") 2>/dev/null
    MT_RC=$?
    MT_ENV=()
}

check_grep() { # NAME FILE FIXED-STRING
    if grep -qF -- "$3" "$2"; then pass "$1"; else fail "$1" "'$3' not in $(cat "$2")"; fi
}

same_end() { # NAME
    if [ "$NATIVE_RC" = "$MT_RC" ]; then
        pass "$1: ends as without memtrace (status $MT_RC)"
    else
        fail "$1" "status $MT_RC under memtrace, $NATIVE_RC without"
    fi
}

# The program ends natively with status 0 and under memtrace with WANT (a
# report was made: MEMTRACE_ERROR_EXITCODE's default, 1).
error_end() { # NAME WANT
    if [ "$NATIVE_RC" = 0 ] && [ "$MT_RC" = "$2" ]; then
        pass "$1: status $MT_RC under memtrace (0 without)"
    else
        fail "$1" "status $MT_RC under memtrace (want $2), $NATIVE_RC without (want 0)"
    fi
}

# The lines of the report section that starts with the line PREFIX in
# REPORT (a file): the frames after it, up to the next section's line.
section() { # REPORT PREFIX
    awk -v p="$2" 'on && !/^  #/ && !/^     inlined/ { exit }
                   on { print }
                   index($0, p) == 1 { on = 1 }' "$1"
}

# Frame FRAME ("#0", ...) of section PREFIX of REPORT is at the marked site.
check_frame() { # NAME REPORT PREFIX FRAME MARKER
    local name=$1 report=$2 prefix=$3 frame=$4 marker=$5 line
    line=$(site_line "$src" "$marker")
    if section "$report" "$prefix" | grep -qE "^  $frame .* at (.*/)?$src:$line(:[0-9]+)?\$"; then
        pass "$name: '$prefix' $frame at bad_frees.cpp:$line (SITE:$marker)"
    else
        fail "$name" "'$prefix' has no $frame at $src:$line (SITE:$marker):
$(cat "$report")"
    fi
}

# The first report in ERR whose first line starts with HEAD, into FILE.
report_to() { # ERR HEAD FILE
    awk -v h="$2" 'on && /^memtrace: / { exit }
                   on && !/^  / { exit }
                   index($0, h) == 1 { on = 1 }
                   on { print }' "$1" >"$3"
    [ -s "$3" ]
}

# ---------------------------------------------------------------- double free
run_case double double
err=$work/double.mt.err
same_end "double free"
if report_to "$err" "memtrace: double free of a 32-byte block at 0x" "$work/r"; then
    pass "double free: 'memtrace: double free of a 32-byte block at 0x...'"
    check_frame "double free" "$work/r" "  free by thread 1 at:" "#0" second_free
    check_frame "double free" "$work/r" "  freed before by thread 1 (after allocation #" "#0" first_free
    check_frame "double free" "$work/r" "  allocated by thread 1 (allocation #" "#0" make
    check_frame "double free" "$work/r" "  allocated by thread 1 (allocation #" "#1" double_alloc
    report_line=$(grep -n "^memtrace: double free" "$err" | head -1 | cut -d: -f1)
    glibc_line=$(grep -n "double free detected" "$err" | head -1 | cut -d: -f1)
    if [ -n "$glibc_line" ] && [ "$report_line" -lt "$glibc_line" ]; then
        pass "double free: reported before glibc's '$(sed -n "${glibc_line}p" "$err")'"
    else
        fail "double free" "no glibc message after the report: $(cat "$err")"
    fi
    block=$(head -1 "$work/r" | sed 's/.* at //')
    if grep -q "^  freed before by thread 1 (after allocation #[0-9]*) at:\$" "$work/r" &&
       grep -q "^  allocated by thread 1 (allocation #[0-9]*) at:\$" "$work/r" &&
       [[ "$block" =~ ^0x[0-9a-f]+$ ]]; then
        pass "double free: the block's address ($block) and both threads"
    else
        fail "double free" "header lines: $(cat "$work/r")"
    fi
else
    fail "double free" "no report in: $(cat "$err")"
fi

run_case double_after_new double_after_new
same_end "double free after C++ allocations"
if report_to "$work/double_after_new.mt.err" "memtrace: double free of a 32-byte block at 0x" "$work/r"; then
    check_frame "double free after C++ allocations" "$work/r" "  free by thread 1 at:" "#0" \
        second_free_after_new
else
    fail "double free after C++ allocations" "no report in: $(cat "$work/double_after_new.mt.err")"
fi

MT_ENV=(MEMTRACE_BAD_FREE=quiet)
run_case double_quiet double
same_end "MEMTRACE_BAD_FREE=quiet"
if grep -q "^memtrace:" "$work/double_quiet.mt.err"; then
    fail "MEMTRACE_BAD_FREE=quiet" "memtrace said: $(grep '^memtrace:' "$work/double_quiet.mt.err")"
else
    pass "MEMTRACE_BAD_FREE=quiet: nothing from memtrace, glibc's abort as usual"
fi

MT_ENV=(MEMTRACE_BAD_FREE=loud)
run_case double_bad double
check_grep "MEMTRACE_BAD_FREE=loud warns" "$work/double_bad.mt.err" \
    'memtrace: MEMTRACE_BAD_FREE="loud" is not one of report, quiet; using report'
check_grep "MEMTRACE_BAD_FREE=loud: the default (report) is kept" "$work/double_bad.mt.err" \
    "memtrace: double free of a 32-byte block at 0x"

# The profiler build reports the same way, on its stderr.
(cd "$work" && timeout 60 env LD_PRELOAD="$build/libmemtrace-profiler.so" MEMTRACE_INTERVAL_MS=0 \
    "$prog" double >/dev/null 2>"$work/double_prof.err") 2>/dev/null
check_grep "double free under the profiler" "$work/double_prof.err" \
    "memtrace: double free of a 32-byte block at 0x"

# ---------------------------------------------------------------- stderr reused
# Reports go only to memtrace's copy of the stderr the process started with,
# in both builds: after close(2) and an open that gets fd 2, the data file
# holds only the program's 5 bytes and the report is on the original
# stderr; started with fd 2 closed, or with memtrace's copy closed and its
# number reused too, the report is dropped, never written into the file.
check_eq() { if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "expected '$3', got '$2'"; fi; }
data_only() { od -An -c "$1" | tr -s ' '; } # " d a t a \n" when the file is the program's 5 bytes
for v in libmemtrace libmemtrace-profiler; do
    envs=(LD_PRELOAD="$build/$v.so")
    [ $v = libmemtrace-profiler ] && envs+=(MEMTRACE_INTERVAL_MS=0)
    (cd "$work" && timeout 60 env "${envs[@]}" "$prog" stderr_reused "$work/reused.data" \
        >/dev/null 2>"$work/reused.err") 2>/dev/null
    check_eq "fd 2 reused for a data file ($v): exit status 1 (a report)" "$?" 1
    check_eq "fd 2 reused for a data file ($v): the file holds only the program's data" \
        "$(data_only "$work/reused.data")" " d a t a \n"
    if report_to "$work/reused.err" "memtrace: free of an address 16 bytes inside a 64-byte block at 0x" \
        "$work/r"; then
        check_frame "fd 2 reused ($v): the report on the original stderr" "$work/r" \
            "  allocated by thread 1 (allocation #" "#1" reused_inside
    else
        fail "fd 2 reused ($v): the report on the original stderr" "not in: $(cat "$work/reused.err")"
    fi
    (cd "$work" && timeout 60 env "${envs[@]}" "$prog" stderr_reused "$work/closed.data" \
        >/dev/null 2>&-) 2>/dev/null
    check_eq "fd 2 closed at start-up, then a data file ($v): exit status 1 (an error, unsaid)" "$?" 1
    check_eq "fd 2 closed at start-up, then a data file ($v): the file holds only the program's data" \
        "$(data_only "$work/closed.data")" " d a t a \n"
    (cd "$work" && timeout 60 env "${envs[@]}" "$prog" stderr_reused "$work/from.data" closefrom \
        >/dev/null 2>"$work/from.err") 2>/dev/null
    check_eq "fd 2 and memtrace's copy reused ($v): exit status 1 (an error, unsaid)" "$?" 1
    check_eq "fd 2 and memtrace's copy reused ($v): the file holds only the program's data" \
        "$(data_only "$work/from.data")" " d a t a \n"
    check_eq "fd 2 and memtrace's copy reused ($v): nothing on the original stderr" \
        "$(cat "$work/from.err")" ""
done
# The copy is close-on-exec: a program the traced one forks and execs
# untraced (MEMTRACE_CHILDREN=0) holds the descriptors it holds natively, no
# more.
list_fds='ls /proc/self/fd; :'
check_eq "memtrace's copy of stderr is close-on-exec: an exec'd ls has the same fds as natively" \
    "$(env LD_PRELOAD="$build/libmemtrace.so" MEMTRACE_CHILDREN=0 sh -c "$list_fds" | sort -n | tr '\n' ' ')" \
    "$(sh -c "$list_fds" | sort -n | tr '\n' ' ')"

# ---------------------------------------------------------------- realloc of a freed block
run_case realloc realloc
error_end "realloc of a freed block" 1
if report_to "$work/realloc.mt.err" "memtrace: double free of a 32-byte block at 0x" "$work/r"; then
    pass "realloc of a freed block: reported as a double free"
    check_frame "realloc of a freed block" "$work/r" "  realloc by thread 1 at:" "#0" realloc_freed
    check_frame "realloc of a freed block" "$work/r" "  freed before by thread 1 (after allocation #" \
        "#0" realloc_first_free
    check_frame "realloc of a freed block" "$work/r" "  allocated by thread 1 (allocation #" "#1" \
        realloc_alloc
else
    fail "realloc of a freed block" "no report in: $(cat "$work/realloc.mt.err")"
fi

# ---------------------------------------------------------------- free inside a block
run_case inside inside
same_end "free(p + 8)"
if report_to "$work/inside.mt.err" "memtrace: free of an address 8 bytes inside a 32-byte block at 0x" \
    "$work/r"; then
    pass "free(p + 8): 'memtrace: free of an address 8 bytes inside a 32-byte block at 0x...'"
    check_frame "free(p + 8)" "$work/r" "  free by thread 1 at:" "#0" free_plus_8
    check_frame "free(p + 8)" "$work/r" "  allocated by thread 1 (allocation #" "#1" inside_alloc
    if grep -q "freed before" "$work/r"; then
        fail "free(p + 8)" "a previous free named: $(cat "$work/r")"
    fi
else
    fail "free(p + 8)" "no report in: $(cat "$work/inside.mt.err")"
fi

# Three times from one site, once from another: two reports.
run_case inside_loop inside_loop
error_end "free inside a block, in a loop" 1
n=$(grep -c "^memtrace: free of an address 16 bytes inside a 64-byte block at 0x" "$work/inside_loop.mt.err")
if [ "$n" = 2 ]; then
    pass "free inside a block: once per call site (3 + 1 frees from 2 sites, 2 reports)"
else
    fail "free inside a block, once per call site" "$n reports: $(cat "$work/inside_loop.mt.err")"
fi
report_to "$work/inside_loop.mt.err" "memtrace: free of an address 16 bytes" "$work/r" &&
    check_frame "free inside a block, in a loop" "$work/r" "  free by thread 1 at:" "#0" inside_free

# ---------------------------------------------------------------- no false reports, cheaply
# Without the quarantine, which would keep the freed address from the
# prepare handler's malloc, and the redzone, which makes the traced block
# larger than the handler's untraced one.
MT_ENV=(MEMTRACE_QUARANTINE=0 MEMTRACE_REDZONE=0)
run_case fork fork_window
same_end "fork window"
if grep -qx "parent: reused: yes" "$work/fork.mt.out" && grep -qx "child: reused: yes" "$work/fork.mt.out"; then
    if grep -q "^memtrace:" "$work/fork.mt.err"; then
        fail "fork window" "a block allocated untraced at a freed address was reported: $(cat "$work/fork.mt.err")"
    else
        pass "fork window: a block allocated untraced at a freed block's address, freed in parent and child: no report"
    fi
else
    fail "fork window" "the premise failed (the prepare handler's block is not at the freed address): $(cat "$work/fork.mt.out")"
fi

run_case bad_alloc bad_alloc
same_end "a caught std::bad_alloc"
if ! grep -qx "caught bad_alloc" "$work/bad_alloc.mt.out"; then
    fail "caught std::bad_alloc" "the program did not catch it: $(cat "$work/bad_alloc.mt.out")"
elif grep -q "^memtrace:" "$work/bad_alloc.mt.err"; then
    fail "caught std::bad_alloc" "its untraced exception object's free was reported: $(head -3 "$work/bad_alloc.mt.err")"
else
    pass "caught std::bad_alloc, its exception object at a freed block's address: no report"
fi

start=$(date +%s%N)
run_case unknown unknown_many 20000
ms=$(( ($(date +%s%N) - start) / 1000000 ))
same_end "20,000 frees of unknown pointers"
if grep -q "^memtrace:" "$work/unknown.mt.err"; then
    fail "unknown pointers" "reported: $(head -3 "$work/unknown.mt.err")"
elif [ "$ms" -gt 10000 ]; then
    fail "unknown pointers" "20,000 frees of unknown pointers with a full freed history took $ms ms"
else
    pass "20,000 frees of unknown pointers, freed history full: no report, $ms ms (both runs)"
fi

# ---------------------------------------------------------------- mismatched pairs
# These need memtrace to see operator new and delete (not only the malloc
# and free below them in libstdc++).
if nm -D --defined-only "$lib" | grep -q ' _ZdlPv$'; then
    run_case mismatch mismatch
    err=$work/mismatch.mt.err
    error_end "mismatched pairs" 1
    n=$(grep -c "^memtrace: delete of a 32-byte block allocated by malloc at 0x" "$err")
    if [ "$n" = 1 ]; then
        pass "delete of malloc'ed memory: reported once for 3 deletes at one site"
        report_to "$err" "memtrace: delete of a 32-byte block allocated by malloc" "$work/r"
        check_frame "delete of malloc'ed memory" "$work/r" "  delete by thread 1 at:" "#0" delete_malloc
        check_frame "delete of malloc'ed memory" "$work/r" "  allocated by thread 1 (allocation #" "#1" \
            malloc_deleted
    else
        fail "delete of malloc'ed memory" "$n reports in: $(cat "$err")"
    fi
    for c in "free of a 32-byte block allocated by new[]|free by|free_new_array|new_array" \
             "delete of a 32-byte block allocated by new[]|delete by|delete_new_array|new_array_2" \
             "delete[] of a 1-byte block allocated by new|delete[] by|delete_array_new|new_one" \
             "realloc of a 32-byte block allocated by new[]|realloc by|realloc_new_array|new_array_realloc"; do
        IFS='|' read -r head call free_site alloc_site <<<"$c"
        if report_to "$err" "memtrace: $head at 0x" "$work/r"; then
            pass "'memtrace: $head at 0x...'"
            check_frame "$head" "$work/r" "  $call thread 1 at:" "#0" "$free_site"
            check_frame "$head" "$work/r" "  allocated by thread 1 (allocation #" "#0" "$alloc_site"
        else
            fail "$head" "no report in: $(cat "$err")"
        fi
    done
else
    echo "SKIP mismatched pairs: $(basename "$lib") does not interpose operator delete (branch entry-points)"
fi

# ---------------------------------------------------------------- every report is an error
# Each kind of bad free, reported, sets the exit status as a heap error
# does (MEMTRACE_ERROR_EXITCODE), makes none when quiet, and aborts at its
# report under MEMTRACE_ON_ERROR=abort and `memtrace run --check`: before
# glibc sees the free (glibc's own message, for the kinds it catches too,
# never follows). HEAD is the report's first words; LEAK the status with
# MEMTRACE_LEAK_CHECK=1 (23 where the case loses blocks: the leak check's
# status wins over the errors').
kinds=("realloc|memtrace: double free of a 32-byte block|23"
       "inside_loop|memtrace: free of an address 16 bytes inside a 64-byte block|23"
       "double|memtrace: double free of a 32-byte block|"
       "inside|memtrace: free of an address 8 bytes inside a 32-byte block|")
nm -D --defined-only "$lib" | grep -q ' _ZdlPv$' &&
    kinds+=("mismatch|memtrace: delete of a 32-byte block allocated by malloc|1")
glibc_said() { grep -E "free\(\): |double free detected|corrupted" "$1"; }
for k in "${kinds[@]}"; do
    IFS='|' read -r c head leak <<<"$k"
    run_case "st_$c" "$c"
    if [ "$NATIVE_RC" = 0 ]; then
        check_eq "bad free ($c), defaults: status 1" "$MT_RC" 1
        MT_ENV=(MEMTRACE_ERROR_EXITCODE=7)
        run_case "st7_$c" "$c"
        check_eq "bad free ($c), MEMTRACE_ERROR_EXITCODE=7: status 7" "$MT_RC" 7
        MT_ENV=(MEMTRACE_BAD_FREE=quiet)
        run_case "stq_$c" "$c"
        check_eq "bad free ($c), MEMTRACE_BAD_FREE=quiet: status 0, no report" \
            "$MT_RC $(grep -c '^memtrace:' "$work/stq_$c.mt.err")" "0 0"
        MT_ENV=(MEMTRACE_LEAK_CHECK=1)
        run_case "stl_$c" "$c"
        check_eq "bad free ($c), MEMTRACE_LEAK_CHECK=1: status $leak" "$MT_RC" "$leak"
    fi
    MT_ENV=(MEMTRACE_ON_ERROR=abort)
    run_case "sta_$c" "$c"
    (cd "$work" && ulimit -S -c 0 && timeout 60 "$build/memtrace" run --check "$prog" "$c" \
        >/dev/null 2>"$work/stc_$c.err") 2>/dev/null
    check_rc=$?
    for r in "MEMTRACE_ON_ERROR=abort|$MT_RC|$work/sta_$c.mt.err" \
             "memtrace run --check|$check_rc|$work/stc_$c.err"; do
        IFS='|' read -r how rc err <<<"$r"
        if [ "$rc" = 134 ] && grep -qF -- "$head at 0x" "$err" && ! glibc_said "$err" >/dev/null; then
            pass "bad free ($c), $how: SIGABRT (134) at memtrace's report, before glibc's check"
        else
            fail "bad free ($c), $how" "status $rc (want 134), glibc: '$(glibc_said "$err")': $(head -3 "$err")"
        fi
    done
done

finish "bad frees"
