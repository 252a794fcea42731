#!/bin/sh
# memtrace: run a program under libmemtrace.so, with or without gdb.
#
#   memtrace gdb PROG [ARGS...]    gdb with the `memtrace` command loaded and
#                                  the library preloaded into PROG only
#   memtrace core PROG CORE        gdb on a core file, `memtrace` command loaded
#   memtrace run PROG [ARGS...]    PROG under the library, no gdb
#
# Finds the library and the gdb helper next to itself (the build directory)
# or where `make install` put them (LIBDIR, DATADIR/memtrace).
set -e
self=$0
case $self in */*) ;; *) self=$(command -v -- "$self") ;; esac
here=$(cd "$(dirname "$self")" && pwd)
# `make install` writes the installed directories here.
libdir=@MEMTRACE_LIBDIR@
datadir=@MEMTRACE_DATADIR@
case $libdir in @*) libdir=$here/../lib ;; esac
case $datadir in @*) datadir=$here/../share ;; esac
if [ -f "$here/libmemtrace.so" ] && [ -f "$here/memtrace.py" ]; then
    lib=$here/libmemtrace.so
    helper=$here/memtrace.py
else
    lib=$libdir/libmemtrace.so
    helper=$datadir/memtrace/memtrace.py
fi
lib=${MEMTRACE_LIB:-$lib}

usage() {
    echo "usage: memtrace gdb PROG [ARGS...] | memtrace core PROG CORE | memtrace run PROG [ARGS...]" >&2
    exit 2
}

[ $# -ge 2 ] || usage
if [ ! -f "$lib" ]; then
    echo "memtrace: cannot find libmemtrace.so (looked for $lib)" >&2
    exit 2
fi
cmd=$1
shift
case $cmd in
run)
    LD_PRELOAD=$lib${LD_PRELOAD:+:$LD_PRELOAD} exec "$@"
    ;;
gdb)
    # gdb applies the environment to the program it starts, not to itself.
    exec ${GDB:-gdb} -q -ex "source $helper" \
        -ex "set environment LD_PRELOAD=$lib${LD_PRELOAD:+:$LD_PRELOAD}" --args "$@"
    ;;
core)
    [ $# = 2 ] || usage
    exec ${GDB:-gdb} -q -ex "source $helper" "$1" "$2"
    ;;
*)
    usage
    ;;
esac
