#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# End-to-end tests: test programs run under the preloaded library, stopped in
# gdb at checkpoint(); print_trace is called on each marked block and the
# report must name the exact file:line of the "SITE:<name>" marker in the
# source, the demangled function, the block size and the thread. Prints one
# PASS/FAIL line per check and "N passed, N failed" last; exits 1 on failure.
set -u
. "$(dirname "$0")/lib.sh"
lib=${MEMTRACE_LIB:-$build/libmemtrace.so}

# Runs PROG in gdb, stops at checkpoint, for each VAR prints "@@ VAR ADDR" to
# gdb's output and calls print_trace(VAR) (whose report goes to ERR), then
# lets the program finish. Extra gdb commands come after "--".
run_gdb() {
    local prog=$1 out=$2 err=$3
    shift 3
    local args=(-q -batch -nx -ex "set env LD_PRELOAD=$lib" -ex "break checkpoint"
                -ex "run 2>$err")
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        args+=(-ex "printf \"@@ $1 %p\\n\", (void *)$1" -ex "call print_trace($1)")
        shift
    done
    [ "${1:-}" = "--" ] && shift
    while [ $# -gt 0 ]; do args+=(-ex "$1"); shift; done
    args+=(-ex "continue")
    timeout 120 gdb "${args[@]}" "$prog" >"$out" 2>&1
}

# The report for ADDR in ERR: its "memtrace: ADDR:" line and every line
# up to the next "memtrace: " one (wider than lib.sh's block_of).
report_of() { # ADDR ERR
    awk -v a="memtrace: $1:" 'index($0, a) == 1 { on = 1; print; next }
                              /^memtrace: / { on = 0 } on' "$2"
}

# check_site NAME PROG_OUT ERR VAR SRC MARKER FRAME FUNC SIZE THREAD
# FRAME is "#N" (the frame that must carry the site) or "inlined" (the site
# is the call site of an inlined function, on an "inlined into FUNC" line).
check_site() {
    local name=$1 out=$2 err=$3 var=$4 src=$5 marker=$6 frame=$7 func=$8 size=$9 thread=${10}
    local addr line block file
    addr=$(addr_of "$var" "$out")
    line=$(site_line "$root/$src" "$marker")
    file=$(basename "$src")
    if [ -z "$addr" ] || [ -z "$line" ]; then
        fail "$name" "no address for $var or no marker SITE:$marker in $src"
        return
    fi
    block=$(report_of "$addr" "$err")
    local header="memtrace: $addr: start of a $size-byte block allocated by thread $thread (allocation #"
    if [[ "$block" != "$header"* ]]; then
        fail "$name" "header is not '$header...': $(printf '%s' "$block" | head -1)"
        return
    fi
    local prefix
    if [ "$frame" = inlined ]; then prefix="     inlined into $func at "; else prefix="  $frame $func at "; fi
    local l ok=0
    while IFS= read -r l; do
        [[ "$l" == "$prefix"* ]] || continue
        local loc=${l#"$prefix"}
        if [[ "$loc" == "$src:$line" || "$loc" == "$src:$line:"* || "$loc" == *"/$src:$line" ||
              "$loc" == *"/$src:$line:"* ]]; then
            ok=1
        fi
    done <<<"$block"
    if [ $ok = 1 ]; then
        pass "$name ($file:$line in $func)"
    else
        fail "$name" "no line '$prefix...$src:$line' in:
$block"
    fi
}

check_grep() { # NAME FILE FIXED-STRING
    if grep -qF -- "$3" "$2"; then pass "$1"; else fail "$1" "'$3' not in $(cat "$2")"; fi
}

# ---------------------------------------------------------------- C sites
out=$work/sites.out err=$work/sites.err
run_gdb "$tests/sites" "$out" "$err" \
    g_malloc g_calloc g_realloc g_reallocarray g_posix_memalign g_aligned_alloc \
    g_memalign g_valloc g_pvalloc g_strdup g_thread g_dlopen g_qsort g_realloc_old '(void *)16' \
    "(char *)g_malloc + 17" "(char *)g_malloc + 104"
S=tests/progs/sites.c
check_site malloc         "$out" "$err" g_malloc         $S malloc         '#0' main 100 1
check_site calloc         "$out" "$err" g_calloc         $S calloc         '#0' main 120 1
check_site realloc-moved  "$out" "$err" g_realloc        $S realloc        '#0' main 1048576 1
check_site reallocarray   "$out" "$err" g_reallocarray   $S reallocarray   '#0' main 300 1
check_site posix_memalign "$out" "$err" g_posix_memalign $S posix_memalign '#0' main 200 1
check_site aligned_alloc  "$out" "$err" g_aligned_alloc  $S aligned_alloc  '#0' main 256 1
check_site memalign       "$out" "$err" g_memalign       $S memalign       '#0' main 40 1
check_site valloc         "$out" "$err" g_valloc         $S valloc         '#0' main 300 1
# pvalloc gives whole pages, all of them the program's: with a redzone
# (the default) after them, the block is recorded with the pages' size.
check_site pvalloc        "$out" "$err" g_pvalloc        $S pvalloc        '#0' main 8192 1
check_site strdup         "$out" "$err" g_strdup         $S strdup         '#1' main 9 1
# A callback from libc's qsort: the unwinder follows libc's CFI back to main.
check_site qsort          "$out" "$err" g_qsort          $S qsort '#0' compare_and_allocate 33 1
check_grep "qsort: the caller of qsort" "$err" "  #3 main at tests/progs/sites.c:"
check_site second-thread  "$out" "$err" g_thread         $S thread         '#0' thread_main 77 2
check_site dlopen-lib     "$out" "$err" g_dlopen tests/progs/dl_sites.c dlopen '#0' dl_make 123 1
# After a moving realloc the old address is free: print_trace must not report
# the old record there (the allocator may have reused it for a newer block).
seq_of() { sed -n 's/.*(allocation #\([0-9]*\)).*/\1/p' | head -1; }
old_block=$(report_of "$(addr_of g_realloc_old "$out")" "$err" | head -1)
new_seq=$(report_of "$(addr_of g_realloc "$out")" "$err" | seq_of)
old_seq=$(printf '%s\n' "$old_block" | seq_of)
if [[ "$old_block" == *": not a live heap block"* ]] ||
   { [ -n "$old_seq" ] && [ -n "$new_seq" ] && [ "$old_seq" -gt "$new_seq" ]; }; then
    pass "realloc: the old address no longer reports the old block"
else
    fail "realloc: old address" "'$old_block' (realloc is allocation #$new_seq)"
fi
check_grep "unknown pointer: one clear line" "$err" \
    "memtrace: 0x10: not a live heap block known to memtrace"
check_grep "interior pointer: offset and block" "$err" \
    "memtrace: $(printf '%#x' $(( $(addr_of g_malloc "$out") + 17 ))): 17 bytes inside a 100-byte block at $(addr_of g_malloc "$out") allocated by thread 1"
# The classic overflow: 4 bytes past the end of the 100-byte block, in no
# block (glibc keeps the next chunk's header there).
past=$(printf '%#x' $(( $(addr_of g_malloc "$out") + 104 )))
past_block=$(report_of "$past" "$err")
past_head="memtrace: $past: not a live heap block; the nearest live blocks and the newest freed ones within 4096 bytes:"
past_line="  4 bytes after the end of a 100-byte block at $(addr_of g_malloc "$out") allocated by thread 1 (allocation #"
if [ "$(sed -n 1p <<<"$past_block")" = "$past_head" ] &&
   [[ "$(sed -n 2p <<<"$past_block")" == "$past_line"* ]] &&
   [[ "$(sed -n 3p <<<"$past_block")" == "  #0 main at $S:$(site_line $S malloc):"* ]]; then
    pass "4 bytes past a block's end: the block and its site ($S:$(site_line $S malloc))"
else
    fail "4 bytes past a block's end" "not '$past_head', '$past_line...', '  #0 main at $S:$(site_line $S malloc):' in:
$past_block"
fi
check_grep "sites: program runs to a normal exit" "$out" "exited normally]"
check_grep "sites: program output unchanged" "$out" "sites: done"

# MEMTRACE_UNWIND=fp on a program with frame pointers (-O0): direct calls,
# a second thread and a dlopened library resolve to the same sites, and so
# does strdup: Debian 12's libc keeps no frame pointer, so the chain breaks
# at strdup and that capture is made by libunwind.
out=$work/fp.out err=$work/fp.err
MEMTRACE_UNWIND=fp run_gdb "$tests/sites" "$out" "$err" g_malloc g_calloc g_thread g_dlopen g_strdup \
    g_qsort
check_site "unwind=fp: malloc"        "$out" "$err" g_malloc $S malloc '#0' main 100 1
check_site "unwind=fp: calloc"        "$out" "$err" g_calloc $S calloc '#0' main 120 1
check_site "unwind=fp: second thread" "$out" "$err" g_thread $S thread '#0' thread_main 77 2
check_site "unwind=fp: dlopen-lib"    "$out" "$err" g_dlopen tests/progs/dl_sites.c dlopen '#0' \
    dl_make 123 1
check_grep "unwind=fp: the caller of dl_make" "$err" "  #1 main at tests/progs/sites.c:"
check_site "unwind=fp: strdup's caller" "$out" "$err" g_strdup $S strdup '#1' main 9 1
# Proof that the frame-pointer walk ran: inside qsort the chain breaks two
# frames up (the documented price of fp), where the default finds main.
if report_of "$(addr_of g_qsort "$out")" "$err" | grep -q " main at "; then
    fail "unwind=fp in effect" "qsort's caller was found: fp fell back to libunwind?"
else
    pass "unwind=fp in effect (the frames above qsort's callback are lost, as documented)"
fi

# ---------------------------------------------------------------- C++
out=$work/cxx.out err=$work/cxx.err
run_gdb "$tests/sites_cxx" "$out" "$err" g_new g_new_array
X=tests/progs/sites_cxx.cpp
# operator new is memtrace's own: frame #0 is the line that called it.
check_site "c++ new in a namespace" "$out" "$err" g_new $X new '#0' 'shapes::make_widget()' 48 1
check_site "c++ new[] in a template" "$out" "$err" g_new_array $X new_array '#0' \
    'shapes::Pool<shapes::Widget>::make_many(int)' 144 1
if grep -q 'operator new' "$err"; then
    fail "c++: no operator new frame" "$(grep 'operator new' "$err")"
else
    pass "c++: no operator new frame"
fi
check_grep "c++: program runs to a normal exit" "$out" "exited normally]"

# ---------------------------------------------------------------- -O2 inline
out=$work/o2.out err=$work/o2.err
run_gdb "$tests/sites_o2" "$out" "$err" g_inline
O=tests/progs/sites_o2.c
check_site "always-inline -O2: inlined site" "$out" "$err" g_inline $O inline '#0' zeroed_buffer 4000 1
check_site "always-inline -O2: caller's line" "$out" "$err" g_inline $O inline_caller inlined \
    build_buffer 4000 1

# ---------------------------------------------------------------- module+offset
# Without debug information a frame shows module+offset, which must be what
# `addr2line -e MODULE` takes: the address in the file (for the non-PIE
# executable, the run-time address itself; for the PIE one, not).
for p in nopie nopie_pie; do
    out=$work/$p.out err=$work/$p.err
    run_gdb "$tests/$p" "$out" "$err" "*(void **)&g_block"
    for f in '#0 make_block' '#1 main'; do
        off=$(sed -nE "s/^  $f in $p\+(0x[0-9a-f]+)\$/\1/p" "$err")
        fn=$([ -n "$off" ] && addr2line -f -e "$tests/$p" "$off" | head -1)
        if [ -n "$off" ] && [ "$fn" = "${f#* }" ]; then
            pass "$p: '$f in $p+$off', and addr2line -f -e $p $off names ${f#* }"
        else
            fail "$p: $f" "offset '$off', addr2line says '$fn': $(grep "^  $f " "$err")"
        fi
    done
done

# A frame no symbol names, in a stripped library: "0xPC in MODULE+0xOFF",
# both numbers naming the same byte (the call's last, the return address
# - 1: PC = the library's base + OFF), OFF what addr2line takes for the
# unstripped file; print_trace in the program and the gdb command alike.
check_unnamed() { # NAME OUT ERR
    local base line off want
    base=$(awk '$1 == "@@" && $2 == "base" { print $3 }' "$2")
    line=$(grep -m1 '^  #0 ' "$3")
    off=$(sed -nE 's/^  #0 0x[0-9a-f]+ in libstripped\.so\+(0x[0-9a-f]+)$/\1/p' <<<"$line")
    want="  #0 $(printf '%#x' $((base + off))) in libstripped.so+$off"
    if [ -n "$base" ] && [ -n "$off" ] && [ "$line" = "$want" ] &&
       [ "$(addr2line -f -e "$tests/libstripped_full.so" "$off" | head -1)" = inner ]; then
        pass "$1: '$line' (base $base), addr2line names inner"
    else
        fail "$1" "got '$line', want '$want' (base '$base'); addr2line: $(
            [ -n "$off" ] && addr2line -f -e "$tests/libstripped_full.so" "$off" | head -1)"
    fi
}
LD_PRELOAD=$lib "$tests/stripped_main" >"$work/stripped.out" 2>"$work/stripped.err"
check_unnamed "stripped library, print_trace: the unnamed frame" "$work/stripped.out" "$work/stripped.err"
timeout 120 gdb -q -batch -nx -ex "set env LD_PRELOAD=$lib" -ex "break checkpoint" \
    -ex "run 2>/dev/null" -ex "source $root/gdb/memtrace.py" -ex "memtrace g_block" -ex kill \
    "$tests/stripped_main" >"$work/stripped_gdb.out" 2>&1
check_unnamed "stripped library, memtrace EXPR: the unnamed frame" "$work/stripped_gdb.out" \
    "$work/stripped_gdb.out"

# ---------------------------------------------------------------- without gdb
for p in sites sites_cxx sites_o2; do
    native=$("$tests/$p" 2>&1); nrc=$?
    traced=$(LD_PRELOAD=$lib "$tests/$p" 2>&1); trc=$?
    if [ "$native" = "$traced" ] && [ $nrc = 0 ] && [ $trc = 0 ]; then
        pass "$p: same output and exit code 0 under LD_PRELOAD"
    else
        fail "$p under LD_PRELOAD" "exit $trc (native $nrc), output '$traced' (native '$native')"
    fi
done

timeout 300 env LD_PRELOAD="$lib" "$tests/stress_fork" >"$work/stress.out" 2>&1
rc=$?
if [ $rc = 0 ]; then
    pass "threads + fork stress: $(cat "$work/stress.out")"
else
    fail "threads + fork stress" "exit code $rc (124 = hung): $(cat "$work/stress.out")"
fi

finish e2e
