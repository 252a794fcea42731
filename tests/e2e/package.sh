#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installation and the Debian package:
#  - the man pages against what they document: doc/settings.adoc's, the
#    header's functions, the gdb helper's commands; `man -l` renders them
#    without a warning and without AsciiDoc markup left in the text;
#  - `make install DESTDIR=... PREFIX=/usr`: the exact files, no placeholder
#    left; `make uninstall`: no file left;
#  - an install into a prefix with its own LIBDIR: the exact files, the
#    pkg-config answer, a program built with it calling print_trace run by
#    the installed launcher, gdb loading the helper next to the library and
#    answering through the installed symbolizer; bash completion;
#  - `make deb`: the tree unchanged, `dpkg-deb -c`, the dependencies,
#    lintian without an error;
#  - as root, the package installed with apt-get (and removed after): the
#    launcher, `man memtrace`, pkg-config, `memtrace run`, gdb's auto-load.
# Prints "package: N passed, N failed" (and SKIP lines); exits 1 on failure.
set -u
. "$(dirname "$0")/lib.sh"

unset MAKEFLAGS MFLAGS MAKELEVEL GNUMAKEFLAGS CC CXX CFLAGS CPPFLAGS LDFLAGS DEBUG PROFILER BUILD \
      PREFIX DESTDIR BINDIR LIBDIR INCLUDEDIR LIBEXECDIR DATADIR MANDIR PKGCONFIGDIR BASHCOMPDIR \
      GDB_AUTOLOAD_DIR GDB_DATADIR PKG_CONFIG_PATH MEMTRACE_LIB
export LC_ALL=C   # the file lists below are in C's order
mk() { make -C "$root" --no-print-directory "$@"; }
skip() { echo "SKIP $1: $2"; }

version=$(sed -n 's/^VERSION := //p' "$root/Makefile")
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
arch=$(dpkg --print-architecture)
prog_src=$root/tests/progs/pkg_api.c
site=$(at "$prog_src" pkg_block)

# helper_package DIR: the files of the gdb helper's package (gdb/memtrace_gdb)
# as installed in DIR, one a line, sorted.
helper_package() { (cd "$root/gdb" && printf "$1/%s\n" memtrace_gdb/*.py); }
# view_files DIR: memtrace view's files (view/) as installed in DIR, sorted.
view_files() { (cd "$root/tools" && printf "$1/%s\n" view/*.css view/*.js view/*.py | sort); }

# same NAME GOT EXPECTED
same() {
    if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "got:
$2
expected:
$3"; fi
}
# has NAME FILE FIXED-STRING
has() {
    if grep -qF -e "$3" "$2"; then pass "$1"; else fail "$1" "no '$3' in: $(head -c 2000 "$2")"; fi
}
# asked FILE: the lines of gdb's output FILE after "@@ asked" (the gdb
# commands' answers, not the program's) into $work/asked.
asked() { sed '1,/^@@ asked$/d' "$1" >"$work/asked"; }
# files DIR: the files and links under DIR, relative to it, sorted.
files() { (cd "$1" && find . \( -type f -o -type l \) | sed 's|^\./||' | sort); }

# ---------------------------------------------------------------- man pages
# Names that the pages document ahead of the branches adding them. When a
# branch is merged its names appear in README (or the header, or the
# helper), and the check below then fails until the name is taken out here.
PENDING_SETTINGS=""
PENDING_FUNCTIONS=""
PENDING_COMMANDS=""

# compare NAME DOCUMENTED SOURCE-NAMES PENDING: every name of the source is
# documented, and every documented one is in the source or pending (and
# not both).
compare() {
    local doc src pend missing extra stale
    doc=$(tr ' ' '\n' <<<"$2" | grep . | sort -u)
    src=$(tr ' ' '\n' <<<"$3" | grep . | sort -u)
    pend=$(tr -s ' \n' '\n' <<<"$4" | grep . | sort -u)
    missing=$(comm -23 <(echo "$src") <(echo "$doc") | tr '\n' ' ')
    extra=$(comm -23 <(echo "$doc") <(sort -u <(echo "$src") <(echo "$pend")) | tr '\n' ' ')
    stale=$(comm -12 <(echo "$src") <(echo "$pend") | tr '\n' ' ')
    if [ -z "$src" ]; then fail "$1" "found no names in the source"
    elif [ -n "$missing" ]; then fail "$1" "not documented: $missing"
    elif [ -n "$extra" ]; then fail "$1" "documented but not in the source: $extra"
    elif [ -n "$stale" ]; then fail "$1" "merged now, take out of PENDING_* in $0: $stale"
    else pass "$1 ($(echo "$src" | wc -l) names, $(echo "$pend" | wc -l) pending)"; fi
}
page1=$root/doc/memtrace.1.adoc
page3=$root/doc/memtrace.3.adoc
# The Settings chapter's table rows, and the SETTINGS section's entries.
readme_settings=$(grep -oE '^\| `MEMTRACE_[A-Z_]+`' "$root/doc/settings.adoc" |
                      grep -oE 'MEMTRACE_[A-Z_]+')
man_settings=$(awk '/^== /{on = ($0 == "== SETTINGS")} on' "$page1" |
                   grep -oE '^\*MEMTRACE_[A-Z_]+\*' | grep -oE 'MEMTRACE_[A-Z_]+')
compare "memtrace(1) SETTINGS: doc/settings.adoc's, no more" "$man_settings" "$readme_settings" \
    "$PENDING_SETTINGS"
header_functions=$(grep -v '^static ' "$root/include/memtrace.h" | grep -oE '^[a-z].*\b[a-z_]+\(' |
                       grep -oE '[a-z_]+\($' | tr -d '(')
man_functions=$(awk '/^== /{on = ($0 == "== SYNOPSIS")} on' "$page3" |
                    grep -oE '^[a-z].*\b[a-z_]+\(' | grep -oE '[a-z_]+\($' | tr -d '(')
compare "memtrace(3) SYNOPSIS: include/memtrace.h's functions" "$man_functions" \
    "$header_functions" "$PENDING_FUNCTIONS"
aliases=$(make -C "$root" --no-print-directory -pn man 2>/dev/null |
              sed -n 's/^MAN3_ALIASES := //p')
same "memtrace(3) is installed under each function's name (MAN3_ALIASES)" \
    "$(tr ' ' '\n' <<<"$aliases" | grep . | sort)" "$(sort <<<"$man_functions")"
helper_commands=$(grep -oE '^#   \(gdb\) memtrace [a-z][a-z-]*' "$root/gdb/memtrace.py" | awk '{print $4}')
man_commands=$(awk '/^== /{on = ($0 == "== GDB COMMANDS")} on' "$page1" |
                   grep -oE '^\*memtrace [a-z][a-z-]*\*' | tr -d '*' | awk '{print $2}')
compare "memtrace(1) GDB COMMANDS: gdb/memtrace.py's" "$man_commands" "$helper_commands" \
    "$PENDING_COMMANDS"

# stray_markup FILE: the lines of a page rendered by man (col -b) that show
# AsciiDoc markup asciidoctor should have consumed: \*, [* or *], a
# backtick, an unresolved {attribute}, a * or _ opening or closing a word,
# a * inside one, a +constrained passthrough+. The C in memtrace(3) is
# taken out first: comments, *ptr and *out, (*get), TYPE *NAME, sizeof *,
# and NAME_* globs (MEMTRACE_*).
stray_markup() {
    sed -E 's#/\*|\*/##g; s#\*(ptr|out)\b##g; s#\(\*[a-z]+\)##g; s#_\*##g
            s#\b(char|void|int|long|size_t|memtrace_stats|sizeof) \*#\1 #g' "$1" |
        grep -nE -e '\\\*|\[\*|\*\]|`|\{[a-z][a-z0-9_-]*\}' \
            -e '(^|[^[:alnum:]_*])\*[[:alnum:]_(]|[[:alnum:]_).]\*($|[^[:alnum:]_*])|[[:alnum:]]\*[[:alnum:]]' \
            -e '(^|[[:space:](])_[[:alnum:]]|[[:alnum:]]_([[:space:]),.;:]|$)' \
            -e '(^|[[:space:](])\+[^[:space:]+]([^+]*[^[:space:]+])?\+([[:space:]),.;:]|$)'
}

if mk man >"$work/man.log" 2>&1; then
    pass "make man"
    for page in memtrace.1 memtrace.3; do
        if MANWIDTH=80 man --warnings -l "$build/man/$page" >"$work/$page.txt" 2>"$work/$page.err" &&
                [ ! -s "$work/$page.err" ]; then
            pass "man --warnings -l $page: no warning"
        else
            fail "man --warnings -l $page" "$(head -5 "$work/$page.err")"
        fi
    done
    has "memtrace(1) rendered: a setting" "$work/memtrace.1.txt" "MEMTRACE_LEAK_EXITCODE=N"
    has "memtrace(1) rendered: the version in the footer" "$work/memtrace.1.txt" "memtrace $version"
    has "memtrace(3) rendered: print_trace" "$work/memtrace.3.txt" "void print_trace(const void *ptr);"
    for page in memtrace.1 memtrace.3; do
        MANWIDTH=200 man -l "$build/man/$page" 2>/dev/null | col -b >"$work/$page.wide"
        if [ ! -s "$work/$page.wide" ]; then
            fail "$page rendered: no stray markup" "man -l printed nothing"
        elif stray_markup "$work/$page.wide" >"$work/$page.stray"; then
            fail "$page rendered: no stray markup" "$(cut -c1-200 "$work/$page.stray")"
        else
            pass "$page rendered: no stray markup"
        fi
    done
else
    fail "make man" "$(tail -5 "$work/man.log")"
fi

# ---------------------------------------------------------------- make install PREFIX=/usr
d=$work/dest
if mk install DESTDIR="$d" PREFIX=/usr >"$work/install.log" 2>&1; then
    pass "make install DESTDIR=... PREFIX=/usr"
    same "make install PREFIX=/usr: the files (no helper copy next to the library)" "$(files "$d")" \
"usr/bin/memtrace
usr/include/memtrace.h
usr/lib/libmemtrace-profiler.so
usr/lib/libmemtrace.so
usr/lib/pkgconfig/memtrace.pc
usr/libexec/memtrace/memtrace-export
usr/libexec/memtrace/memtrace-symbolize
usr/libexec/memtrace/memtrace-top
usr/share/bash-completion/completions/memtrace
usr/share/gdb/auto-load/usr/lib/libmemtrace-profiler.so-gdb.py
usr/share/gdb/auto-load/usr/lib/libmemtrace.so-gdb.py
usr/share/man/man1/memtrace.1
usr/share/man/man3/memtrace.3
usr/share/man/man3/memtrace_check.3
usr/share/man/man3/memtrace_freelike.3
usr/share/man/man3/memtrace_get_stats.3
usr/share/man/man3/memtrace_get_stats_sized.3
usr/share/man/man3/memtrace_ignore_object.3
usr/share/man/man3/memtrace_leak_check.3
usr/share/man/man3/memtrace_malloclike.3
usr/share/man/man3/memtrace_on_error.3
usr/share/man/man3/memtrace_print_trace.3
usr/share/man/man3/memtrace_recording.3
usr/share/man/man3/memtrace_register_root_region.3
usr/share/man/man3/memtrace_report.3
usr/share/man/man3/memtrace_running.3
usr/share/man/man3/memtrace_set_recording.3
usr/share/man/man3/memtrace_tag_pop.3
usr/share/man/man3/memtrace_tag_push.3
usr/share/man/man3/memtrace_unregister_root_region.3
usr/share/man/man3/memtrace_version.3
usr/share/man/man3/print_trace.3
usr/share/memtrace/memtrace.py
usr/share/memtrace/memtrace_attach.py
$(helper_package usr/share/memtrace)
$(view_files usr/share/memtrace)"
    left=$(grep -rl '@MEMTRACE_' "$d" | sed "s|^$d/||")
    same "make install: no @MEMTRACE_...@ placeholder left" "$left" ""
    has "the launcher knows LIBDIR" "$d/usr/bin/memtrace" "libdir=/usr/lib"
    has "the helper knows where memtrace-symbolize is" \
        "$d/usr/share/gdb/auto-load/usr/lib/libmemtrace.so-gdb.py" \
        '_INSTALLED_LIBEXEC = "/usr/libexec/memtrace"'
    has "the helper knows where its package is" \
        "$d/usr/share/gdb/auto-load/usr/lib/libmemtrace.so-gdb.py" \
        '_INSTALLED_PYDIR = "/usr/share/memtrace"'
    modes=$(cd "$d" && stat -c '%a %n' usr/bin/memtrace usr/libexec/memtrace/memtrace-export \
                usr/libexec/memtrace/memtrace-symbolize usr/libexec/memtrace/memtrace-top \
                usr/include/memtrace.h usr/lib/pkgconfig/memtrace.pc)
    same "make install: modes" "$modes" "755 usr/bin/memtrace
755 usr/libexec/memtrace/memtrace-export
755 usr/libexec/memtrace/memtrace-symbolize
755 usr/libexec/memtrace/memtrace-top
644 usr/include/memtrace.h
644 usr/lib/pkgconfig/memtrace.pc"
    if mk uninstall DESTDIR="$d" PREFIX=/usr >"$work/uninstall.log" 2>&1; then
        same "make uninstall DESTDIR=... PREFIX=/usr: no file left" "$(files "$d")" ""
        gone=$(cd "$d" && ls -d usr/libexec/memtrace usr/share/memtrace 2>/dev/null)
        same "make uninstall: memtrace's own directories removed" "$gone" ""
    else
        fail "make uninstall" "$(tail -5 "$work/uninstall.log")"
    fi
else
    fail "make install DESTDIR=... PREFIX=/usr" "$(tail -5 "$work/install.log")"
fi

# ---------------------------------------------------------------- a prefix of its own
# LIBDIR apart from PREFIX/lib: the launcher, memtrace.pc and the gdb
# helper's copy must follow it. gdb's auto-load directory is not this
# prefix's, so the copies next to the libraries are installed too.
p=$work/prefix
lib=$p/lib64
if mk install PREFIX="$p" LIBDIR="$lib" >"$work/install2.log" 2>&1; then
    pass "make install PREFIX=DIR LIBDIR=DIR/lib64"
    same "make install PREFIX=DIR LIBDIR=DIR/lib64: the files" "$(files "$p")" \
"bin/memtrace
include/memtrace.h
lib64/libmemtrace-profiler.so
lib64/libmemtrace-profiler.so-gdb.py
lib64/libmemtrace.so
lib64/libmemtrace.so-gdb.py
lib64/pkgconfig/memtrace.pc
libexec/memtrace/memtrace-export
libexec/memtrace/memtrace-symbolize
libexec/memtrace/memtrace-top
share/bash-completion/completions/memtrace
share/gdb/auto-load$lib/libmemtrace-profiler.so-gdb.py
share/gdb/auto-load$lib/libmemtrace.so-gdb.py
share/man/man1/memtrace.1
share/man/man3/memtrace.3
share/man/man3/memtrace_check.3
share/man/man3/memtrace_freelike.3
share/man/man3/memtrace_get_stats.3
share/man/man3/memtrace_get_stats_sized.3
share/man/man3/memtrace_ignore_object.3
share/man/man3/memtrace_leak_check.3
share/man/man3/memtrace_malloclike.3
share/man/man3/memtrace_on_error.3
share/man/man3/memtrace_print_trace.3
share/man/man3/memtrace_recording.3
share/man/man3/memtrace_register_root_region.3
share/man/man3/memtrace_report.3
share/man/man3/memtrace_running.3
share/man/man3/memtrace_set_recording.3
share/man/man3/memtrace_tag_pop.3
share/man/man3/memtrace_tag_push.3
share/man/man3/memtrace_unregister_root_region.3
share/man/man3/memtrace_version.3
share/man/man3/print_trace.3
share/memtrace/memtrace.py
share/memtrace/memtrace_attach.py
$(helper_package share/memtrace)
$(view_files share/memtrace)"
    export PKG_CONFIG_PATH=$lib/pkgconfig
    same "pkg-config --cflags --libs memtrace" "$(pkg-config --cflags --libs memtrace 2>&1)" \
        "-I$p/include -L$lib -Wl,-rpath,$lib -lmemtrace "
    same "pkg-config --modversion memtrace: the Makefile's VERSION" \
        "$(pkg-config --modversion memtrace 2>&1)" "$version"
    # The header the compile finds must be the installed one.
    if gcc -O0 -g -Wall -Wextra -Werror -H -o "$work/pkg_api" "$prog_src" \
            $(pkg-config --cflags --libs memtrace) >"$work/cc.log" 2>&1; then
        pass "a program calling print_trace compiles and links with pkg-config's flags"
        has "it includes the installed memtrace.h" "$work/cc.log" ". $p/include/memtrace.h"
        # LIBDIR is no directory the dynamic linker searches: the rpath
        # memtrace.pc adds is what lets the program start, with no ldconfig.
        (unset LD_LIBRARY_PATH LD_PRELOAD; "$work/pkg_api" >"$work/plain.out" 2>"$work/plain.err")
        same "linked with pkg-config's flags, it starts on its own: exit status" "$?" 0
        same "it starts on its own: no loader error" "$(grep -c 'cannot open shared object' "$work/plain.err")" 0
        "$p/bin/memtrace" run "$work/pkg_api" >"$work/run.out" 2>"$work/run.err"
        same "the installed launcher runs it: exit status" "$?" 0
        has "memtrace run: the trace of its block" "$work/run.err" \
            "start of a 77-byte block allocated by thread 1"
        has "memtrace run: its allocation site" "$work/run.err" "  #0 main at $site"
        has "memtrace run: the counts" "$work/run.out" "recording 1, at least one live block: yes"
        # gdb with the copy next to the library, trusted as README says, run
        # outside the tree.
        (cd "$work" && gdb -nx -batch -iex "add-auto-load-safe-path $lib" \
            -ex "set environment LD_PRELOAD=$lib/libmemtrace.so" -ex 'break checkpoint' -ex run \
            -ex 'info auto-load python-scripts' -ex up -ex 'echo @@ asked\n' -ex 'memtrace p' \
            "$work/pkg_api" \
            >"$work/gdb.out" 2>&1 </dev/null)
        if grep -qE "^Yes +$lib/libmemtrace.so-gdb.py" "$work/gdb.out"; then
            pass "gdb auto-loads the helper next to LIBDIR's library"
        else
            fail "gdb auto-loads the helper next to LIBDIR's library" "$(tail -20 "$work/gdb.out")"
        fi
        # Nothing but the installed memtrace-symbolize can answer here (the
        # program's own print_trace answered before "@@ asked").
        asked "$work/gdb.out"
        has "memtrace EXPR answers through the installed symbolizer" "$work/asked" "  #0 main at $site"
    else
        fail "compile and link with pkg-config's flags" "$(grep -v '^\.' "$work/cc.log" | head -5)"
    fi
    MANWIDTH=80 man -M "$p/share/man" print_trace >"$work/alias.txt" 2>&1
    has "man print_trace: memtrace(3), through its alias" "$work/alias.txt" \
        "void memtrace_get_stats(struct memtrace_stats *out);"
    unset PKG_CONFIG_PATH
    if mk uninstall PREFIX="$p" LIBDIR="$lib" >"$work/uninstall2.log" 2>&1; then
        same "make uninstall PREFIX=DIR LIBDIR=DIR/lib64: no file left" "$(files "$p")" ""
    else
        fail "make uninstall PREFIX=DIR LIBDIR=DIR/lib64" "$(tail -5 "$work/uninstall2.log")"
    fi
else
    fail "make install PREFIX=DIR LIBDIR=DIR/lib64" "$(tail -5 "$work/install2.log")"
fi

# ---------------------------------------------------------------- bash completion
# complete LINE: what bash-completion offers for the last word of LINE.
complete_line() {
    (cd "$work/compdir" && bash --norc --noprofile -c '
        . /usr/share/bash-completion/bash_completion
        . "$1"
        compopt() { :; }   # outside a real completion it only complains
        COMP_LINE=$2
        COMP_POINT=${#COMP_LINE}
        read -ra COMP_WORDS <<<"$COMP_LINE"
        [[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        _memtrace memtrace "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
        printf "%s\n" "${COMPREPLY[@]}" | sort -u' _ "$root/cli/memtrace.bash-completion" "$1")
}
if [ -f /usr/share/bash-completion/bash_completion ]; then
    mkdir -p "$work/compdir" && touch "$work/compdir/out.txt"
    same "completion: memtrace <TAB>" "$(complete_line 'memtrace ')" "--help
--version
attach
core
detach
export
gdb
run
symbolize
top
view"
    same "completion: memtrace top --<TAB>" "$(complete_line 'memtrace top --')" "--batch
--by
--help
--interval"
    same "completion: memtrace top --by <TAB>" "$(complete_line 'memtrace top --by ')" "allocs
growth
live
temporary"
    same "completion: memtrace run --<TAB>" "$(complete_line 'memtrace run --')" "--
--check
--help
--leak-check
--no-children
--output
--profile
--record"
    same "completion: memtrace run --leak-check ech<TAB> (a command)" \
        "$(complete_line 'memtrace run --leak-check ech' | grep -x echo)" "echo"
    same "completion: memtrace core -b<TAB> (gdb's options)" "$(complete_line 'memtrace core -b')" "-batch"
    same "completion: memtrace core -batch -- <TAB> (files)" \
        "$(complete_line 'memtrace core -batch -- ')" "out.txt"
    same "completion: memtrace core -- prog core <TAB> (nothing more)" \
        "$(complete_line 'memtrace core -- prog core ')" ""
    same "completion: memtrace run --output <TAB> (files)" "$(complete_line 'memtrace run --output ')" \
        "out.txt"
    same "completion: memtrace run --profile --no-children ech<TAB> (a command)" \
        "$(complete_line 'memtrace run --profile --no-children ech' | grep -x echo)" "echo"
    same "completion: memtrace gdb -q -- ech<TAB> (a command)" \
        "$(complete_line 'memtrace gdb -q -- ech' | grep -x echo)" "echo"
    same "completion: memtrace gdb -b<TAB> (gdb's options)" "$(complete_line 'memtrace gdb -b')" "-batch"
    same "completion: memtrace view <TAB> (files)" "$(complete_line 'memtrace view ')" "out.txt"
    same "completion: memtrace view -<TAB>" "$(complete_line 'memtrace view -')" "--base
--help
-o"
else
    skip "bash completion" "bash-completion is not installed (make deps installs it)"
fi

# ---------------------------------------------------------------- make deb
deb=$build/memtrace_${version}_$arch.deb
if mk deb VERSION=9.9.9 >"$work/deb_bad.log" 2>&1; then
    fail "make deb with a VERSION debian/changelog lacks" "it succeeded"
else
    has "make deb with a VERSION debian/changelog lacks: one memtrace: line" "$work/deb_bad.log" \
        "memtrace: debian/changelog is at $version, the Makefile's VERSION is 9.9.9"
fi
status_before=$(git -C "$root" status --porcelain --ignored=no 2>&1)
rm -f "$deb"
if mk deb >"$work/deb.log" 2>&1 && [ -f "$deb" ]; then
    pass "make deb: $(basename "$deb") in build/"
    same "make deb leaves the tree as it was (git status)" \
        "$(git -C "$root" status --porcelain --ignored=no 2>&1)" "$status_before"
    dpkg-deb -c "$deb" | awk '{ print $6 }' | grep -v '/$' | sort >"$work/deb.files"
    same "dpkg-deb -c: the files" "$(cat "$work/deb.files")" \
"./usr/bin/memtrace
./usr/include/memtrace.h
./usr/lib/$multiarch/libmemtrace-profiler.so
./usr/lib/$multiarch/libmemtrace.so
./usr/lib/$multiarch/pkgconfig/memtrace.pc
./usr/libexec/memtrace/memtrace-export
./usr/libexec/memtrace/memtrace-symbolize
./usr/libexec/memtrace/memtrace-top
./usr/share/bash-completion/completions/memtrace
./usr/share/doc/memtrace/changelog.gz
./usr/share/doc/memtrace/copyright
./usr/share/gdb/auto-load/usr/lib/$multiarch/libmemtrace-profiler.so-gdb.py
./usr/share/gdb/auto-load/usr/lib/$multiarch/libmemtrace.so-gdb.py
./usr/share/man/man1/memtrace.1.gz
./usr/share/man/man3/memtrace.3.gz
./usr/share/man/man3/memtrace_check.3.gz
./usr/share/man/man3/memtrace_freelike.3.gz
./usr/share/man/man3/memtrace_get_stats.3.gz
./usr/share/man/man3/memtrace_get_stats_sized.3.gz
./usr/share/man/man3/memtrace_ignore_object.3.gz
./usr/share/man/man3/memtrace_leak_check.3.gz
./usr/share/man/man3/memtrace_malloclike.3.gz
./usr/share/man/man3/memtrace_on_error.3.gz
./usr/share/man/man3/memtrace_print_trace.3.gz
./usr/share/man/man3/memtrace_recording.3.gz
./usr/share/man/man3/memtrace_register_root_region.3.gz
./usr/share/man/man3/memtrace_report.3.gz
./usr/share/man/man3/memtrace_running.3.gz
./usr/share/man/man3/memtrace_set_recording.3.gz
./usr/share/man/man3/memtrace_tag_pop.3.gz
./usr/share/man/man3/memtrace_tag_push.3.gz
./usr/share/man/man3/memtrace_unregister_root_region.3.gz
./usr/share/man/man3/memtrace_version.3.gz
./usr/share/man/man3/print_trace.3.gz
./usr/share/memtrace/memtrace.py
./usr/share/memtrace/memtrace_attach.py
$(helper_package ./usr/share/memtrace)
$(view_files ./usr/share/memtrace)"
    same "the package's version" "$(dpkg-deb -f "$deb" Version)" "$version"
    depends=$(dpkg-deb -f "$deb" Depends)
    for dep in libc6 libdw1 libelf1 libunwind8 zlib1g libzstd1; do
        case ", $depends," in
        *", $dep "* | *", $dep,"*) pass "Depends (from shlibs): $dep" ;;
        *) fail "Depends (from shlibs): $dep" "Depends: $depends" ;;
        esac
    done
    same "Recommends: gdb" "$(dpkg-deb -f "$deb" Recommends)" "gdb"
    if command -v lintian >/dev/null; then
        lintian --no-tag-display-limit "$build/deb/memtrace_${version}_$arch.changes" \
            >"$work/lintian.out" 2>&1
        errors=$(grep '^E: ' "$work/lintian.out")
        same "lintian: no error" "$errors" ""
        grep '^W: ' "$work/lintian.out" | sed 's/^/  lintian: /'
    else
        skip "lintian" "lintian is not installed (make deps installs it)"
    fi
else
    fail "make deb" "$(tail -15 "$work/deb.log")"
fi

# ---------------------------------------------------------------- the package installed
# apt-get, retried while another dpkg holds the lock.
apt() {
    local try
    for try in 1 2 3 4 5 6 7 8 9 10; do
        [ "$try" = 1 ] || sleep 3
        DEBIAN_FRONTEND=noninteractive apt-get "$@" >"$work/apt.log" 2>&1 && return 0
        grep -q 'Could not get lock\|dpkg frontend lock' "$work/apt.log" || return 1
    done
    return 1
}
if [ "$(id -u)" != 0 ]; then
    skip "the package installed" "not root (apt-get install needs root)"
elif dpkg-query -W -f='${Status}' memtrace 2>/dev/null | grep -q 'install ok installed'; then
    skip "the package installed" "memtrace is installed already; not replacing the machine's copy"
elif [ ! -f "$deb" ]; then
    fail "the package installed" "no $deb"
elif ! apt install -y "$deb"; then
    fail "apt-get install -y ./build/$(basename "$deb")" "$(tail -5 "$work/apt.log")"
else
    pass "apt-get install -y ./build/$(basename "$deb")"
    memtrace --help >"$work/help.out" 2>&1
    has "memtrace --help (on PATH)" "$work/help.out" "memtrace run"
    # Docker's Debian images keep dpkg from unpacking man pages.
    if [ -f /usr/share/man/man1/memtrace.1.gz ]; then
        MANWIDTH=80 man memtrace >"$work/man1.out" 2>&1
        has "man memtrace" "$work/man1.out" "MEMTRACE_LEAK_EXITCODE=N"
        MANWIDTH=80 man 3 memtrace >"$work/man3.out" 2>&1
        has "man 3 memtrace" "$work/man3.out" "void memtrace_get_stats(struct memtrace_stats *out);"
        MANWIDTH=80 man memtrace_get_stats >"$work/man3a.out" 2>&1
        has "man memtrace_get_stats" "$work/man3a.out" "void print_trace(const void *ptr);"
    else
        skip "man memtrace" "dpkg did not unpack /usr/share/man (path-exclude in /etc/dpkg/dpkg.cfg.d)"
    fi
    same "pkg-config --cflags --libs memtrace (the package's)" \
        "$(pkg-config --cflags --libs memtrace 2>&1)" "-lmemtrace "
    if gcc -O0 -g -o "$work/pkg_api_deb" "$prog_src" $(pkg-config --cflags --libs memtrace) \
            >"$work/cc_deb.log" 2>&1; then
        memtrace run "$work/pkg_api_deb" >"$work/deb_run.out" 2>"$work/deb_run.err"
        same "memtrace run (the package's): exit status" "$?" 0
        has "memtrace run (the package's): the trace's allocation site" "$work/deb_run.err" \
            "  #0 main at $site"
        syslib=/usr/lib/$multiarch/libmemtrace.so
        (cd "$work" && gdb -nx -batch -ex "set environment LD_PRELOAD=$syslib" -ex 'break checkpoint' -ex run \
            -ex 'info auto-load python-scripts' -ex 'echo @@ asked\n' -ex 'memtrace stats' -ex up \
            -ex 'memtrace p' \
            "$work/pkg_api_deb" >"$work/deb_gdb.out" 2>&1 </dev/null)
        if grep -qE "^Yes +/usr/share/gdb/auto-load$syslib-gdb.py" "$work/deb_gdb.out"; then
            pass "gdb auto-loads the helper from /usr/share/gdb/auto-load, untold"
        else
            fail "gdb auto-loads the helper" "$(tail -20 "$work/deb_gdb.out")"
        fi
        asked "$work/deb_gdb.out"
        has "memtrace stats (auto-loaded)" "$work/asked" "allocations recorded"
        has "memtrace EXPR (auto-loaded): the allocation site" "$work/asked" "  #0 main at $site"
    else
        fail "compile with the package's pkg-config flags" "$(head -5 "$work/cc_deb.log")"
    fi
    if apt remove -y memtrace; then
        left=$(ls /usr/bin/memtrace /usr/lib/$multiarch/libmemtrace.so /usr/share/memtrace 2>/dev/null)
        same "apt-get remove -y memtrace: the machine as before" "$left" ""
    else
        fail "apt-get remove -y memtrace" "$(tail -5 "$work/apt.log")"
    fi
fi

finish package
