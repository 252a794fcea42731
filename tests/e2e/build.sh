#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Build tests: what `make -n` would run for every target, into an empty build
# directory, shows that CPPFLAGS reaches every C and C++ compile and LDFLAGS
# every link, that CC and CXX are gcc and g++ unless the command line or the
# environment says otherwise, and what DEBUG=1 adds. Real builds into a
# scratch build directory check `make install` and `make PROFILER=1 install`
# (the exact files under DESTDIR), that LDFLAGS reached the installed library,
# and that switching DEBUG rebuilds instead of reusing the other flavour's
# objects. Prints "build: N passed, N failed"; exits 1 on failure.
set -u
. "$(dirname "$0")/lib.sh"

# The caller's make (make check passes its command line down in MAKEFLAGS)
# and build variables must not decide what is checked here.
unset MAKEFLAGS MFLAGS MAKELEVEL GNUMAKEFLAGS CC CXX CFLAGS CPPFLAGS LDFLAGS DEBUG PROFILER \
      BUILD PREFIX DESTDIR
mk() { make -C "$root" --no-print-directory "$@"; }

cpp=-DMT_PROBE_CPP
ld=-Wl,--build-id=md5   # harmless, and visible in the result: a 16-byte build id
nunit=$(ls "$root"/tests/unit/test_*.c | wc -l)
none=$work/none         # never created: make -n lists every command
prefix=/usr/local

# The compiler commands `make -n ARGS...` prints for every target (continued
# lines joined) into NAME.cmds, those that build C++ into NAME.cxx, the
# others into NAME.c.
dry() { # NAME ARGS...
    local f=$work/$1
    shift
    mk -n "$@" >"$f.out" 2>&1 || { cat "$f.out"; return 1; }
    sed -e ':a' -e '/\\$/{N; s/\\\n//; ta}' "$f.out" |
        grep -E '^(gcc|g\+\+|cc|c\+\+|clang|clang\+\+) ' >"$f.cmds"
    grep -F '.cpp' "$f.cmds" >"$f.cxx"
    # The clang fixture of the symbolizer's unit tests is clang's whatever
    # CC is (tests/tests.mk, CLANG_FIXTURE): not a C compile CC chooses; nor
    # are the bench's two builds of one source (bench/bench.mk, symsites).
    grep -vF '.cpp' "$f.cmds" | grep -vE '^clang .* -o [^ ]*/fixture/sym_fixture_clang\.o ' |
        grep -vE '^(gcc|clang) .* -o [^ ]*/bench/symsites_(gcc|clang) ' >"$f.c"
}
dry_all() { # NAME ARGS...
    local name=$1
    shift
    dry "$name" BUILD="$none" "$@" all test-unit test-e2e test-reliability bench
}

# has_all NAME FILE SELECT MUST [COUNT]: the lines of FILE matching the
# regex SELECT (COUNT of them, or at least one) all match the regex MUST.
has_all() {
    local sel n bad
    sel=$(grep -E -e "$3" "$2")
    n=$(printf '%s' "$sel" | grep -c '')
    bad=$(printf '%s\n' "$sel" | grep -vE -e "$4" | head -1)
    if [ -z "$sel" ]; then
        fail "$1" "no command matches /$3/"
    elif [ -n "${5:-}" ] && [ "$n" != "$5" ]; then
        fail "$1" "$n commands match /$3/, expected $5"
    elif [ -n "$bad" ]; then
        fail "$1" "/$4/ not in: $bad"
    else
        pass "$1 ($n commands)"
    fi
}
# has_none NAME FILE SELECT MUSTNOT: no line of FILE matching SELECT
# matches MUSTNOT (and at least one matches SELECT).
has_none() {
    local sel bad
    sel=$(grep -E -e "$3" "$2")
    bad=$(printf '%s\n' "$sel" | grep -E -e "$4" | head -1)
    if [ -z "$sel" ]; then fail "$1" "no command matches /$3/"
    elif [ -n "$bad" ]; then fail "$1" "/$4/ in: $bad"
    else pass "$1"; fi
}
# Commands by what they build, for a build directory $1.
# (the library's sources, and the code protoc-c generates into BUILD/proto)
lib_cc()  { echo " -c (src|$1/proto)/[^ ]+\\.c -o $1/(tracer|profiler)/"; }
lib_ld()  { echo " -o $1/libmemtrace(-profiler)?\\.so "; }
symb()    { echo " -o $1/memtrace-symbolize "; }
unit()    { echo " -o $1/tests/unit(-san)?/"; }
prog()    { echo " -o $1/tests/[^/ ]+ "; }
bench()   { echo " -o $1/bench/"; }

# objects NAME LIB: how many objects the link of LIB names in dry run NAME.
objects() { grep -E " -o [^ ]*/$2 " "$work/$1.cmds" | tr ' ' '\n' | grep -c '\.o$'; }

# ---------------------------------------------------------------- plain make
# A fresh tree (what git keeps, copied without build/) and plain `make`, no
# goal and no variables: the default goal builds both libraries, the launcher
# and memtrace-symbolize, as the Makefile's header and README say.
fresh=$work/fresh
mkdir -p "$fresh"
(cd "$root" && tar -c --exclude-vcs --exclude-vcs-ignores --exclude=./build -f - .) |
    tar -x -C "$fresh" -f -
if make -C "$fresh" --no-print-directory -n >"$work/plain.out" 2>&1; then
    sed -e ':a' -e '/\\$/{N; s/\\\n//; ta}' "$work/plain.out" >"$work/plain.cmds"
    for out in build/libmemtrace.so build/libmemtrace-profiler.so build/memtrace-symbolize; do
        if grep -qE " -o $out( |\$)" "$work/plain.cmds"; then
            pass "plain make in a fresh tree: links $out"
        else
            fail "plain make in a fresh tree: links $out" "no such link in: $(head -3 "$work/plain.cmds")"
        fi
    done
    if grep -qE ">build/memtrace\$" "$work/plain.cmds"; then
        pass "plain make in a fresh tree: writes the launcher build/memtrace"
    else
        fail "plain make in a fresh tree: writes the launcher build/memtrace" \
            "not written by: $(head -3 "$work/plain.cmds")"
    fi
else
    fail "plain make -n in a fresh tree" "make failed: $(tail -3 "$work/plain.out")"
fi

# ---------------------------------------------------------------- CPPFLAGS, LDFLAGS
if dry_all flags CPPFLAGS=$cpp LDFLAGS=$ld; then
    f=$work/flags.cmds
    # Every object the libraries link is compiled once, for its library.
    nprof=$(objects flags libmemtrace-profiler.so)
    nlib=$((nprof + $(objects flags libmemtrace.so)))
    has_all "CPPFLAGS: library objects" "$f" "$(lib_cc "$none")" " $cpp " "$nlib"
    has_all "CPPFLAGS: memtrace-symbolize" "$f" "$(symb "$none")" " $cpp " 1
    has_all "CPPFLAGS: test programs" "$f" "$(prog "$none")" " $cpp "
    has_all "CPPFLAGS: the C++ test programs" "$work/flags.cxx" . " $cpp "
    has_all "CPPFLAGS: unit tests" "$f" "$(unit "$none")" " $cpp " $((2 * nunit))
    has_all "CPPFLAGS: bench programs" "$f" "$(bench "$none")" " $cpp "
    has_all "CPPFLAGS: every C and C++ compile" "$f" '\.(c|cpp)( |$)' " $cpp "
    has_all "LDFLAGS: library links" "$f" "$(lib_ld "$none")" " $ld " 2
    has_all "LDFLAGS: memtrace-symbolize" "$f" "$(symb "$none")" " $ld " 1
    has_all "LDFLAGS: test programs" "$f" "$(prog "$none")" " $ld "
    has_all "LDFLAGS: unit tests" "$f" "$(unit "$none")" " $ld " $((2 * nunit))
    has_all "LDFLAGS: bench programs" "$f" "$(bench "$none")" " $ld "
    # Every command that does not stop at -c links.
    grep -v -e ' -c ' "$f" >"$work/flags.links"
    has_all "LDFLAGS: every link" "$work/flags.links" . " $ld "
else
    fail "make -n with CPPFLAGS and LDFLAGS" "make failed"
fi

# ---------------------------------------------------------------- CC, CXX
if dry_all default; then
    has_all "no CC or CXX: C with gcc" "$work/default.c" . '^gcc '
    has_all "no CC or CXX: C++ with g++" "$work/default.cxx" . '^g\+\+ '
else
    fail "make -n" "make failed"
fi
if dry_all cmdline CC=clang CXX=clang++; then
    has_all "make CC=clang CXX=clang++: C with clang" "$work/cmdline.c" . '^clang '
    has_all "make CC=clang CXX=clang++: C++ with clang++" "$work/cmdline.cxx" . '^clang\+\+ '
else
    fail "make -n CC=clang CXX=clang++" "make failed"
fi
if CC=clang CXX=clang++ dry_all env; then
    has_all "CC=clang CXX=clang++ in the environment: C with clang" "$work/env.c" . '^clang '
    has_all "CC=clang CXX=clang++ in the environment: C++ with clang++" "$work/env.cxx" . \
        '^clang\+\+ '
else
    fail "CC=clang CXX=clang++ make -n" "make failed"
fi

# ---------------------------------------------------------------- DEBUG
if dry_all debug DEBUG=1; then
    has_all "DEBUG=1: library objects with -DMT_DEBUG -O2 -g" "$work/debug.cmds" \
        "$(lib_cc "$none")" '^gcc -O2 -g .* -DMT_DEBUG ' "$nlib"
    has_all "DEBUG=1: memtrace-symbolize with -DMT_DEBUG" "$work/debug.cmds" "$(symb "$none")" \
        ' -DMT_DEBUG ' 1
else
    fail "make -n DEBUG=1" "make failed"
fi
if dry_all debug_o0 DEBUG=1 CFLAGS=-O0; then
    has_all "DEBUG=1 CFLAGS=-O0: library objects with -O0 and -DMT_DEBUG" "$work/debug_o0.cmds" \
        "$(lib_cc "$none")" '^gcc -O0 .* -DMT_DEBUG ' "$nlib"
    has_none "DEBUG=1 CFLAGS=-O0: no -O2" "$work/debug_o0.cmds" "$(lib_cc "$none")" ' -O2 '
else
    fail "make -n DEBUG=1 CFLAGS=-O0" "make failed"
fi
has_none "no DEBUG: no -DMT_DEBUG in the libraries" "$work/default.cmds" "$(lib_cc "$none")" \
    ' -DMT_DEBUG '
has_all "unit tests with -DMT_DEBUG" "$work/default.cmds" "$(unit "$none")" ' -DMT_DEBUG ' \
    $((2 * nunit))

# ---------------------------------------------------------------- install
# installed DIR: the files under DIR, relative to it, one a line, sorted.
installed() { (cd "$1" && find . -type f | sed 's|^\./||' | sort); }
check_files() { # NAME DIR EXPECTED (in any order)
    local got want
    got=$(installed "$2")
    want=$(sort <<<"$3")
    if [ "$got" = "$want" ]; then pass "$1"; else fail "$1" "installed:
$got
expected:
$want"; fi
}
# has_line NAME FILE LINE: FILE has the line LINE, whole.
has_line() {
    if grep -qxF -e "$3" "$2"; then pass "$1"; else fail "$1" "no line '$3' in $2"; fi
}
# build_quiet NAME ARGS...: a real make that succeeds without a warning.
build_quiet() {
    local name=$1
    shift
    if ! mk -j2 "$@" >"$work/$name.log" 2>&1; then
        fail "$name" "make $* failed: $(tail -5 "$work/$name.log")"
        return 1
    fi
    if grep -q 'warning:' "$work/$name.log"; then
        fail "$name" "warnings: $(grep -m 3 'warning:' "$work/$name.log")"
        return 1
    fi
    pass "$name"
}
b=$work/b
p=${prefix#/}
if build_quiet "make PROFILER=1 install" BUILD="$b" LDFLAGS=$ld PROFILER=1 install \
        DESTDIR="$work/d1"; then
    check_files "make PROFILER=1 install: the profiler library, header, gdb tools, man pages, .pc, completion" "$work/d1" \
"$p/bin/memtrace
$p/include/memtrace.h
$p/lib/libmemtrace-profiler.so
$p/lib/libmemtrace-profiler.so-gdb.py
$p/lib/pkgconfig/memtrace.pc
$p/libexec/memtrace/memtrace-export
$p/libexec/memtrace/memtrace-symbolize
$p/libexec/memtrace/memtrace-top
$p/share/bash-completion/completions/memtrace
$p/share/gdb/auto-load$prefix/lib/libmemtrace-profiler.so-gdb.py
$p/share/man/man1/memtrace.1
$p/share/man/man3/memtrace.3
$p/share/memtrace/memtrace.py
$p/share/memtrace/memtrace_attach.py
$(cd "$root/gdb" && printf "$p/share/memtrace/%s\n" memtrace_gdb/*.py)
$(cd "$root/tools" && printf "$p/share/memtrace/%s\n" view/*.css view/*.js view/*.py)"
    has_line "make PROFILER=1 install: memtrace.pc links the profiler library" \
        "$work/d1$prefix/lib/pkgconfig/memtrace.pc" 'Libs: -L${libdir} -Wl,-rpath,${libdir} -lmemtrace-profiler'
    id=$(readelf -n "$work/d1$prefix/lib/libmemtrace-profiler.so" 2>/dev/null |
             awk '/Build ID:/ { print $3 }')
    if [ ${#id} = 32 ]; then
        pass "LDFLAGS=$ld reached the library's link (build id $id)"
    else
        fail "LDFLAGS reached the library's link" "build id '$id' is not 16 bytes"
    fi
    if nm "$work/d1$prefix/lib/libmemtrace-profiler.so" | grep -q ' mt_assert_fail$'; then
        fail "no DEBUG: no assertions in the library" "mt_assert_fail is there"
    else
        pass "no DEBUG: no assertions in the library"
    fi
fi
if build_quiet "make install" BUILD="$b" LDFLAGS=$ld install DESTDIR="$work/d2"; then
    check_files "make install: both libraries, header, gdb tools, man pages, .pc, completion" "$work/d2" \
"$p/bin/memtrace
$p/include/memtrace.h
$p/lib/libmemtrace-profiler.so
$p/lib/libmemtrace-profiler.so-gdb.py
$p/lib/libmemtrace.so
$p/lib/libmemtrace.so-gdb.py
$p/lib/pkgconfig/memtrace.pc
$p/libexec/memtrace/memtrace-export
$p/libexec/memtrace/memtrace-symbolize
$p/libexec/memtrace/memtrace-top
$p/share/bash-completion/completions/memtrace
$p/share/gdb/auto-load$prefix/lib/libmemtrace-profiler.so-gdb.py
$p/share/gdb/auto-load$prefix/lib/libmemtrace.so-gdb.py
$p/share/man/man1/memtrace.1
$p/share/man/man3/memtrace.3
$p/share/memtrace/memtrace.py
$p/share/memtrace/memtrace_attach.py
$(cd "$root/gdb" && printf "$p/share/memtrace/%s\n" memtrace_gdb/*.py)
$(cd "$root/tools" && printf "$p/share/memtrace/%s\n" view/*.css view/*.js view/*.py)"
    has_line "make install: memtrace.pc links the tracer library" \
        "$work/d2$prefix/lib/pkgconfig/memtrace.pc" 'Libs: -L${libdir} -Wl,-rpath,${libdir} -lmemtrace'
fi

# ---------------------------------------------------------------- flavours
# $b holds a release build of the profiler library made with LDFLAGS=$ld.
check_empty() { # NAME FILE
    if [ -s "$2" ]; then fail "$1" "would run: $(head -1 "$2")"; else pass "$1"; fi
}
if dry same BUILD="$b" LDFLAGS=$ld PROFILER=1 all; then
    check_empty "same flags again: nothing is rebuilt" "$work/same.cmds"
fi
if dry todebug BUILD="$b" LDFLAGS=$ld PROFILER=1 DEBUG=1 all; then
    has_all "release to DEBUG=1: every library object rebuilt with -DMT_DEBUG" "$work/todebug.cmds" \
        "$(lib_cc "$b")" ' -DMT_DEBUG ' "$nprof"
    has_all "release to DEBUG=1: memtrace-symbolize rebuilt" "$work/todebug.cmds" "$(symb "$b")" \
        ' -DMT_DEBUG ' 1
fi
if build_quiet "make PROFILER=1 DEBUG=1 after a release build" BUILD="$b" LDFLAGS=$ld PROFILER=1 \
        DEBUG=1 all; then
    if nm "$b/libmemtrace-profiler.so" | grep -q ' mt_assert_fail$'; then
        pass "DEBUG=1: the library has its assertions (mt_assert_fail)"
    else
        fail "DEBUG=1: the library has its assertions" "no mt_assert_fail in it"
    fi
fi
if dry torelease BUILD="$b" LDFLAGS=$ld PROFILER=1 all; then
    has_all "DEBUG=1 to release: every library object rebuilt" "$work/torelease.cmds" \
        "$(lib_cc "$b")" '^gcc -O2 -g ' "$nprof"
    has_none "DEBUG=1 to release: without -DMT_DEBUG" "$work/torelease.cmds" "$(lib_cc "$b")" \
        ' -DMT_DEBUG '
fi

finish build
