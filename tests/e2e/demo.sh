#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# make demo: stop the demo program in gdb and ask memtrace where a node of
# its list was allocated.
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
echo "\$ build/memtrace gdb build/tests/demo"
echo "(gdb) break inspect"
echo "(gdb) run"
echo "(gdb) call print_trace(list->next)"
"$root/build/memtrace" gdb -batch -nx \
    -ex "break inspect" -ex "run" \
    -ex "call print_trace(list->next)" \
    -ex "continue" -- "$root/build/tests/demo" 2>&1 |
    grep -v -e '^\[Thread debugging' -e '^Using host libthread_db' -e '^Breakpoint 1 at'
