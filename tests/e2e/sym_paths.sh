#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# File names as gdb prints them. A program compiled in its own directory
# (`cc -g x.c`), its allocation in a function of a header inlined into
# main, by gcc and clang, DWARF 4 and 5: print_trace names each file of the
# stack exactly as gdb's `bt` does, relative to DW_AT_comp_dir where the
# line table gives it so (libdw joins every name with its directory):
#   gcc DWARF 4   h.h (directory entry 0, the compilation directory)
#   gcc DWARF 5   DIR/h.h (entry 0 named, absolute, in the table)
#   clang         ./h.h (entry ".")
# and the CU's own file always as DW_AT_name, x.c (clang's DWARF 5 table
# names it by the absolute entry 0: libdw says DIR/x.c).
# Prints "sym_paths: N passed, N failed" last.
set -u
. "$(dirname "$0")/lib.sh"
tracer=$build/libmemtrace.so
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_RECORD MEMTRACE_SAMPLE DEBUGINFOD_URLS
cd "$work" || exit 1
cat >h.h <<'H'
static inline __attribute__((always_inline)) void *mk(int n)
{
    return malloc(n);
}
H
cat >x.c <<'C'
#include <stdlib.h>
#include "h.h"
extern void print_trace(const void *) __attribute__((weak));
int main(void)
{
    void *p = mk(5);
    if (print_trace)
        print_trace(p);
    return p == 0;
}
C
for cc in gcc clang; do
    for dwarf in 4 5; do
        name=$cc-dwarf$dwarf
        if ! "$cc" -g "-gdwarf-$dwarf" -O0 -o "$name" x.c 2>"$name.build"; then
            fail "$name" "build failed: $(cat "$name.build")"
            continue
        fi
        want=h.h
        [ "$cc-$dwarf" = gcc-5 ] && want=$work/h.h
        [ "$cc" = clang ] && want=./h.h
        # gdb's bt at the call to malloc: frame 1 is mk, 2 main.
        timeout 60 gdb -nx -batch -ex 'break main' -ex run -ex 'break malloc' -ex continue \
            -ex bt -ex kill "./$name" 2>/dev/null </dev/null |
            sed -n 's/^#[12] .* at \(.*\):[0-9]*$/\1/p' >"$name.gdb"
        check "$name: gdb's files" "$want x.c" "$(tr '\n' ' ' <"$name.gdb" | sed 's/ $//')"
        timeout 60 env LD_PRELOAD="$tracer" "./$name" 2>"$name.out" >/dev/null
        check "$name: print_trace's files" "$want:3:12 x.c:6:15" \
            "$(sed -n 's/^ *\(#0 mk\|inlined into main\) at //p' "$name.out" | tr '\n' ' ' | sed 's/ $//')"
    done
done
finish sym_paths
