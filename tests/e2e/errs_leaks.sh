#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# valgrind's default leak heuristics (newarray, multipleinheritance,
# length64) in the leak check at exit, valgrind's memcheck as the oracle
# (tests/progs/errs_leaks.cpp): a block held only by such an interior
# pointer is still reachable for both, and a block held by another
# interior pointer is possibly lost for both, with the same bytes.
set -u
. "$(dirname "$0")/lib.sh"
prog=$tests/errs_leaks

if ! command -v valgrind >/dev/null; then
    fail "valgrind" "not installed (make deps installs it)"
    finish errs_leaks
    exit
fi

# "BYTES BLOCKS" of CLASS (possibly, definitely) in memtrace's summary
# line, and in valgrind's LEAK SUMMARY.
mt_class() { sed -nE "s/^memtrace: leaks:.* ([0-9]+) bytes $2 lost in ([0-9]+) blocks.*/\\1 \\2/p" "$1" | head -1; }
vg_class() { sed -nE "s/^==[0-9]+== +$2 lost: ([0-9,]+) bytes in ([0-9,]+) blocks/\\1 \\2/p" "$1" | tr -d , | head -1; }

for c in newarray multi length64 plain; do
    MEMTRACE_LEAK_CHECK=1 MEMTRACE_LEAK_EXITCODE=0 timeout 60 "$build/memtrace" run -- \
        "$prog" "$c" >"$work/m.$c" 2>&1
    timeout 300 valgrind --leak-check=full "$prog" "$c" >"$work/v.$c" 2>&1
    want=$([ "$c" = plain ] && echo "48 1" || echo "0 0")
    check "$c: valgrind's possibly lost" "$want" "$(vg_class "$work/v.$c" possibly)"
    check "$c: memtrace's possibly lost is valgrind's" "$(vg_class "$work/v.$c" possibly)" \
        "$(mt_class "$work/m.$c" possibly)"
    check "$c: definitely lost, as valgrind" "$(vg_class "$work/v.$c" definitely)" \
        "$(mt_class "$work/m.$c" definitely)"
done
for h in newarray multipleinheritance length64; do
    has "valgrind names the $h heuristic" "$work/v.$([ $h = multipleinheritance ] && echo multi || echo $h)" "$h"
done

finish errs_leaks
