#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Rust frames and thread names (tests/progs/rust_sites.rs, built at
# opt-level 0 and 1 with legacy and v0 mangling), and a C thread named with
# prctl (tests/progs/prctl_name.c). For each build, print_trace and the gdb
# command `memtrace EXPR` (live, and from a core file for the named thread),
# and the profiler's exit report and folded stacks must show each
# "SITE:<name>" line as a frame of the user's function, with demangled names
# and no hashes, and the thread's name. gdb's Rust parser does not find the C
# function print_trace, and the gdb command runs under `set language c` here
# too (its language independence is another change). Prints
# "rust: N passed, N failed"; exits 1 on failure.
set -u
. "$(dirname "$0")/lib.sh"
ulimit -c 0
lib=$build/libmemtrace.so
plib=$build/libmemtrace-profiler.so
helper=$root/gdb/memtrace.py
R=tests/progs/rust_sites.rs
cd "$root" || exit 1

# The frame row of FUNC at the SITE line of FILE, first or inlined.
frame_re() { # FUNC FILE SITE
    local l
    l=$(site_line "$2" "$3")
    printf '^  (#[0-9]+|   inlined into) %s at %s:%s:[0-9]+$' "$1" "${2//./\\.}" "$l"
}
check_frame() { # NAME TEXT FUNC FILE SITE
    if [ -n "$2" ] && grep -qE "$(frame_re "$3" "$4" "$5")" <<<"$2"; then
        pass "$1"
    else
        fail "$1" "no frame '$3 at $4:$(site_line "$4" "$5"):' in:
$2"
    fi
}
# Mangled names or their pieces: a legacy hash, _ZN/_R symbols, $LT$ escapes.
check_demangled() { # NAME TEXT
    local bad
    bad=$(grep -nE '::h[0-9a-f]{16}|_ZN|(^|[ ;])_R[A-Z]|\$LT\$|\$GT\$|\$u7b\$' <<<"$2" | head -3)
    if [ -z "$bad" ] && [ -n "$2" ]; then pass "$1"; else fail "$1" "mangled: $bad"; fi
}

# site -> the user's function holding its line, and the static holding it
sites="vec:make_buffer:RS_VEC box:make_box:RS_BOX format:make_string:RS_STRING btree:fill_map:RS_MAP thread:worker_buffer:RS_THREAD"

for v in o0_legacy o0_v0 o1_legacy o1_v0; do
    prog=$tests/rust_sites_$v
    out=$work/$v.out err=$work/$v.err core=$work/$v.core
    args=(-q -batch -nx -ex "set env LD_PRELOAD=$lib" -ex "break rs_checkpoint" -ex "run 2>$err"
          -ex "source $helper" -ex "set language c")
    for s in $sites; do
        var=${s##*:}
        args+=(-ex "printf \"@@ $var %p\\n\", (void *)$var" -ex "memtrace (void *)$var"
              -ex "call print_trace((void *)$var)")
    done
    args+=(-ex 'printf "@@ RS_HELD %p\n", (void *)RS_HELD' -ex "memtrace (void *)RS_HELD"
          -ex "memtrace refs (void *)RS_HELD")
    args+=(-ex "gcore $core" -ex "delete" -ex "continue")
    timeout 180 gdb "${args[@]}" "$prog" >"$out" 2>&1
    if grep -q "exited normally" "$out"; then
        pass "$v: the program ran to its end under gdb"
    else
        fail "$v: gdb session" "$(tail -20 "$out")"
    fi
    timeout 120 gdb -q -batch -nx "$prog" "$core" -ex "source $helper" -ex "set language c" \
        -ex "printf \"@@ RS_THREAD %p\\n\", (void *)RS_THREAD" -ex "memtrace (void *)RS_THREAD" >"$work/$v.core.out" 2>&1

    for s in $sites; do
        site=${s%%:*} rest=${s#*:}
        fn=rust_sites::${rest%%:*} var=${rest#*:}
        a=$(addr_of "$var" "$out")
        check_frame "$v: memtrace $var: $fn at the $site site" "$(block_of "$a" "$out")" "$fn" $R "$site"
        check_frame "$v: print_trace($var): $fn at the $site site" "$(block_of "$a" "$err")" "$fn" $R "$site"
    done
    # `memtrace refs`: the closure's local holding RS_HELD (at opt-level 0;
    # at 1 the block is in stack slots of rs_checkpoint's frame #0,
    # read_volatile inlined there), each frame named as memtrace's frame
    # lines name it (libiberty, one demangler), not as gdb does
    # ("rust_sites::{impl#0}::hold::{closure#0}", "read_volatile<*const u8>"
    # for both manglings).
    a=$(addr_of RS_HELD "$out")
    held=$(block_of "$a" "$out")
    refs=$(sed -n "/^memtrace: refs: the live block at $a /,/^memtrace: refs: [0-9]* places/p" "$out")
    names=$(sed -nE 's/.* stack, frame #[0-9]+ (.*), to offset [0-9]+$/\1/p' <<<"$refs" | sort -u)
    case $v in
    o0_*) want=$(awk -v at=" at $R:$(site_line $R held):" '
              index($0, at) { sub(/^  (#[0-9]+|   inlined into) /, ""); sub(/ at [^ ]+$/, ""); print; exit }' <<<"$held")
          want="rs_checkpoint
$want" ;;
    o1_legacy) want=core::ptr::read_volatile ;;
    o1_v0) want="core::ptr::read_volatile::<*const u8>" ;;
    esac
    check "$v: refs: the stack frames holding RS_HELD, named as memtrace names frames" \
        "$(sort <<<"$want")" "$names"
    a=$(addr_of RS_THREAD "$out")
    for f in "$out" "$err" "$work/$v.core.out"; do
        what="memtrace"; [ "$f" = "$err" ] && what="print_trace"; [ "$f" = "$work/$v.core.out" ] && what="core"
        if block_of "$a" "$f" | head -1 | grep -qE "allocated by thread [0-9]+ \"rs-worker\" \\(allocation #"; then
            pass "$v: $what: the thread's name from std::thread::Builder::name"
        else
            fail "$v: $what: thread name" "$(block_of "$a" "$f")"
        fi
    done
    check_frame "$v: core: worker_buffer at the thread site" "$(block_of "$a" "$work/$v.core.out")" \
        rust_sites::worker_buffer $R thread
    check_demangled "$v: answers name functions demangled, without hashes" \
        "$(cat "$err"; grep '^  ' "$out")"

    # The profiler: every block is still live at exit.
    env LD_PRELOAD="$plib" MEMTRACE_INTERVAL_MS=0 MEMTRACE_EXIT_TOP=50 MEMTRACE_OUTPUT="$work/$v.report" \
        MEMTRACE_FOLDED="$work/$v.folded" "$prog" >/dev/null 2>&1
    report=$(sed -n '/^memtrace: exit report/,/^memtrace: end of exit report/p' "$work/$v.report")
    for s in $sites; do
        site=${s%%:*} rest=${s#*:}
        fn=rust_sites::${rest%%:*}
        check_frame "$v: profiler report: $fn at the $site site" "$report" "$fn" $R "$site"
        if grep -qE "(^|;)$fn;" "$work/$v.folded"; then
            pass "$v: folded stacks hold $fn"
        else
            fail "$v: folded $fn" "$(cat "$work/$v.folded")"
        fi
    done
    check_demangled "$v: profiler report demangled" "$report"
    check_demangled "$v: folded stacks demangled" "$(cat "$work/$v.folded")"
    if grep -E '^  #[0-9]+ _start ' <<<"$report" | grep -qvE ' in rust_sites_[a-z0-9_]+\+0x[0-9a-f]+$'; then
        fail "$v: _start has no line" "$(grep -E '_start' <<<"$report")"
    else
        pass "$v: _start is named from the symbol table, without a line"
    fi
done

# ---------------------------------------------------------------- prctl in C
P=tests/progs/prctl_name.c
prog=$tests/prctl_name out=$work/prctl.out err=$work/prctl.err core=$work/prctl.core
timeout 120 gdb -q -batch -nx -ex "set env LD_PRELOAD=$lib" -ex "break checkpoint" -ex "run 2>$err" \
    -ex "source $helper" -ex 'printf "@@ g_prctl %p\n", g_prctl' -ex "memtrace g_prctl" \
    -ex "call print_trace(g_prctl)" -ex "gcore $core" -ex "delete" -ex "continue" "$prog" >"$out" 2>&1
if grep -q "exited normally" "$out"; then
    pass "prctl: result and errno unchanged, the program ran to its end"
else
    fail "prctl: gdb session" "$(tail -20 "$out") $(cat "$err")"
fi
timeout 120 gdb -q -batch -nx "$prog" "$core" -ex "source $helper" -ex "memtrace g_prctl" >"$work/prctl.core.out" 2>&1
a=$(addr_of g_prctl "$out")
expect="memtrace: $a: start of a 91-byte block allocated by thread 2 \"pr-worker\" (allocation #"
for f in "$out" "$err" "$work/prctl.core.out"; do
    what="memtrace"; [ "$f" = "$err" ] && what="print_trace"; [ "$f" = "$work/prctl.core.out" ] && what="core"
    text=$(block_of "$a" "$f")
    if [ "${text#"$expect"}" != "$text" ]; then
        pass "prctl: $what: the name given by prctl(PR_SET_NAME)"
    else
        fail "prctl: $what: thread name" "$text"
    fi
    check_frame "prctl: $what: named_main at the site" "$text" named_main $P pr_named
done

finish rust
