#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The quarantine's release checks the next chunk's size word
# (tests/progs/errs_release.c): a write past the end of a freed block,
# beyond its redzone, that only that word shows, is reported when the
# block leaves the quarantine as ASan (the oracle, the same program built
# with -fsanitize=address) names it, a heap-buffer-overflow, of the freed
# block with its three stacks, not as an underflow of the next block; the
# block then stays out of glibc's hands (the program runs to its end), and
# the report fails the run. A tcache-sized block (100 bytes, whose free
# glibc does not check) and a larger one (2000 bytes, whose free glibc
# would abort on); the same program without the write stays silent.
# (--check places these blocks on guard pages: errs_guard's business.)
set -u
. "$(dirname "$0")/lib.sh"
prog=$tests/errs_release
src=tests/progs/errs_release.c
asan=$work/errs_release_asan
ulimit -S -c 0

gcc -O0 -g -fsanitize=address -o "$asan" "$root/$src" ||
    { fail "build" "gcc -fsanitize=address failed"; finish errs_release; exit 1; }

for c in small large none; do
    ASAN_OPTIONS=detect_leaks=0 timeout 60 "$asan" "$c" >"$work/asan.$c" 2>&1
    timeout 60 "$build/memtrace" run -- "$prog" "$c" >"$work/mt.$c" 2>&1
    echo $? >"$work/mt.$c.rc"
done

# The first report's lines, addresses and columns dropped.
first_report() { # FILE
    awk '/^memtrace: / { n++ } n == 1' "$1" | sed -E 's/ at 0x[0-9a-f]+$//; s/:[0-9]+$//'
}
for c in small large; do
    size=$([ $c = small ] && echo 100 || echo 2000)
    at=$([ $c = small ] && echo 120 || echo 2024)
    grep -q "AddressSanitizer: heap-buffer-overflow" "$work/asan.$c" &&
        pass "$c: ASan reports a heap-buffer-overflow" ||
        fail "$c: ASan" "$(head -5 "$work/asan.$c")"
    check "$c: ASan's access line" "main $root/$src:$(site_line $src write)" \
        "$(grep -m1 -oE "#0 0x[0-9a-f]+ in main [^ ]+" "$work/asan.$c" | cut -d' ' -f4-)"
    r=$(first_report "$work/mt.$c")
    check "$c: the first report is ASan's kind, of the freed block" \
        "memtrace: heap-buffer-overflow: 8 bytes at offset $at, $((at - size)) bytes past the end of a $size-byte block" \
        "$(echo "$r" | head -1)"
    check "$c: allocated at" "  #0 main at $src:$(site_line $src alloc)" \
        "$(echo "$r" | grep -A1 '^  allocated by' | sed -n 2p)"
    check "$c: freed at" "  #0 main at $src:$(site_line $src free)" \
        "$(echo "$r" | grep -A1 '^  freed by' | sed -n 2p)"
    check "$c: detected as it leaves the quarantine" \
        "  detected in quarantine by thread 1 at:|  #0 main at $src:$(site_line $src release)" \
        "$(echo "$r" | grep -A1 '^  detected in' | paste -sd'|')"
    check "$c: the block stays out of glibc's hands (the program runs on)" "done 0" \
        "$(grep -m1 '^done' "$work/mt.$c")"
    check "$c: the report fails the run" 1 "$(cat "$work/mt.$c.rc")"
done
check "none: ASan silent" "" "$(grep AddressSanitizer "$work/asan.none")"
check "none: memtrace silent" "" "$(grep '^memtrace: ' "$work/mt.none")"
check "none: status 0" 0 "$(cat "$work/mt.none.rc")"

finish errs_release
