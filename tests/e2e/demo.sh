#!/bin/sh
# make demo: stop the demo program in gdb and ask memtrace where a node of
# its list was allocated.
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
echo "\$ gdb --args env LD_PRELOAD=$root/build/libmemtrace.so build/tests/demo"
echo "(gdb) break inspect"
echo "(gdb) run"
echo "(gdb) call print_trace(list->next)"
gdb -q -batch -nx \
    -ex "set env LD_PRELOAD=$root/build/libmemtrace.so" \
    -ex "break inspect" -ex "run" \
    -ex "call print_trace(list->next)" \
    -ex "continue" "$root/build/tests/demo" 2>&1 |
    grep -v -e '^\[Thread debugging' -e '^Using host libthread_db' -e '^Breakpoint 1 at'
