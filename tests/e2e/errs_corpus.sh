#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The heap-bug corpus (tests/progs/errs_corpus.cpp), each case built plainly
# and with -fsanitize=address (the oracle), run under memtrace's default and
# under `memtrace run --check`:
# - for every bug ASan reports, --check reports the same kind and fails the
#   run; where it is caught at the access, the report names the access line;
# - the default run fails wherever it reports, reports ASan's kind, and
#   never turns a native failure (glibc's abort) into status 0;
# - a correct program stays silent with status 0;
# - an error counts for the status unless the program's own is non-zero
#   (exit, return from main, _exit);
# - underflows are named as such, with ASan's distance;
# - the "detected in exit" stack starts at the program, not in exit's
#   machinery or memtrace's destructors.
set -u
. "$(dirname "$0")/lib.sh"
prog=$tests/errs_corpus
src=tests/progs/errs_corpus.cpp
asan=$work/errs_corpus_asan
ulimit -S -c 0

g++ -O0 -g -pthread -fsanitize=address -Wno-use-after-free -o "$asan" "$root/$src" ||
    { fail "build" "g++ -fsanitize=address failed"; finish errs_corpus; exit 1; }

bugs="overflow1 overflow40 overflow_page strcpy11 underflow1 underflow7 read_past_end uaf_read
      uaf_write double_free realloc_freed free_inside malloc_delete new_free newarr_delete
      new_deletearr calloc_overflow realloc_overflow aligned_overflow memalign_overflow
      cxx_overflow cxx_obj_overflow thread_overflow thread_uaf"

# Rows that --check catches at the free, not at the access (doc/check.adoc):
# a block's end is placed at its guard page with glibc's 16-byte alignment,
# so a write into the padding (1 byte past 100 or 10 bytes, 1 past a
# 20-byte thread's or 24-byte object's block) meets the padding's pattern
# at the free; an underflow of a right-aligned block meets the pattern of
# the page before it there. These must still be ASan's kind and abort.
CHECK_AT_FREE="overflow1 strcpy11 underflow1 underflow7 calloc_overflow cxx_obj_overflow
      thread_overflow"
at_free() { case " $(echo $CHECK_AT_FREE) " in *" $1 "*) return 0 ;; esac; return 1; }

# All runs, two at a time: ASan, native, default, --check.
run_one() { # MODE CASE
    local m=$1 c=$2 out=$work/$1.$2
    case $m in
    asan) ASAN_OPTIONS=detect_leaks=0 timeout 60 "$asan" "$c" >"$out" 2>&1 ;;
    native) timeout 60 "$prog" "$c" >"$out" 2>&1 ;;
    default) timeout 60 "$build/memtrace" run -- "$prog" "$c" >"$out" 2>&1 ;;
    check) timeout 60 "$build/memtrace" run --check -- "$prog" "$c" >"$out" 2>&1 ;;
    esac
    echo $? >"$out.rc"
}
export -f run_one
export asan prog build work
for c in ok $bugs; do for m in asan native default check; do echo "$m $c"; done; done |
    xargs -P 2 -n 2 bash -c 'run_one "$0" "$1"' 2>/dev/null

# ASan's kind, as memtrace names it.
asan_kind() { # CASE
    local f=$work/asan.$1
    if grep -q "AddressSanitizer: heap-buffer-overflow" "$f"; then
        if grep -q "bytes to the left of" "$f"; then echo heap-buffer-underflow; else echo heap-buffer-overflow; fi
    elif grep -q "AddressSanitizer: heap-use-after-free" "$f"; then echo use-after-free
    elif grep -q "AddressSanitizer: attempting double-free" "$f"; then echo double-free
    elif grep -q "AddressSanitizer: attempting free on address which was not malloc" "$f"; then echo free-inside
    elif grep -q "AddressSanitizer: alloc-dealloc-mismatch" "$f"; then echo mismatch
    fi
}
# memtrace's kind in FILE (the first report).
mt_kind() { # FILE
    local l
    l=$(grep -m1 -E '^memtrace: (heap-buffer-overflow|heap-buffer-underflow|use-after-free|write-after-free|double free|[a-z]+(\[\])? of )' "$1")
    case $l in
    "memtrace: heap-buffer-overflow"*) echo heap-buffer-overflow ;;
    "memtrace: heap-buffer-underflow"*) echo heap-buffer-underflow ;;
    "memtrace: use-after-free"* | "memtrace: write-after-free"*) echo use-after-free ;;
    "memtrace: double free"*) echo double-free ;;
    *" of an address "*" inside a "*) echo free-inside ;;
    *" allocated by "*) echo mismatch ;;
    esac
}
rc() { cat "$work/$1.$2.rc"; }

# ---------------------------------------------------------------- the correct program
for m in asan native default check; do
    check "ok ($m): status 0" 0 "$(rc $m ok)"
    check "ok ($m): silent" "" "$(grep -E '^memtrace: |AddressSanitizer' "$work/$m.ok")"
done

# ---------------------------------------------------------------- every bug
reported=0
for c in $bugs; do
    want=$(asan_kind "$c")
    if [ -z "$want" ] || [ "$(rc asan "$c")" = 0 ]; then
        fail "$c: ASan" "no report: $(head -5 "$work/asan.$c")"
        continue
    fi
    reported=$((reported + 1))
    # The default run: fails where it reports, with ASan's kind; never 0
    # where the program alone fails.
    got=$(mt_kind "$work/default.$c")
    if [ -n "$got" ]; then
        check "$c (default): ASan's kind" "$want" "$got"
        [ "$(rc default "$c")" != 0 ] && pass "$c (default): the report fails the run" ||
            fail "$c (default)" "reported, status 0: $(cat "$work/default.$c")"
    fi
    if [ "$(rc native "$c")" != 0 ] && [ "$(rc default "$c")" = 0 ]; then
        fail "$c (default)" "native status $(rc native "$c"), under memtrace 0"
    fi
    # --check.
    got=$(mt_kind "$work/check.$c")
    line=$(site_line "$src" "$c")
    if at_free "$c"; then
        check "$c (--check, at the free): ASan's kind" "$want" "$got"
        check "$c (--check, at the free): aborts at the report" 134 "$(rc check "$c")"
        grep -qE "^  detected in (free|delete)" "$work/check.$c" &&
            pass "$c (--check, at the free): detected in free" ||
            fail "$c (--check, at the free)" "$(cat "$work/check.$c")"
        continue
    fi
    check "$c (--check): ASan's kind" "$want" "$got"
    check "$c (--check): aborts at the report" 134 "$(rc check "$c")"
    # The access (or the bad call) is the top frame of the report's own
    # stack ("detected in a fault" for an access, the call's for a free),
    # or the one under libc's memset.
    if awk '/^  (detected in|[a-z\[\]]+ by thread)/ { on = 1; n = 0; next }
            on && /^  #/ { if (n++ < 2) print; next } { on = 0 }' "$work/check.$c" |
        grep -qE "^  #[01] (main|thread_[a-z]+)(\(void\*\))? at (.*/)?$src:$line:[0-9]+\$"; then
        pass "$c (--check): names $src:$line (SITE:$c)"
    else
        fail "$c (--check): the access line $line" "$(cat "$work/check.$c")"
    fi
done
check "ASan reports every bug of the corpus" "$(echo $bugs | wc -w)" "$reported"

# ---------------------------------------------------------------- underflows, named
for n in 1 7; do
    has "underflow by $n (default): named with ASan's distance" "$work/default.underflow$n" \
        "memtrace: heap-buffer-underflow: $n byte$([ $n = 1 ] || echo s) before the start of a 100-byte block at 0x"
    has "underflow by $n: ASan's distance" "$work/asan.underflow$n" "located $n bytes to the left of 100-byte region"
    lacks "underflow by $n (default): no overflow of another block" "$work/default.underflow$n" \
        "heap-buffer-overflow"
done
# After the free, found as the block leaves the quarantine (at exit here).
cat >"$work/after.c" <<'EOF'
#include <stdlib.h>
int main(void)
{
    char *p = malloc(100);
    free(p);
    p[-1] = 'x';
    return 0;
}
EOF
gcc -O0 -g -Wno-use-after-free -o "$work/after" "$work/after.c"
timeout 60 "$build/memtrace" run -- "$work/after" >"$work/after.out" 2>&1
RC=$?
status "underflow after free: fails the run" 1
has "underflow after free: reported" "$work/after.out" \
    "memtrace: heap-buffer-underflow: 1 byte before the start of a 100-byte block at 0x"

# `memtrace check` in gdb on a live block's underflow: named as one, the
# damaged size word never followed to another block.
cat >"$work/under.c" <<'EOF'
#include <stdlib.h>
char *a, *b;
void checkpoint(void) {}
int main(int argc, char **argv)
{
    a = malloc(100);
    b = malloc(100);
    b[-atoi(argv[1])] = 'x';
    checkpoint();
    return 0;
}
EOF
gcc -O0 -g -o "$work/under" "$work/under.c"
for n in 1 4 7 8; do
    timeout 120 gdb -q -batch -nx "$work/under" -ex "set env LD_PRELOAD=$build/libmemtrace.so" \
        -ex "break checkpoint" -ex "run $n" -ex "source $root/gdb/memtrace.py" \
        -ex "memtrace check" -ex "kill" >"$work/under.$n" 2>&1
    has "memtrace check, b[-$n]: an underflow of $n bytes" "$work/under.$n" \
        "memtrace: heap-buffer-underflow: $n byte$([ $n = 1 ] || echo s) before the start of a 100-byte block at 0x"
    has "memtrace check, b[-$n]: one damaged block" "$work/under.$n" "memtrace: check: 1 damaged block;"
    lacks "memtrace check, b[-$n]: no overflow" "$work/under.$n" "heap-buffer-overflow"
done

# ---------------------------------------------------------------- exit status
for how in exit return _exit; do
    timeout 60 "$build/memtrace" run -- "$prog" "status_$how" 3 >"$work/st.out" 2>&1
    RC=$?
    status "a report, then the program's own $how(3): its status wins" 3
    has "status_$how: the report was made" "$work/st.out" "memtrace: delete of a 24-byte block allocated by malloc"
done
for how in exit return; do
    timeout 60 "$build/memtrace" run -- "$prog" "status_$how" 0 >"$work/st.out" 2>&1
    RC=$?
    status "a report, then $how(0): MEMTRACE_ERROR_EXITCODE" 1
done
MEMTRACE_ERROR_EXITCODE=9 timeout 60 "$build/memtrace" run -- "$prog" status_return 0 \
    >"$work/st.out" 2>&1
RC=$?
status "MEMTRACE_ERROR_EXITCODE=9" 9
MEMTRACE_BAD_FREE=quiet timeout 60 "$build/memtrace" run -- "$prog" status_return 0 \
    >"$work/st.out" 2>&1
RC=$?
status "MEMTRACE_BAD_FREE=quiet: no error" 0
check "MEMTRACE_BAD_FREE=quiet: nothing said" "" "$(grep '^memtrace: ' "$work/st.out")"

# ---------------------------------------------------------------- detected in exit
cat >"$work/atexit.c" <<'EOF'
#include <stdlib.h>
#include <string.h>
char *kept;
static void leave(void)
{
    exit(0); /* SITE:leave */
}
int main(void)
{
    kept = malloc(30);
    memset(kept, 'x', 31);
    leave();
}
EOF
gcc -O0 -g -Wno-stringop-overflow -o "$work/atexit" "$work/atexit.c"
timeout 60 "$build/memtrace" run -- "$work/atexit" >"$work/atexit.out" 2>&1
awk '/^  detected in exit/ { on = 1; next } on && /^  #/ { print } on && !/^  #/ { on = 0 }' \
    "$work/atexit.out" >"$work/atexit.stack"
if head -1 "$work/atexit.stack" | grep -qE "^  #0 leave at (.*/)?atexit.c:$(site_line "$work/atexit.c" leave):"; then
    pass "detected in exit: #0 is the program's call of exit"
else
    fail "detected in exit: #0" "$(cat "$work/atexit.out")"
fi
for f in __do_global_dtors_aux _dl_fini __run_exit_handlers "#[0-9]+ exit at"; do
    if grep -qE "$f" "$work/atexit.stack"; then
        fail "detected in exit: no $f" "$(cat "$work/atexit.stack")"
    else
        pass "detected in exit: no $f"
    fi
done

finish errs_corpus
