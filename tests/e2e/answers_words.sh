#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Words after what happened, on tests/progs/answers_words_roots (a global
# list, a block held by a second thread's TLS only, a read-only data file
# mapped as glibc maps its locale files, one lost block of 100 bytes),
# stopped in gdb at stop_here:
#  - `memtrace leaks`: a data file among the mappings (libdwfl lists it as
#    a module) is no unread module: no "could not" line at all, the exact
#    summary;
#  - `memtrace refs` of the TLS-held block: one place, the thread's TLS
#    (the TLS block at the top of the thread's stack mapping is not also
#    read as the stack, "frame #5 clone3").
# Prints "answers_words: N passed, N failed" last.
set -u
. "$(dirname "$0")/lib.sh"
memtrace=$build/memtrace
prog=$tests/answers_words_roots
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_RECORD MEMTRACE_SAMPLE MEMTRACE_LIB
cd "$work" || exit 1
head -c 3000 /dev/zero | tr '\0' 'x' >data.txt

LC_ALL=C.UTF-8 timeout 180 "$memtrace" gdb -batch -ex 'break stop_here' -ex run \
    -ex 'echo @@ leaks\n' -ex 'memtrace leaks' \
    -ex 'thread 2' -ex 'echo @@ refs\n' -ex 'memtrace refs t_held' -ex 'echo @@ end\n' \
    -ex 'info proc mappings' -ex kill -- "$prog" "$work/data.txt" >roots.out 2>&1
between() { sed -n "/^@@ $1\$/,/^@@ /p" roots.out | grep -v '^@@ '; }
if grep -q "$work/data.txt" roots.out; then pass "the data file is mapped"; else
    fail "the data file is mapped" "$(tail -5 roots.out)"; fi
between leaks >leaks.out
lacks "leaks: no warning about modules, threads or roots" leaks.out "memtrace: leaks: the"
check "leaks: the summary" \
    "memtrace: leaks: 100 bytes definitely lost in 1 blocks, 0 bytes indirectly lost in 0 blocks, 0 bytes possibly lost in 0 blocks, $(grep -o '[0-9]* bytes still reachable in [0-9]* blocks' leaks.out | head -1)" \
    "$(grep '^memtrace: leaks: [0-9]' leaks.out)"
between refs >refs.out
held=$(sed -n 's/^memtrace: refs: the live block at \(0x[0-9a-f]*\) (48 bytes.*/\1/p' refs.out)
check "refs: one place" "memtrace: refs: 1 place" "$(tail -1 refs.out)"
check "refs: the TLS of thread 2" "thread 2 (LWP N) thread-local storage, to offset 0" \
    "$(grep '^  0x' refs.out | sed 's/^  0x[0-9a-f]*: //; s/LWP [0-9]*/LWP N/')"
lacks "refs: not as a stack slot" refs.out "stack, frame"
[ -n "$held" ] || fail "refs: the block" "$(cat refs.out)"

finish answers_words
