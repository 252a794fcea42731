#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Trust, files: what memtrace writes, and where, when the
# program is off the tested road. tests/progs/trust_files_prog.c churns and
# then does what its arguments say (chdir, a daemon's close of fds 3-1023
# and files of its own, re-executing itself, a leak).
#   1  a setuid-root program linked with -lmemtrace, run by nobody with
#      MEMTRACE_RECORD/PPROF/TAGS into a root-only directory: nothing
#      created or truncated there, one line
#  11  the daemon's own file holds only its own lines; the recording all
#  12  a program that re-executes itself keeps every image's recording
#  13  relative path settings are where the program started, not where it
#      went (also in a program it execs after the chdir)
#  22  memtrace run from a directory whose path has a space traces
#  23  make before make deps names the missing packages
# Prints one PASS/FAIL line per check and "trust_files: N passed, N failed".
set -u
. "$(dirname "$0")/lib.sh"
ulimit -c 0
prog=$tests/trust_files_prog
lib=$build/libmemtrace.so
src=$root/tests/progs/trust_files_prog.c
pub=
trap 'rm -rf "$work" ${pub:+"$pub"}' EXIT

# ------------------------------------------------------------ 1. setuid
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
    # The program and its library where nobody may read and run them: a
    # world-readable directory of its own (the checkout may be in a 0700
    # one); linked by an absolute run path, as ld.so takes for setuid.
    pub=$(mktemp -d /tmp/memtrace-trust-files.XXXXXX)
    chmod 755 "$pub"
    cp "$lib" "$pub/libmemtrace.so"
    chmod 755 "$pub/libmemtrace.so"
    gcc -O0 -g -o "$pub/suid" "$src" -L"$pub" -lmemtrace -Wl,-rpath,"$pub"
    chmod 4755 "$pub/suid"
    secret=$work/secret
    mkdir -m 700 "$secret"
    printf 'root only\n' >"$secret/victim"
    chmod 600 "$secret/victim"
    RC=0
    setpriv --reuid=nobody --regid=nogroup --clear-groups \
        env MEMTRACE_RECORD="$secret/victim" MEMTRACE_PPROF="$secret/prof.pb.gz" \
        MEMTRACE_TAGS="$secret/tags" MEMTRACE_LEAK_CHECK=1 \
        timeout 60 "$pub/suid" leak >"$work/suid.out" 2>"$work/suid.err" || RC=$?
    status "setuid as nobody: the program's own status" 0
    check "setuid as nobody: the root-only file is not truncated" "root only" "$(cat "$secret/victim")"
    check "setuid as nobody: nothing created in the root-only directory" "victim" \
        "$(ls -A "$secret")"
    check "setuid as nobody: one line says the settings are ignored" \
        "memtrace: this program runs with privileges its user lacks (setuid, setgid or file capabilities): every MEMTRACE_* setting is ignored" \
        "$(cat "$work/suid.err")"
    # The control: run by root (no secure-exec), the same binary honours them.
    RC=0
    MEMTRACE_RECORD="$work/control.rec" timeout 60 "$pub/suid" 2>"$work/control.err" || RC=$?
    status "setuid run by its owner: status" 0
    [ -s "$work/control.rec" ] && pass "setuid run by its owner: MEMTRACE_RECORD honoured" ||
        fail "setuid run by its owner: MEMTRACE_RECORD honoured" "$(cat "$work/control.err")"
else
    echo "SKIP trust_files: setuid (needs root, nobody and setpriv)"
fi

# ------------------------------------------------------------ 11. daemon
# Closes fds 3-1023, opens its own files and writes 600 lines into them while
# allocating (240,000 events after it; a block of the recording is written
# every half second or MiB).
d=$work/daemon
mkdir "$d"
RC=0
timeout 120 env MEMTRACE_RECORD="$d/rec" LD_PRELOAD="$lib" "$prog" daemon "$d/own.txt" \
    >"$d/out" 2>"$d/err" || RC=$?
status "daemon: status" 0
for i in $(seq 0 599); do echo "the program's line $i"; done >"$d/expected"
for k in 0 1 2 3 4 5 6 7; do
    cmp -s "$d/expected" "$d/own.txt.$k" &&
        pass "daemon: its own file $k holds its 600 lines, nothing else" ||
        fail "daemon: its own file $k holds its 600 lines, nothing else" \
            "$(wc -c <"$d/own.txt.$k") bytes, $(head -c 100 "$d/own.txt.$k" | od -c | head -2)"
done
check "daemon: the recording's line" \
    "memtrace: recording: $d/rec (244000 events); view it with: memtrace view $d/rec" \
    "$(cat "$d/err")"
RC=0
"$build/memtrace" export --json "$d/rec" -o "$d/rec.json" 2>"$d/export.err" || RC=$?
status "daemon: the recording exports" 0
check "daemon: the recording is whole: every allocation and free" "false 122000 122000" \
    "$(jq -r '"\(.truncated) \(.totals.allocations) \(.totals.frees)"' "$d/rec.json" 2>&1 | head -1)"

# The same after removing the recording's file: it cannot be had again,
# so the recording stops (one line), and the program's file is its own.
RC=0
timeout 120 env MEMTRACE_RECORD="$d/gone" LD_PRELOAD="$lib" "$prog" unlink "$d/gone" \
    daemon "$d/own2.txt" >"$d/out2" 2>"$d/err2" || RC=$?
status "daemon, its recording removed: status" 0
spoiled=
for k in 0 1 2 3 4 5 6 7; do
    cmp -s "$d/expected" "$d/own2.txt.$k" || spoiled="$spoiled own2.txt.$k"
done
check "daemon, its recording removed: its own files hold their 600 lines, nothing else" "" "$spoiled"
check "daemon, its recording removed: the recording stops, said once" \
    "memtrace: MEMTRACE_RECORD: the program closed the recording's descriptor and $d/gone is no longer the file it was; recording stopped, the file holds what came before
memtrace: recording: $d/gone is cut short (a write failed); memtrace export reads what it holds" \
    "$(cat "$d/err2")"

# ------------------------------------------------------------ 12. re-exec
# Re-executes itself twice, with the same pid and MEMTRACE_RECORD=rec.%p.
d=$work/reexec
mkdir "$d"
RC=0
(cd "$d" && timeout 60 env MEMTRACE_RECORD=rec.%p LD_PRELOAD="$lib" "$prog" reexec 2) \
    >"$d/out" 2>"$d/err" || RC=$?
status "re-exec: status" 0
pid=$(cd "$d" && ls rec.* 2>/dev/null | sed -n 's/^rec\.\([0-9]*\)$/\1/p')
check "re-exec: the three recordings" "rec.$pid rec.$pid.1 rec.$pid.2" \
    "$(cd "$d" && ls rec.* | sort | tr '\n' ' ' | sed 's/ $//')"
check "re-exec: the lines say where each image records" \
    "memtrace: MEMTRACE_RECORD: $d/rec.$pid holds this process's recording from before it executed trust_files_prog; recording to $d/rec.$pid.1
memtrace: MEMTRACE_RECORD: $d/rec.$pid holds this process's recording from before it executed trust_files_prog; recording to $d/rec.$pid.2
memtrace: recording: $d/rec.$pid.2 (4000 events); view it with: memtrace view $d/rec.$pid.2" \
    "$(cat "$d/err")"
for f in "rec.$pid:2" "rec.$pid.1:1" "rec.$pid.2:0"; do
    "$build/memtrace" export --json "$d/${f%:*}" -o "$d/x.json" 2>/dev/null
    check "re-exec: ${f%:*} is the recording of the image run with 'reexec ${f#*:}'" \
        "$prog reexec ${f#*:} $pid" "$(jq -r '"\(.command) \(.pid)"' "$d/x.json" 2>&1 | head -1)"
done
# A recording of another process under the same name is replaced, as ever.
RC=0
(cd "$d" && timeout 60 env MEMTRACE_RECORD="rec.$pid" LD_PRELOAD="$lib" "$prog") >/dev/null 2>"$d/err2" ||
    RC=$?
check "re-exec: another process's recording of the same name is overwritten" \
    "memtrace: recording: $d/rec.$pid (4000 events); view it with: memtrace view $d/rec.$pid" \
    "$(cat "$d/err2")"

# ------------------------------------------------------------ 13. relative paths
# Started in a directory whose name has a space and a % (a pattern's %p
# there is not the pid), the program changes directory, then leaks (the
# suppression in the start directory covers it), or executes itself
# there and leaks in the new image.
start="$work/start %p dir"
else_dir=$work/elsewhere
mkdir -p "$start" "$else_dir"
printf 'leak:main\n' >"$start/supp"
for how in "chdir $else_dir leak" "chdir $else_dir reexec 1 leak"; do
    rm -f "$start"/prof* "$start"/tags*
    RC=0
    # shellcheck disable=SC2086 # $how: the program's arguments
    (cd "$start" && timeout 60 env MEMTRACE_LEAK_CHECK=1 MEMTRACE_SUPPRESSIONS=supp \
        MEMTRACE_PPROF=prof.pb.gz MEMTRACE_TAGS=tags LD_PRELOAD="$lib" "$prog" $how) >"$work/rel.out" 2>"$work/rel.err" ||
        RC=$?
    name="relative paths, ${how#chdir $else_dir }"
    status "$name: the leak suppressed" 0
    lacks "$name: the suppressions read" "$work/rel.err" "MEMTRACE_SUPPRESSIONS"
    if [ "$how" = "chdir $else_dir leak" ]; then
        want="prof.pb.gz supp tags.dot tags.json"
    else
        want="prof.pb.gz.[0-9]* supp tags.[0-9]*.dot tags.[0-9]*.json"
    fi
    got=$(cd "$start" && ls | sort | sed -E 's/\.[0-9]+(\.|$)/.[0-9]*\1/' | tr '\n' ' ' | sed 's/ $//')
    check "$name: the profile and the tags in the start directory" "$want" "$got"
    check "$name: nothing where it went" "" "$(ls -A "$else_dir")"
done

# ------------------------------------------------------------ 22. a path with a space
# The launcher and the library in a directory whose path has a space: the
# leak check runs (status 23), so the program was traced.
sp="$work/with space"
mkdir -p "$sp" "$work/xdg"
chmod 700 "$work/xdg"
cp "$build/memtrace" "$build/memtrace-symbolize" "$lib" "$build/memtrace.py" "$sp/"
RC=0
XDG_RUNTIME_DIR=$work/xdg timeout 60 "$sp/memtrace" run --leak-check "$prog" leak \
    >"$work/space.out" 2>"$work/space.err" || RC=$?
status "memtrace run from a path with a space: traced (the leak check's status)" 23
has "memtrace run from a path with a space: the leak reported" "$work/space.err" \
    "memtrace: leaks: 4242 bytes definitely lost in 1 blocks"
link=$(find "$work/xdg" -name libmemtrace.so)
check "memtrace run from a path with a space: preloaded through a link to it" "$sp/libmemtrace.so" \
    "$(readlink "$link" 2>/dev/null)"
# No place for the link: refused, status 1, one line.
mkdir -p "$work/open/x/memtrace"
chmod 777 "$work/open/x/memtrace"
RC=0
XDG_RUNTIME_DIR=$work/open/x timeout 60 "$sp/memtrace" run "$prog" >/dev/null 2>"$work/space2.err" || RC=$?
status "memtrace run from a path with a space, no private directory for the link: refused" 1
check "memtrace run from a path with a space, no private directory for the link: one line" \
    "memtrace: cannot preload $sp/libmemtrace.so: LD_PRELOAD cannot hold a path with a space or a colon, and $work/open/x/memtrace is not a directory of this user's only to put a link to it in" \
    "$(cat "$work/space2.err")"

# ------------------------------------------------------------ 23. make before make deps
# A copy of the Makefiles, made with a pkg-config that finds no package
# (make -n: nothing is built).
mk=$work/mk
mkdir -p "$mk/tests" "$mk/gdb" "$mk/cli" "$mk/bench" "$mk/tools/top"
cp "$root/Makefile" "$mk/"
cp "$root/cli/cli.mk" "$mk/cli/"
cp "$root/tools/top/top.mk" "$mk/tools/top/"
cp "$root/tests/tests.mk" "$mk/tests/"
cp "$root/gdb/gdb.mk" "$mk/gdb/"
[ -f "$root/bench/bench.mk" ] && cp "$root/bench/bench.mk" "$mk/bench/"
RC=0
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL PKG_CONFIG_LIBDIR="$work/none" make -C "$mk" --no-print-directory -n all >"$work/make.out" 2>"$work/make.err" ||
    RC=$?
status "make before make deps: fails" 2
check "make before make deps: names the missing packages and make deps" \
    "Makefile:$(grep -n '^\$(error memtrace: missing packages' "$root/Makefile" | cut -d: -f1): *** memtrace: missing packages: libdw-dev libunwind-dev libzstd-dev libprotobuf-c-dev zlib1g-dev libncurses-dev; run \`make deps\` to install them (as root), or to see the apt-get line.  Stop." \
    "$(cat "$work/make.err")"
RC=0
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL PKG_CONFIG_LIBDIR="$work/none" make -C "$mk" --no-print-directory -n deps >/dev/null 2>"$work/make2.err" || RC=$?
status "make deps itself: not stopped by what it installs" 0

finish trust_files
