#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# gdb helper tests: the `memtrace` command (gdb/memtrace.py) on a live process
# stopped with a thread inside malloc, on core files written with gcore, with
# bad input, after inferior calls, with a damaged memtrace_state (live and in
# core files), with the freed history at its maximum size, with file names
# that are not UTF-8, through the launcher and after `make install`
# (auto-load).
# Frames must name the exact file:line of the "SITE:<name>" markers in the
# test programs. Prints one PASS/FAIL line per check and
# "gdb-helper: N passed, N failed" last; exits 1 on failure.
set -u
. "$(dirname "$0")/lib.sh"
# A gdb that aborts (the failure some checks below guard against) leaves no
# core file in the tree; gcore is not affected.
ulimit -c 0
lib=${MEMTRACE_LIB:-$build/libmemtrace.so}
helper=$root/gdb/memtrace.py
# Without the quarantine in every run here: gdb_sites' answers are about
# addresses the allocator hands out again at once (it checks that it does).
export MEMTRACE_QUARANTINE=0
G=tests/progs/gdb_sites.c
O=tests/progs/sites_o2.c

# check_lines NAME TEXT PREFIX...: each PREFIX starts a line of TEXT, in this
# order (a frame prefix "  #0 f at FILE:LINE:" matches FILE:LINE exactly).
check_lines() {
    local name=$1 text=$2
    shift 2
    local missing
    missing=$(printf '%s\n' "$text" | awk -v n=$# '
        BEGIN { for (i = 1; i <= n; i++) want[i] = ARGV[i]; ARGC = 2; ARGV[1] = "-"; k = 1 }
        k <= n && index($0, want[k]) == 1 { k++ }
        END { if (k <= n) print want[k] }' "$@")
    if [ -z "$missing" ] && [ -n "$text" ]; then
        pass "$name"
    else
        fail "$name" "no line '$missing' (in order) in:
$text"
    fi
}
check_grep() { if grep -qF -- "$3" "$2"; then pass "$1"; else fail "$1" "'$3' not in $(cat "$2")"; fi; }
# check_line NAME FILE LINE: LINE is a whole line of FILE.
check_line() { if grep -qxF -- "$3" "$2"; then pass "$1"; else fail "$1" "no line '$3' in $(cat "$2")"; fi; }
check_no_traceback() {
    if grep -qE 'Traceback|Python Exception|Error occurred in Python' "$2"; then
        fail "$1" "a Python traceback: $(cat "$2")"
    else
        pass "$1"
    fi
}

# ---------------------------------------------------------------- live process
# Stop in checkpoint() while the spinner thread (gdb thread 3) runs malloc and
# free in a loop, then let only the spinner run until it is inside memtrace's
# record of a malloc: every memtrace command must answer from memory.
out=$work/live.out err=$work/live.err
vars="g_live g_freed g_again g_named g_near g_near_next g_near_freed"
# Addresses in no block: near a live block's end, before a live block, past
# a freed block's end, and far from every block.
nears=("(char *)g_near + 104" "(char *)g_near_next - 4" "(char *)g_near_freed + 104"
       "(char *)g_near + 0x4000000")
args=(-q -batch -nx -ex "set env LD_PRELOAD=$lib" -ex "break checkpoint" -ex "run 2>$err"
      -ex "source $helper")
for v in $vars; do args+=(-ex "printf \"@@ $v %p\\n\", $v"); done
args+=(-ex "thread 3" -ex "set scheduler-locking on" -ex "break mt_live_insert thread 3"
       -ex "continue" -ex "echo @@ spinner stack\\n" -ex "bt" -ex "echo @@ end\\n"
       -ex "memtrace (char *)g_live + 17" -ex "memtrace g_freed" -ex "memtrace g_again"
       -ex "memtrace g_named" -ex "memtrace ${nears[0]}" -ex "memtrace ${nears[1]}"
       -ex "memtrace ${nears[2]}" -ex "memtrace ${nears[3]}" -ex "memtrace top 2" -ex "memtrace stats"
       -ex "memtrace nosuch_variable" -ex "memtrace 0" -ex "memtrace 16" -ex "memtrace g_spins +"
       -ex "memtrace top x" -ex "gcore $work/gdb_sites.core"
       -ex "thread 1")
for v in "(char *)g_live + 17" g_freed g_again g_named "${nears[@]}"; do
    args+=(-ex "call print_trace($v)")
done
args+=(-ex "set scheduler-locking off" -ex "delete" -ex "continue")
timeout 120 gdb "${args[@]}" "$tests/gdb_sites" >"$out" 2>&1
rc=$?
if [ $rc = 0 ] && grep -q "exited normally" "$out"; then
    pass "live: answered while a thread was inside malloc, then the program ran to its end"
else
    fail "live session" "exit $rc (124 = hung): $(tail -20 "$out")"
fi
spin=$(awk '/^@@ spinner stack/ { on = 1; next } /^@@ end/ { on = 0 } on' "$out")
if grep -q "mt_live_insert" <<<"$spin" && grep -qE "(^#[0-9]+ +| in )(malloc|mt_malloc) " <<<"$spin"; then
    pass "live: the spinner thread was stopped inside malloc (memtrace's record)"
else
    fail "live: spinner inside malloc" "$spin"
fi

live=$(addr_of g_live "$out"); freed=$(addr_of g_freed "$out")
again=$(addr_of g_again "$out"); named=$(addr_of g_named "$out")
inner=$(printf '%#x' $((live + 17)))

check_interior() { # NAME FILE
    check_lines "$1" "$(block_of "$inner" "$2")" \
        "memtrace: $inner: 17 bytes inside a 100-byte block at $live allocated by thread 1 (allocation #" \
        "  #0 main at $(at $G gh_live)"
}
check_freed() { # NAME FILE
    local text
    text=$(block_of "$freed" "$2")
    check_lines "$1" "$text" \
        "memtrace: $freed: not a live heap block; freed blocks that covered it, newest first:" \
        "  freed block 1: start of a 48-byte block (allocation #" \
        "  freed by thread 1 at:" "  #0 main at $(at $G gh_reuse_free)" \
        "  allocated by thread 1 at:" "  #0 main at $(at $G gh_reuse_alloc)" \
        "  freed block 2: start of a 48-byte block (allocation #" \
        "  freed by thread 1 at:" "  #0 main at $(at $G gh_freed_free)" \
        "  allocated by thread 1 at:" "  #0 main at $(at $G gh_freed_alloc)"
    if grep -q "freed block 3" <<<"$text"; then fail "$1: exactly two records" "$text"; fi
}
check_again() { # NAME FILE
    check_lines "$1" "$(block_of "$again" "$2")" \
        "memtrace: $again: start of a 200-byte block allocated by thread 1 (allocation #" \
        "  #0 main at $(at $G gh_again)" \
        "  live again: freed blocks that covered this address before, newest first:" \
        "  freed block 1: start of a 200-byte block (allocation #" \
        "  freed by thread 1 at:" "  #0 main at $(at $G gh_old_free)" \
        "  allocated by thread 1 at:" "  #0 main at $(at $G gh_old_alloc)"
}
check_named() { # NAME FILE
    check_lines "$1" "$(block_of "$named" "$2")" \
        "memtrace: $named: start of a 77-byte block allocated by thread 2 \"gh-worker\" (allocation #" \
        "  #0 named_main at $(at $G gh_named)"
}
near=$(addr_of g_near "$out"); near_next=$(addr_of g_near_next "$out")
near_freed=$(addr_of g_near_freed "$out")
past=$(printf '%#x' $((near + 104))); before=$(printf '%#x' $((near_next - 4)))
past_freed=$(printf '%#x' $((near_freed + 104))); far=$(printf '%#x' $((near + 0x4000000)))
near_head="not a live heap block; the nearest live blocks and the newest freed ones within 4096 bytes:"

check_near_after() { # NAME FILE
    check_lines "$1" "$(block_of "$past" "$2")" "memtrace: $past: $near_head" \
        "  4 bytes after the end of a 100-byte block at $near allocated by thread 1 (allocation #" \
        "  #0 main at $(at $G gh_near)"
}
check_near_before() { # NAME FILE
    check_lines "$1" "$(block_of "$before" "$2")" "memtrace: $before: $near_head" \
        "  4 bytes before a 100-byte block at $near_next allocated by thread 1 (allocation #" \
        "  #0 main at $(at $G gh_near_next)"
}
check_near_freed() { # NAME FILE
    check_lines "$1" "$(block_of "$past_freed" "$2")" "memtrace: $past_freed: $near_head" \
        "  freed block 1: 4 bytes after the end of a 100-byte block at $near_freed (allocation #" \
        "  freed by thread 1 at:" "  #0 main at $(at $G gh_near_freed_free)" \
        "  allocated by thread 1 at:" "  #0 main at $(at $G gh_near_freed_alloc)"
}
check_far() { # NAME FILE
    check_line "$1" <(block_of "$far" "$2") "memtrace: $far: not a live heap block known to memtrace"
}
check_near_after "memtrace: 4 bytes past a block's end" "$out"
check_near_before "memtrace: 4 bytes before a block" "$out"
check_near_freed "memtrace: 4 bytes past a freed block's end" "$out"
check_far "memtrace: far from every block: the one-line answer" "$out"
check_interior "memtrace: interior pointer" "$out"
check_freed "memtrace: freed block, address reused and freed again" "$out"
check_again "memtrace: live again, with the earlier freed block" "$out"
check_named "memtrace: block of a named second thread" "$out"
check_lines "memtrace top: most live bytes first, exact bytes" \
    "$(awk '/^memtrace: top 2 of /,/^memtrace: [0-9]+ live blocks/' "$out")" \
    "memtrace: top 2 of " \
    "memtrace: site 1: 1000000 bytes in 1000 blocks allocated at:" "  #0 main at $(at $G gh_top)" \
    "memtrace: site 2: 50000 bytes in 10 blocks allocated at:" "  #0 main at $(at $G gh_second)"
if grep -qE '^memtrace: [0-9]+ live blocks, [0-9]+ live bytes, [0-9]+ call sites' "$out" &&
   grep -qE '^memtrace: [0-9]+ freed-history records \(capacity 65536\)' "$out" &&
   grep -qx 'memtrace: 0 stack captures unwound by libunwind instead of cfi' "$out" &&
   [ "$(sed -n 's/^memtrace: [0-9]* live blocks, \([0-9]*\) live bytes.*/\1/p' "$out")" -ge 1050077 ]; then
    pass "memtrace stats: live blocks and bytes, freed history"
else
    fail "memtrace stats" "$(grep '^memtrace: [0-9]' "$out")"
fi
check_grep "bad expression: one line" "$out" "memtrace: cannot evaluate 'nosuch_variable': No symbol \"nosuch_variable\" in current context."
check_grep "bad expression syntax: one line" "$out" "memtrace: cannot evaluate 'g_spins +': "
check_grep "top with a bad count: one line" "$out" "memtrace: top: bad count 'x'"
check_grep "null pointer: one line" "$out" "memtrace: 0x0: a null pointer, not a heap block"
check_grep "unknown address: one line" "$out" "memtrace: 0x10: not a live heap block known to memtrace"
check_no_traceback "bad input: no Python traceback" "$out"

# print_trace prints the same report from inside the process.
check_interior "print_trace: interior pointer" "$err"
check_freed "print_trace: freed block, address reused and freed again" "$err"
check_again "print_trace: live again" "$err"
check_named "print_trace: named thread" "$err"
check_near_after "print_trace: 4 bytes past a block's end" "$err"
check_near_before "print_trace: 4 bytes before a block" "$err"
check_near_freed "print_trace: 4 bytes past a freed block's end" "$err"
check_far "print_trace: far from every block: the one-line answer" "$err"
differ=
for a in "$inner" "$freed" "$again" "$named" "$past" "$before" "$past_freed" "$far"; do
    [ -n "$differ" ] || [ "$(block_of "$a" "$out")" = "$(block_of "$a" "$err")" ] || differ=$a
done
if [ -z "$differ" ]; then
    pass "memtrace and print_trace print the same lines"
else
    fail "memtrace = print_trace" "$(diff <(block_of "$differ" "$out") <(block_of "$differ" "$err"))"
fi

# ---------------------------------------------------------------- a live block's history
# g_many is live again after five lives at its address: by default its
# answer shows the newest 3 and counts the other 2 on one line; --all and
# MEMTRACE_HISTORY=all show all five, MEMTRACE_HISTORY=1 one; the gdb command
# and print_trace (the program's environment: gdb's, which it inherits)
# print the same lines every time. The spinner thread stays stopped during
# the call (scheduler-locking): its frees would push the lives out of the
# freed history.
hidden_line() { # N
    echo "  $1 earlier freed blocks at this address not shown; MEMTRACE_HISTORY=all or \`memtrace --all EXPR\` in gdb shows them"
}
# history_session NAME ENV...: memtrace g_many, memtrace --all g_many and
# print_trace(g_many) into $work/NAME.{gdb,all,pt}.
history_session() {
    local name=$1 o=$work/$1.out
    shift
    env "$@" timeout 120 gdb -q -batch -nx -ex "set env LD_PRELOAD=$lib" -ex "break checkpoint" \
        -ex "run 2>$work/$name.err" -ex "source $helper" -ex "printf \"@@ g_many %p\\n\", g_many" \
        -ex "echo @@cmd gdb\\n" -ex "memtrace g_many" -ex "echo @@cmd all\\n" -ex "memtrace --all g_many" \
        -ex "echo @@cmd end\\n" -ex "set scheduler-locking on" -ex "call print_trace(g_many)" -ex kill \
        "$tests/gdb_sites" >"$o" 2>&1
    many=$(addr_of g_many "$o")
    awk '$0 == "@@cmd gdb" { on = 1; next } /^@@cmd / { on = 0 } on' "$o" >"$work/$name.gdb"
    awk '$0 == "@@cmd all" { on = 1; next } /^@@cmd / { on = 0 } on' "$o" >"$work/$name.all"
    block_of "$many" "$work/$name.err" >"$work/$name.pt"
}
# check_history NAME FILE SHOWN HIDDEN: the answer in FILE lists the newest
# SHOWN lives (their exact sites), then the hidden line when HIDDEN > 0.
check_history() {
    local want=("memtrace: $many: start of a 300-byte block allocated by thread 1 (allocation #"
                "  #0 main at $(at $G gh_many)"
                "  live again: freed blocks that covered this address before, newest first:") i
    for ((i = 1; i <= $3; i++)); do
        want+=("  freed block $i: start of a 300-byte block (allocation #" "  freed by thread 1 at:"
               "  #0 main at $(at $G gh_many_free)" "  allocated by thread 1 at:"
               "  #0 main at $(at $G gh_many_alloc)")
    done
    check_lines "$1: the newest $3 lives" "$(cat "$2")" "${want[@]}"
    if [ "$4" = 0 ]; then
        check "$1: no line counting hidden lives" "" "$(grep 'earlier freed blocks' "$2")"
    else
        check "$1: the last line counts the $4 others" "$(hidden_line "$4")" "$(tail -1 "$2")"
    fi
    check "$1: exactly $3 lives listed" "$3" "$(grep -c '^  freed block ' "$2")"
}
history_session hist_default
check_history "history by default: memtrace EXPR" "$work/hist_default.gdb" 3 2
check_history "history by default: print_trace" "$work/hist_default.pt" 3 2
check_history "history: memtrace --all EXPR" "$work/hist_default.all" 5 0
check "history by default: memtrace and print_trace print the same lines" \
    "$(cat "$work/hist_default.pt")" "$(cat "$work/hist_default.gdb")"
history_session hist_all MEMTRACE_HISTORY=all
check_history "MEMTRACE_HISTORY=all: memtrace EXPR" "$work/hist_all.gdb" 5 0
check_history "MEMTRACE_HISTORY=all: print_trace" "$work/hist_all.pt" 5 0
history_session hist_one MEMTRACE_HISTORY=1
check_history "MEMTRACE_HISTORY=1: memtrace EXPR" "$work/hist_one.gdb" 1 4
check_history "MEMTRACE_HISTORY=1: print_trace" "$work/hist_one.pt" 1 4
check "MEMTRACE_HISTORY=1: memtrace and print_trace print the same lines" \
    "$(cat "$work/hist_one.pt")" "$(cat "$work/hist_one.gdb")"
history_session hist_bad MEMTRACE_HISTORY=x
check_history "MEMTRACE_HISTORY=x: the default" "$work/hist_bad.pt" 3 2
check_grep "MEMTRACE_HISTORY=x: print_trace's warning" "$work/hist_bad.err" \
    'memtrace: MEMTRACE_HISTORY="x" is not all or a whole number from 0 to 67108864; using 3'
check_grep "MEMTRACE_HISTORY=x: the gdb command's warning" "$work/hist_bad.gdb" \
    'memtrace: MEMTRACE_HISTORY="x" is not all or a whole number from 0 to 67108864; using 3'

# ---------------------------------------------------------------- core files
core=$work/gdb_sites.core
out2=$work/core.out
timeout 120 gdb -q -batch -nx "$tests/gdb_sites" "$core" -ex "source $helper" \
    -ex "memtrace g_freed" -ex "memtrace g_named" -ex "memtrace top 1" \
    -ex "memtrace ${nears[0]}" -ex "memtrace ${nears[1]}" -ex "memtrace ${nears[2]}" \
    -ex "memtrace ${nears[3]}" >"$out2" 2>&1
check_freed "core: freed block, both sites" "$out2"
check_named "core: named thread" "$out2"
check_near_after "core: 4 bytes past a block's end" "$out2"
check_near_before "core: 4 bytes before a block" "$out2"
check_near_freed "core: 4 bytes past a freed block's end" "$out2"
check_far "core: far from every block: the one-line answer" "$out2"
differ=
for a in "$freed" "$past" "$before" "$past_freed" "$far"; do
    [ -n "$differ" ] || [ "$(block_of "$a" "$out2")" = "$(block_of "$a" "$out")" ] || differ=$a
done
if [ -z "$differ" ]; then
    pass "core: the same reports as on the live process"
else
    fail "core = live" "$(diff <(block_of "$differ" "$out2") <(block_of "$differ" "$out"))"
fi

out3=$work/o2.out
timeout 120 gdb -q -batch -nx -ex "set env LD_PRELOAD=$lib" -ex "break checkpoint" -ex "run" \
    -ex "printf \"@@ g_inline %p\\n\", g_inline" -ex "gcore $work/o2.core" -ex "kill" \
    "$tests/sites_o2" >"$out3" 2>&1
inl=$(addr_of g_inline "$out3")
out4=$work/o2core.out
timeout 120 gdb -q -batch -nx "$tests/sites_o2" "$work/o2.core" -ex "source $helper" \
    -ex "memtrace g_inline" >"$out4" 2>&1
check_lines "core: always-inline site and its caller's line" "$(block_of "$inl" "$out4")" \
    "memtrace: $inl: start of a 4000-byte block allocated by thread 1 (allocation #" \
    "  #0 zeroed_buffer at $(at $O inline)" \
    "     inlined into build_buffer at $(at $O inline_caller)"
check_no_traceback "core: no Python traceback" "$out4"

# ---------------------------------------------------------------- handles, any frame language
# Stopped in a Rust frame (no `set language`), then in a C++ one: `memtrace v`
# on a value that owns a heap block (a Vec, a std::vector, ...) says which
# pointer inside it it used and answers for that block; on core files too.
R=tests/progs/rust_handles.rs
C=tests/progs/cxx_handles.cpp
# The output after the marker "@@ NAME" in FILE, up to the next marker.
section() { awk -v m="@@ $1" '$0 == m { on = 1; next } /^@@ / { on = 0 } on' "$2"; }
# asking NAME...: gdb arguments that mark and ask `memtrace NAME` for each.
asking() { local x; for x in "$@"; do printf '%s\0' -ex "echo @@ $x\\n" -ex "memtrace $x"; done; }
# check_handle NAME FILE MARKER USING ANSWER FUNC SRC SITE: the answer after
# MARKER starts with USING (no such line if empty), then a line starting
# "memtrace: 0x...: " and ANSWER (a regex), then, before any freed record, a
# frame in FUNC at SITE's exact line in SRC.
check_handle() {
    local text head first
    text=$(section "$3" "$2")
    head=$(sed -n '/^  live again:/q;p' <<<"$text")
    first=$(sed -n 1p <<<"$head")
    if [ -n "$4" ]; then
        [ "${first#"$4"}" != "$first" ] || { fail "$1" "no first line '$4' in:
$text"; return; }
        head=$(sed 1d <<<"$head")
    fi
    if sed -n 1p <<<"$head" | grep -qE "^memtrace: 0x[0-9a-f]+: $5" &&
       grep -qE "^  #[0-9]+ $6 at $(at "$7" "$8")" <<<"$head"; then
        pass "$1"
    else
        fail "$1" "no answer '$5' with a frame '$6 at $(at "$7" "$8")' in:
$text"
    fi
}
start="start of a [0-9]+-byte block allocated by thread 1 \\(allocation #"

outrh=$work/rust_handles.out errrh=$work/rust_handles.err
mapfile -d '' rasks < <(asking v s b slice rc arc '*r' empty pair holder)
timeout 120 gdb -q -batch -nx -ex "set env LD_PRELOAD=$lib" -ex "break rust_handles::checkpoint" \
    -ex "run 2>$errrh" -ex "source $helper" -ex "echo @@ stats\\n" -ex "memtrace stats" -ex "up" \
    "${rasks[@]}" -ex "echo @@ language\\n" -ex "show language" \
    -ex "gcore $work/rust_handles.core" \
    -ex "set language c" -ex "call print_trace(v.buf.ptr.pointer.pointer)" \
    -ex 'set $print_trace = print_trace' -ex "set language auto" \
    -ex 'call $print_trace(s.vec.buf.ptr.pointer.pointer as *mut u8)' \
    -ex "delete" -ex "continue" "$tests/rust_handles" >"$outrh" 2>&1
rh="rust_handles::hold"
if section stats "$outrh" | grep -qE '^memtrace: [0-9]+ live blocks, [0-9]+ live bytes, [0-9]+ call sites'; then
    pass "Rust frame: memtrace stats"
else
    fail "Rust frame: memtrace stats" "$(section stats "$outrh")"
fi
check_handle "Rust frame: a Vec, through its buffer" "$outrh" v \
    "memtrace: using v.buf.ptr.pointer.pointer (the Vec's buffer)" "start of a 32-byte block" "$rh" $R rh_vec
check_handle "Rust frame: a String, through its buffer" "$outrh" s \
    "memtrace: using s.vec.buf.ptr.pointer.pointer (the String's buffer)" "start of a 38-byte block" \
    "$rh" $R rh_string
check_handle "Rust frame: a Box (a pointer to gdb)" "$outrh" b "" "start of a 96-byte block" "$rh" $R rh_box
check_handle "Rust frame: a boxed slice, through its data pointer" "$outrh" slice \
    "memtrace: using slice.data_ptr (the Box's allocation)" "start of a 22-byte block" "$rh" $R rh_slice
check_handle "Rust frame: an Rc, through its allocation" "$outrh" rc \
    "memtrace: using rc.ptr.pointer (the Rc's allocation: its counts and value)" "$start" "$rh" $R rh_rc
check_handle "Rust frame: an Arc, through its allocation" "$outrh" arc \
    "memtrace: using arc.ptr.pointer (the Arc's allocation: its counts and value)" "$start" "$rh" $R rh_arc
check_handle "Rust frame: a Vec through a reference (*r)" "$outrh" '*r' \
    "memtrace: using (*r).buf.ptr.pointer.pointer (the Vec's buffer)" "start of a 32-byte block" "$rh" $R rh_vec
check_line "Rust frame: an empty Vec: one line" <(section empty "$outrh") \
    "memtrace: empty is an empty Vec: empty.buf.ptr.pointer.pointer is 0x4, not a heap block"
check_lines "Rust frame: a struct with two heap pointers lists its pointer fields" "$(section pair "$outrh")" \
    "memtrace: 'pair' is a rust_handles::Pair, not an address; its pointer fields (ask about one, e.g. \`memtrace pair.left\`):" \
    "  pair.left = 0x" "  pair.right.buf.ptr.pointer.pointer = 0x"
check_handle "Rust frame: a struct with one heap pointer, through it" "$outrh" holder \
    "memtrace: using holder.only.buf.ptr.pointer.pointer (the only pointer field of 'holder' into a live heap block)" \
    "start of a 20-byte block" "$rh" $R rh_holder
check_line "Rust frame: the language setting is left as it was" <(section language "$outrh") \
    'The current source language is "auto; currently rust".'
# doc/answers.adoc: print_trace from a Rust frame, under `set language c`.
vaddr=$(section v "$outrh" | sed -n 's/^memtrace: \(0x[0-9a-f]*\): start.*/\1/p')
if [ -n "$vaddr" ] && [ "$(block_of "$vaddr" "$errrh")" = "$(section v "$outrh" | sed 1d)" ]; then
    pass "Rust frame: call print_trace under set language c prints memtrace's lines"
else
    fail "Rust frame: call print_trace" "$(diff <(block_of "$vaddr" "$errrh") <(section v "$outrh" | sed 1d))"
fi
saddr=$(section s "$outrh" | sed -n 's/^memtrace: \(0x[0-9a-f]*\): start.*/\1/p')
if [ -n "$saddr" ] && [ "$(block_of "$saddr" "$errrh")" = "$(section s "$outrh" | sed 1d)" ]; then
    pass "Rust frame: call \$print_trace(... as *mut u8) with a Rust argument prints memtrace's lines"
else
    fail "Rust frame: call \$print_trace" "$(diff <(block_of "$saddr" "$errrh") <(section s "$outrh" | sed 1d))"
fi
check_no_traceback "Rust frame: no Python traceback" "$outrh"

# A library without debug information: memtrace_state is only an ELF symbol,
# which the helper finds with C's parser under a forced `set language c`.
strip -g -o "$work/libmemtrace-nodebug.so" "$lib"
outrn=$work/rust_nodebug.out
timeout 120 gdb -q -batch -nx -ex "set env LD_PRELOAD=$work/libmemtrace-nodebug.so" \
    -ex "break rust_handles::checkpoint" -ex "run" -ex "source $helper" -ex "up" \
    -ex "echo @@ v\n" -ex "memtrace v" -ex "show language" -ex "set language rust" \
    -ex "echo @@ stats\n" -ex "memtrace stats" -ex "show language" \
    -ex "delete" -ex "continue" "$tests/rust_handles" >"$outrn" 2>&1
check_handle "Rust frame, library without debug information: a Vec" "$outrn" v \
    "memtrace: using v.buf.ptr.pointer.pointer (the Vec's buffer)" "start of a 32-byte block" "$rh" $R rh_vec
check_line "Rust frame, library without debug information: language auto kept" <(section v "$outrn") \
    'The current source language is "auto; currently rust".'
check_lines "Rust frame, library without debug information: set language rust kept" \
    "$(section stats "$outrn")" "memtrace: " 'The current source language is "rust".'

outrc=$work/rust_handles_core.out
mapfile -d '' rasks < <(asking v s)
timeout 120 gdb -q -batch -nx "$tests/rust_handles" "$work/rust_handles.core" -ex "source $helper" \
    -ex "echo @@ stats\\n" -ex "memtrace stats" -ex up "${rasks[@]}" >"$outrc" 2>&1
check_handle "Rust frame, core file: a Vec" "$outrc" v \
    "memtrace: using v.buf.ptr.pointer.pointer (the Vec's buffer)" "start of a 32-byte block" "$rh" $R rh_vec
check_handle "Rust frame, core file: a String" "$outrc" s \
    "memtrace: using s.vec.buf.ptr.pointer.pointer (the String's buffer)" "start of a 38-byte block" \
    "$rh" $R rh_string
check_grep "Rust frame, core file: memtrace stats" <(section stats "$outrc") " live bytes, "

outch=$work/cxx_handles.out
mapfile -d '' casks < <(asking v s small u made owned ref empty none node holder)
timeout 120 gdb -q -batch -nx -ex "set env LD_PRELOAD=$lib" -ex "break checkpoint" -ex "run" \
    -ex "source $helper" -ex "up" "${casks[@]}" -ex "gcore $work/cxx_handles.core" \
    -ex "set language rust" -ex "echo @@ forced\\n" -ex "memtrace holder" -ex "show language" \
    -ex "delete" -ex "continue" "$tests/cxx_handles" >"$outch" 2>&1
check_handle "C++ frame: a std::vector, through its buffer" "$outch" v \
    "memtrace: using v._M_impl._M_start (the vector's buffer)" "start of a 160-byte block" 'hold\(\)' $C ch_vector
check_handle "C++ frame: a long std::string, through its characters" "$outch" s \
    "memtrace: using s._M_dataplus._M_p (the string's characters)" "start of a 101-byte block" 'hold\(\)' $C ch_string
if [ "$(section small "$outch" | grep -cxE "memtrace: small: the string's characters are inside the object \(short-string optimisation\), not on the heap: small\._M_dataplus\._M_p is 0x[0-9a-f]+")" = 1 ] &&
   [ "$(section small "$outch" | wc -l)" = 1 ]; then
    pass "C++ frame: a short std::string has no heap block: one line"
else
    fail "C++ frame: a short std::string" "$(section small "$outch")"
fi
check_handle "C++ frame: a unique_ptr, through its pointer" "$outch" u \
    "memtrace: using u._M_t._M_t._M_head_impl (the unique_ptr's object)" "start of a 128-byte block" 'hold\(\)' $C ch_unique
check_handle "C++ frame: make_shared: the object inside its control block's block" "$outch" made \
    "memtrace: using made._M_ptr (the shared_ptr's object), in one block with its control block" \
    "[0-9]+ bytes inside a [0-9]+-byte block at 0x" 'hold\(\)' $C ch_make_shared
check_handle "C++ frame: shared_ptr(new T): the object, the control block named" "$outch" owned \
    "memtrace: using owned._M_ptr (the shared_ptr's object); its control block owned._M_refcount._M_pi at 0x" \
    "start of a 8-byte block" 'hold\(\)' $C ch_shared_new
check_handle "C++ frame: a reference to a std::vector" "$outch" ref \
    "memtrace: using ref._M_impl._M_start (the vector's buffer)" "start of a 160-byte block" 'hold\(\)' $C ch_vector
check_line "C++ frame: an empty std::vector: one line" <(section empty "$outch") \
    "memtrace: empty is an empty vector: empty._M_impl._M_start is 0x0, not a heap block"
check_line "C++ frame: an empty unique_ptr: one line" <(section none "$outch") \
    "memtrace: none is an empty unique_ptr: none._M_t._M_t._M_head_impl is 0x0, not a heap block"
check_lines "C++ frame: a struct with two heap pointers lists its pointer fields" "$(section node "$outch")" \
    "memtrace: 'node' is a Node, not an address; its pointer fields (ask about one, e.g. \`memtrace node.data\`):" \
    "  node.data = 0x" "  node.name = 0x" "  node.next = 0x0"
check_handle "C++ frame: a struct with one heap pointer, through it" "$outch" holder \
    "memtrace: using holder.only (the only pointer field of 'holder' into a live heap block)" \
    "start of a 40-byte block" 'hold\(\)' $C ch_holder
check_lines "C++ frame under set language rust: the same answer, the setting kept" \
    "$(section forced "$outch")" "memtrace: using holder.only (" "memtrace: 0x" \
    'The current source language is "rust".'
check_no_traceback "C++ frame: no Python traceback" "$outch"

outcc=$work/cxx_handles_core.out
mapfile -d '' casks < <(asking v made)
timeout 120 gdb -q -batch -nx "$tests/cxx_handles" "$work/cxx_handles.core" -ex "source $helper" \
    -ex up "${casks[@]}" >"$outcc" 2>&1
check_handle "C++ frame, core file: a std::vector" "$outcc" v \
    "memtrace: using v._M_impl._M_start (the vector's buffer)" "start of a 160-byte block" 'hold\(\)' $C ch_vector
check_handle "C++ frame, core file: make_shared" "$outcc" made \
    "memtrace: using made._M_ptr (the shared_ptr's object), in one block with its control block" \
    "[0-9]+ bytes inside a [0-9]+-byte block at 0x" 'hold\(\)' $C ch_make_shared
check_no_traceback "handles, core files: no Python traceback" <(cat "$outrc" "$outcc")

# ---------------------------------------------------------------- no process, no memtrace
out5=$work/noproc.out
timeout 60 gdb -q -batch -nx "$tests/gdb_sites" -ex "source $helper" -ex "memtrace g_live" >"$out5" 2>&1
check_grep "no process: one line" "$out5" "memtrace: no process and no core file"
out6=$work/nolib.out
timeout 60 gdb -q -batch -nx -ex "break checkpoint" -ex "run" -ex "source $helper" \
    -ex "memtrace g_live" -ex "kill" "$tests/gdb_sites" >"$out6" 2>&1
check_grep "not under memtrace: one line" "$out6" "memtrace: this program does not run under memtrace"
check_no_traceback "no process, no memtrace: no Python traceback" "$out6"

# ---------------------------------------------------------------- inferior calls, literals
# gdb_quiet has one thread, so nothing changes the tables but what gdb does.
Q=tests/progs/gdb_quiet.c
qargs=(-q -batch -nx -ex "set env LD_PRELOAD=$lib" -ex "break checkpoint" -ex "run"
       -ex "source $helper" -ex "printf \"@@ g_block %p\\n\", g_block")
out9=$work/calls.out
timeout 60 gdb "${qargs[@]}" \
    -ex "memtrace g_block" -ex "call free(g_block)" -ex "memtrace g_block" \
    -ex "memtrace stats" -ex "print malloc(77)" -ex "echo @@ after malloc\\n" -ex "memtrace stats" \
    -ex "set var g_block = 0" \
    -ex 'memtrace "abc"' -ex 'memtrace malloc(5)' -ex "echo @@ after literals\\n" -ex "memtrace stats" \
    -ex "delete" -ex "continue" "$tests/gdb_quiet" >"$out9" 2>&1
blk=$(addr_of g_block "$out9")
check_line "inferior call free(p): the next answer sees the free" "$out9" \
    "memtrace: $blk: not a live heap block; freed blocks that covered it, newest first:"
check_line "inferior call malloc(77): the next answer counts the block" \
    <(sed -n '/^@@ after malloc/,/^@@ after literals/p' "$out9") \
    "memtrace: 1 live blocks, 77 live bytes, 1 call sites with live blocks"
check_line "a string literal is not an address: one line" "$out9" \
    'memtrace: "abc" is not a pointer or an address'
check_line "an expression that calls a function is refused: one line" "$out9" \
    "memtrace: cannot evaluate 'malloc(5)': Cannot call functions in the program: may-call-functions is off."
after=$(sed -n '/^@@ after literals/,$p' "$out9")
if grep -qxE 'memtrace: 1 live blocks, 77 live bytes, 1 call sites with live blocks' <<<"$after" &&
   grep -qxE 'memtrace: [0-9]+ distinct stacks, 3 allocations recorded, 1 threads seen' <<<"$after" &&
   grep -q "exited normally" <<<"$after"; then
    pass "literal and call expressions allocate nothing in the program"
else
    fail "no allocation in the program" "$after"
fi
check_no_traceback "inferior calls, literals: no Python traceback" "$out9"
# A thread name holding a newline and "@@": the name is printed escaped
# ("\x0a", one line), the answers from memtrace-symbolize end at a marker
# no name can hold, so the first answer is whole and the next one is still
# its own.
outn=$work/oddname.out
timeout 60 gdb -q -batch -nx -ex "set env LD_PRELOAD=$lib" -ex "break checkpoint" \
    -ex "run oddname" -ex "source $helper" -ex "printf \"@@ g_block %p\\n\", g_block" \
    -ex "printf \"@@ g_freed %p\\n\", g_freed" -ex "memtrace g_block" -ex "echo @@ next\\n" \
    -ex "memtrace g_freed" -ex "delete" -ex "continue" "$tests/gdb_quiet" >"$outn" 2>&1
nblk=$(addr_of g_block "$outn")
nfreed=$(addr_of g_freed "$outn")
first=$(sed -n "/^memtrace: $nblk: /,/^@@ next/p" "$outn")
second=$(sed -n '/^@@ next/,$p' "$outn")
if [ "$(sed -n 1p <<<"$first" | sed 's/#[0-9]*)$/#N)/')" = \
     "memtrace: $nblk: start of a 64-byte block allocated by thread 1 \"q\\x0a@@\\x0a@@ error\" (allocation #N)" ] &&
   grep -q "^  #0 main at $(at $Q gq_block)" <<<"$first" &&
   [ "$(sed -n 2p <<<"$second")" = \
     "memtrace: $nfreed: not a live heap block; freed blocks that covered it, newest first:" ] &&
   grep -q "^  #0 main at $(at $Q gq_freed_free)" <<<"$second"; then
    pass "a thread name with a newline and @@: each answer whole and its own"
else
    fail "thread name with @@" "$(sed -n '/^@@ g_block/,$p' "$outn")"
fi
check_no_traceback "thread name with @@: no Python traceback" "$outn"

# 1,000 freed records with 20-frame stacks cover one address: the request
# to memtrace-symbolize is far larger than a pipe, and the helper used to
# block writing it while memtrace-symbolize blocked writing its answer.
outr=$work/reuse.out
timeout 120 gdb -q -batch -nx -ex "set env LD_PRELOAD=$lib" -ex "break checkpoint" \
    -ex "run reuse" -ex "source $helper" -ex "printf \"@@ g_reused %p\\n\", g_reused" \
    -ex "memtrace g_reused" -ex "echo @@ done\\n" -ex "memtrace g_block" \
    -ex "delete" -ex "continue" "$tests/gdb_quiet" >"$outr" 2>&1
rc=$?
if [ $rc = 0 ] && [ "$(grep -c "^  freed block [0-9]*: start of a 40-byte block" "$outr")" = 1000 ] &&
   grep -q "^  freed block 1000: " "$outr" && grep -q "^@@ done" "$outr" &&
   [ "$(grep -c "^  #0 churn_at at $(at $Q gq_reuse)" "$outr")" = 1000 ] &&
   grep -q "^memtrace: 0x[0-9a-f]*: start of a 64-byte block allocated by thread 1" "$outr"; then
    pass "1,000 freed records on one address: all shown, and the next answer is its own"
else
    fail "1,000 freed records" "exit $rc (124 = hung); $(grep -c 'freed block' "$outr") records; $(tail -3 "$outr")"
fi

out10=$work/noproc_literal.out
timeout 60 gdb -q -batch -nx "$tests/gdb_quiet" -ex "source $helper" -ex 'memtrace "abc"' >"$out10" 2>&1
check_line "no process, string literal: one line" "$out10" \
    "memtrace: no process and no core file: start the program (\`run\`, \`memtrace gdb PROG\`) or load a core file first"
check_no_traceback "no process, string literal: no Python traceback" "$out10"

# ---------------------------------------------------------------- damaged tables
# Each case damages one field of memtrace_state or of a shard header in the
# stopped program, asks, then puts the saved bytes back. Every answer is one
# "looks corrupted" line naming the field; gdb and the program go on. Two
# damaged descriptors are also written into core files.
big=1099511627776 # 1 << 40
corrupt() { echo "memtrace: memtrace_state looks corrupted ($1)"; }
dargs=("${qargs[@]}" -ex 'set var $saved = memtrace_state'
       -ex 'set var $h = ((unsigned long)g_block >> memtrace_state.live_hash_shift) * memtrace_state.live_hash_multiplier'
       -ex 'set var $g = memtrace_state.live_group_bits'
       -ex 'set var $shard = ((((unsigned long)g_block >> memtrace_state.live_region_shift) << $g) | ($g ? $h >> (64 - $g) : 0)) & (memtrace_state.live_shard_count - 1)'
       -ex 'set var $slotsp = (unsigned long *)(memtrace_state.live_shards + $shard * memtrace_state.live_shard_size + memtrace_state.live_slots_offset)'
       -ex 'set var $slots = *$slotsp'
       -ex 'set var $capp = (unsigned long *)($slots + memtrace_state.live_cap_offset)'
       -ex 'set var $cap = *$capp' -ex 'printf "@@ shard %lu %#lx\n", $shard, $slots')
damage() { # SET... COMMAND: damage with the SETs, ask COMMAND, put the bytes back
    local a
    for a in "$@"; do dargs+=(-ex "$a"); done
    dargs+=(-ex 'set var memtrace_state = $saved' -ex 'set var *$slotsp = $slots' -ex 'set var *$capp = $cap')
}
damage "set var memtrace_state.live_shard_count = $big" "memtrace top 1"
damage "set var memtrace_state.live_shard_bits = 60" "memtrace g_block"
damage "set var memtrace_state.entry_size = 12" "memtrace top 1"
damage "set var memtrace_state.entry_ptr = 1000" "memtrace g_block"
damage "set var memtrace_state.stack_depth_mask = 0xffffffffff" "memtrace g_block"
damage "set var memtrace_state.stack_chunks = 16" "memtrace g_block"
damage "set var memtrace_state.freed_capacity = $big" "memtrace stats"
damage "set var memtrace_state.freed_record_size = 4096" "memtrace g_freed"
damage "set var memtrace_state.freed_ring = 16" "memtrace g_freed"
damage "set var memtrace_state.threads_name_size = $big" "memtrace g_block"
damage "set var memtrace_state.threads_max = $big" "memtrace g_block"
damage "set var memtrace_state.seq_counter = 16" "memtrace stats"
damage "set var memtrace_state.size = 8" "memtrace stats"
damage "set var *\$capp = $((2 * big))" "memtrace g_block"
damage 'set var *$slotsp = 16' "memtrace top 1"
damage "set var memtrace_state.magic[0] = 'X'" "gcore $work/magic.core"
damage "set var memtrace_state.live_shard_count = $big" "gcore $work/shards.core"
dargs+=(-ex "memtrace g_block" -ex "print 1+1" -ex "delete" -ex "continue")
out11=$work/damaged.out
timeout 60 gdb "${dargs[@]}" "$tests/gdb_quiet" >"$out11" 2>&1
blk=$(addr_of g_block "$out11")
read -r shard slots < <(awk '$1 == "@@" && $2 == "shard" { print $3, $4; exit }' "$out11")
for c in "live_shard_count $big, not 1 << live_shard_bits" \
         "live_shard_bits 60, more than 12" \
         "entry_size 12, not a multiple of 8" \
         "entry_ptr 1000, not an 8-byte field inside entry_size 32" \
         "stack_depth_mask 0xffffffffff, not a mask of 1 to 16 bits" \
         "stack chunk table at 0x10 unreadable" \
         "freed_capacity $big, more than 67108864" \
         "freed_record_size 4096, more than 256" \
         "freed history at 0x10 unreadable" \
         "threads_name_size $big, more than 256" \
         "threads_max $big, more than 1048576" \
         "allocation counter at 0x10 unreadable" \
         "size 8, less than 368" \
         "live shard $shard: capacity $((2 * big)), not 1 to $big" \
         "live shard $shard: slots at 0x10 unreadable"; do
    check_line "damaged: ${c%%,*}" "$out11" "$(corrupt "$c")"
done
if grep -qx "memtrace: $blk: start of a 64-byte block allocated by thread 1 (allocation #1)" "$out11" &&
   grep -qx '$1 = 2' "$out11" && grep -q "exited normally" "$out11"; then
    pass "damaged: gdb and the program went on, the repaired tables answer again"
else
    fail "damaged: gdb and the program go on" "$(tail -5 "$out11")"
fi
check_no_traceback "damaged: no Python traceback" "$out11"

# A core whose descriptor is damaged is not "a program not run under memtrace".
out12=$work/damaged_core.out
timeout 60 gdb -q -batch -nx "$tests/gdb_quiet" "$work/magic.core" -ex "source $helper" \
    -ex "memtrace stats" -ex "print 1+1" -ex "core-file $work/shards.core" -ex "memtrace top 1" \
    -ex "print 2+2" >"$out12" 2>&1
check_line "damaged core: bad magic" "$out12" "$(corrupt 'magic "XEMTRACE", not "MEMTRACE"')"
check_line "damaged core: shard count" "$out12" "$(corrupt "live_shard_count $big, not 1 << live_shard_bits")"
if grep -qx '$1 = 2' "$out12" && grep -qx '$2 = 4' "$out12"; then
    pass "damaged core: gdb goes on"
else
    fail "damaged core: gdb goes on" "$(cat "$out12")"
fi
check_no_traceback "damaged core: no Python traceback" "$out12"

# ---------------------------------------------------------------- freed history at its maximum
# MEMTRACE_FREED=67108864 (1 << 26, the documented maximum) with one record
# pushed: the lookup must read that record, not the 3.5 GiB ring. Once the
# program is stopped, gdb's address space is capped (a soft limit: gdb
# itself, not the program, which already holds its ring), so a helper that
# reads the whole ring fails at once instead of taking the machine's memory.
out13=$work/freed_max.out
t0=$(date +%s%N)
timeout 20 gdb -q -batch -nx -ex "set env LD_PRELOAD=$lib" -ex "set env MEMTRACE_FREED=67108864" \
    -ex "break checkpoint" -ex "run" \
    -ex "python import resource as r; r.setrlimit(r.RLIMIT_AS, (3 << 30, r.getrlimit(r.RLIMIT_AS)[1]))" \
    -ex "source $helper" \
    -ex "printf \"@@ g_freed %p\\n\", g_freed" -ex "memtrace g_freed" -ex "memtrace stats" \
    -ex "delete" -ex "continue" "$tests/gdb_quiet" >"$out13" 2>&1
rc=$?
secs=$(( ($(date +%s%N) - t0) / 1000000 ))
secs=$((secs / 1000)).$(printf '%03d' $((secs % 1000)))
fr=$(addr_of g_freed "$out13")
check_lines "MEMTRACE_FREED=67108864: the one freed block, answered in ${secs} s (limit 20 s)" \
    "$(block_of "$fr" "$out13")" \
    "memtrace: $fr: not a live heap block; freed blocks that covered it, newest first:" \
    "  freed block 1: start of a 32-byte block (allocation #2, freed after allocation #2)" \
    "  freed by thread 1 at:" "  #0 main at $(at $Q gq_freed_free)" \
    "  allocated by thread 1 at:" "  #0 main at $(at $Q gq_freed_alloc)"
check_line "MEMTRACE_FREED=67108864: stats count the pushed records only" "$out13" \
    "memtrace: 1 freed-history records (capacity 67108864)"
if [ $rc = 0 ] && grep -q "exited normally" "$out13"; then
    pass "MEMTRACE_FREED=67108864: gdb and the program went on"
else
    fail "MEMTRACE_FREED=67108864: gdb and the program go on" "exit $rc (124: timeout): $(tail -5 "$out13")"
fi

# ---------------------------------------------------------------- names that are not UTF-8
# A program, and so its module name, and a core file in a directory whose
# name has a byte that is not UTF-8.
odd=$work/odd$'\xff'dir
mkdir -p "$odd" && cp "$tests/gdb_quiet" "$odd/"
top_lines=("memtrace: top 1 of 1 call sites by live bytes (64 bytes in 1 live block in all)"
           "memtrace: site 1: 64 bytes in 1 block allocated at:" "  #0 main at $(at $Q gq_block)")
out14=$work/odd_live.out
timeout 60 gdb -q -batch -nx -ex "set env LD_PRELOAD=$lib" -ex "break checkpoint" -ex "run" \
    -ex "source $helper" -ex "memtrace top 1" -ex "gcore $odd/core" -ex "kill" \
    "$odd/gdb_quiet" >"$out14" 2>&1
check_lines "non-UTF-8 path: memtrace top on the live process" "$(cat "$out14")" "${top_lines[@]}"
out15=$work/odd_core.out
timeout 60 gdb -q -batch -nx "$odd/gdb_quiet" "$odd/core" -ex "source $helper" \
    -ex "memtrace top 1" >"$out15" 2>&1
check_lines "non-UTF-8 path: memtrace top on its core file" "$(cat "$out15")" "${top_lines[@]}"
check_no_traceback "non-UTF-8 path: no Python traceback" <(cat "$out14" "$out15")

# ---------------------------------------------------------------- launcher
run_env=$("$build/memtrace" run env | grep '^LD_PRELOAD=')
if [ "$run_env" = "LD_PRELOAD=$lib" ] && "$build/memtrace" run "$tests/sites_o2"; then
    pass "launcher: memtrace run preloads the library"
else
    fail "launcher: memtrace run" "$run_env"
fi
# A gdb stand-in that says whether gdb itself got LD_PRELOAD, adds batch
# commands before --args, then runs the real gdb.
cat >"$work/gdb" <<EOS
#!/usr/bin/env bash
echo "@@ gdb LD_PRELOAD=[\${LD_PRELOAD:-}]"
a=()
for x in "\$@"; do
    [ "\$x" = --args ] && a+=(-batch -nx -ex "break checkpoint" -ex run -ex "memtrace (char *)g_live + 17" -ex kill)
    a+=("\$x")
done
exec gdb "\${a[@]}"
EOS
chmod +x "$work/gdb"
out7=$work/launcher.out
GDB=$work/gdb timeout 120 "$build/memtrace" gdb "$tests/gdb_sites" >"$out7" 2>&1
check_grep "launcher: gdb itself runs without LD_PRELOAD" "$out7" "@@ gdb LD_PRELOAD=[]"
check_grep "launcher: memtrace gdb loads the helper and preloads the program" "$out7" \
    "bytes inside a 100-byte block at"

# ---------------------------------------------------------------- install, auto-load
prefix=$work/prefix
if make -s -C "$root" install PREFIX="$prefix" >"$work/install.out" 2>&1; then
    out8=$work/autoload.out
    timeout 120 gdb -q -batch -nx -iex "add-auto-load-safe-path $prefix/lib" \
        -ex "set env LD_PRELOAD=$prefix/lib/libmemtrace.so" -ex "break checkpoint" -ex run \
        -ex "memtrace (char *)g_live + 17" -ex kill "$tests/gdb_sites" >"$out8" 2>&1
    # The spinner thread may be stopped holding a shard lock: the answer
    # then has a "(read without the table lock ...)" line before the frames.
    check_lines "install: helper auto-loaded with the library, installed symbolizer" \
        "$(grep -v '^  (read without the table lock' "$out8" | grep -A1 '^memtrace: 0x')" \
        "memtrace: " "  #0 main at $(at $G gh_live)"
    check_grep "install: memtrace run finds the installed library" \
        <("$prefix/bin/memtrace" run env) "LD_PRELOAD=$prefix/lib/libmemtrace.so"
else
    fail "make install" "$(cat "$work/install.out")"
fi

finish gdb-helper
