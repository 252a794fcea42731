#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Each message after its real cause:
#  - `memtrace stats` under MEMTRACE_SAMPLE says its figures are estimates,
#    on the line `memtrace top` prints (tests/progs/trust_messages_hold,
#    stopped in gdb holding 2,000 blocks);
#  - `memtrace gdb` on a #! script refuses with one line and status 1,
#    without starting gdb, while `memtrace run` of the same script traces
#    the program it runs;
#  - `memtrace run` of a program exec would make secure (set-user-ID or
#    set-group-ID to another user or group: ld.so ignores LD_PRELOAD's
#    paths, so it would run untraced) refuses with one line and status 1;
#    set-user-ID to the caller itself, it is traced. Needs root (to chown).
# Prints "trust_messages: N passed, N failed" last.
set -u
. "$(dirname "$0")/lib.sh"
memtrace=$build/memtrace
prog=$tests/trust_messages_hold
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_RECORD MEMTRACE_SAMPLE \
    MEMTRACE_SAMPLE_SEED MEMTRACE_LIB
cd "$work" || exit 1

# stats, sampled: the estimates line right after the totals, as top has it.
estimates="memtrace: sampled (MEMTRACE_SAMPLE=65536): bytes and blocks are estimates"
MEMTRACE_SAMPLE=65536 MEMTRACE_SAMPLE_SEED=3 timeout 120 "$memtrace" gdb -batch \
    -ex 'break stop_here' -ex run -ex 'memtrace stats' -ex 'memtrace top 1' -- "$prog" \
    >stats.out 2>&1
check "stats, sampled: the estimates line after the totals" "$estimates" \
    "$(sed -n '/^memtrace: [0-9]* live blocks, /{n;p;q}' stats.out)"
check "top, sampled: the same line" "$estimates" \
    "$(sed -n '/^memtrace: top 1 of /{n;p;q}' stats.out)"
timeout 120 "$memtrace" gdb -batch -ex 'break stop_here' -ex run -ex 'memtrace stats' -- "$prog" \
    >whole.out 2>&1
has "stats, not sampled: the totals" whole.out "memtrace: 2000 live blocks, 8192000 live bytes"
lacks "stats, not sampled: no estimates line" whole.out "estimates"

# gdb on a script: one line, status 1, gdb not started (GDB names a
# program that would leave a file).
printf '#!/bin/sh\nexec "%s" "$@"\n' "$prog" >script.sh
chmod 755 script.sh
printf '#!/bin/sh\ntouch "%s"\n' "$work/gdb-started" >fakegdb
chmod 755 fakegdb
script_line="memtrace: $work/script.sh is a script; give gdb the interpreter (e.g. memtrace gdb INTERPRETER $work/script.sh)"
GDB=$work/fakegdb timeout 60 "$memtrace" gdb -batch -ex run -- "$work/script.sh" >gdbs.out 2>gdbs.err
RC=$?
status "gdb on a script" 1
check "gdb on a script: the one line" "$script_line" "$(cat gdbs.err)"
check "gdb on a script: nothing on stdout" "" "$(cat gdbs.out)"
if [ -e gdb-started ]; then fail "gdb on a script: gdb not started" "it was"; else
    pass "gdb on a script: gdb not started"; fi
GDB=$work/fakegdb timeout 60 "$memtrace" gdb "$work/script.sh" >gdbs2.out 2>gdbs2.err
RC=$?
status "gdb PROG on a script" 1
check "gdb PROG on a script: the one line" "$script_line" "$(cat gdbs2.err)"
# The interpreter given, as the line says: gdb starts (the fake one).
GDB=$work/fakegdb timeout 60 "$memtrace" gdb /bin/sh "$work/script.sh" >gdbi.out 2>gdbi.err
RC=$?
status "gdb INTERPRETER PROG" 0
if [ -e gdb-started ]; then pass "gdb INTERPRETER PROG: gdb started"; else
    fail "gdb INTERPRETER PROG: gdb started" "$(cat gdbi.err)"; fi
timeout 60 "$memtrace" run "$work/script.sh" >runs.out 2>runs.err
RC=$?
status "run on a script" 0
check "run on a script: the program traced" traced "$(cat runs.out)"

# Set-user-ID and set-group-ID copies of the program, in a directory others
# can read, on the build's file system.
if [ "$(id -u)" != 0 ]; then
    fail "set-ID checks" "need root (to chown the copies); run as root"
    finish trust_messages
    exit
fi
sdir=$(mktemp -d "$build/trust_messages.XXXXXX")
trap 'rm -rf "$work" "$sdir"' EXIT
chmod 755 "$sdir"
if findmnt -rno OPTIONS --target "$sdir" | grep -qw nosuid; then
    fail "set-ID checks" "$sdir is on a nosuid file system"
    finish trust_messages
    exit
fi
setid() { # NAME OWNER:GROUP MODE
    cp "$prog" "$sdir/$1" && chown "$2" "$sdir/$1" && chmod "$3" "$sdir/$1"
}
setid suid_nobody nobody:root 4755
setid sgid_nogroup root:nogroup 2755
setid suid_root root:root 4755
# run NAME PROG [SETPRIV...]: memtrace run PROG (under SETPRIV...), status in RC, output in NAME.*.
run() {
    local name=$1 p=$2
    shift 2
    timeout 60 "$@" "$memtrace" run "$p" >"$name.out" 2>"$name.err"
    RC=$?
}
# The cause: without the launcher, LD_PRELOAD is ignored there.
LD_PRELOAD=$build/libmemtrace.so timeout 60 "$sdir/suid_nobody" >bare.out 2>&1
check "set-user-ID nobody, preloaded by hand: untraced" untraced "$(cat bare.out)"

run suid_nobody "$sdir/suid_nobody"
status "root runs a program set-user-ID nobody" 1
check "root runs a program set-user-ID nobody: the one line" \
    "memtrace: $sdir/suid_nobody is set-user-ID to another user: the system ignores LD_PRELOAD for it, so memtrace cannot trace it" \
    "$(cat suid_nobody.err)"
check "root runs a program set-user-ID nobody: not run" "" "$(cat suid_nobody.out)"
run sgid_nogroup "$sdir/sgid_nogroup"
status "root runs a program set-group-ID nogroup" 1
check "root runs a program set-group-ID nogroup: the one line" \
    "memtrace: $sdir/sgid_nogroup is set-group-ID to another group: the system ignores LD_PRELOAD for it, so memtrace cannot trace it" \
    "$(cat sgid_nogroup.err)"
run nobody_root "$sdir/suid_root" setpriv --reuid=nobody --regid=nogroup --clear-groups
status "nobody runs a program set-user-ID root" 1
check "nobody runs a program set-user-ID root: the one line" \
    "memtrace: $sdir/suid_root is set-user-ID to another user: the system ignores LD_PRELOAD for it, so memtrace cannot trace it" \
    "$(cat nobody_root.err)"
run root_root "$sdir/suid_root"
status "root runs a program set-user-ID root" 0
check "root runs a program set-user-ID root: traced" traced "$(cat root_root.out)"
run nobody_plain "$prog" setpriv --reuid=nobody --regid=nogroup --clear-groups
status "nobody runs a plain program" 0
check "nobody runs a plain program: traced" traced "$(cat nobody_plain.out)"

finish trust_messages
