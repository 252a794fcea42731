#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Frames of programs whose debug information is gone, damaged or where
# libdw 0.188 cannot read it: they fall back to the next source (the
# symbol table, .gnu_debugdata, module+offset) and are never misnamed, the
# program is not harmed (status 0, every answer printed), and there is at
# most one "memtrace:" note per module, saying what was missing.
#
# tests/progs/sym_files.c is built here (gcc -O2 -rdynamic, functions in
# source order: the static static_alloc lies right after the exported
# exported_alloc) into a reference with all its symbols and debug
# information ($work/full), which the oracle reads: binutils' nm -S gives
# the function holding each offset memtrace prints. A row
# "FUNCTION in MODULE+OFFSET" must name the function addr2line names
# there (by the symbols' sizes), a row "ADDRESS in MODULE+OFFSET" (no name) must be at an offset
# of static_alloc, which the build's symbols do not name; a row with
# file:line must have the line of the SITE: marker of its function.
#
# Prints "sym_files: N passed, N failed" last.
set -u
. "$(dirname "$0")/lib.sh"
lib=$build/libmemtrace.so
src=tests/progs/sym_files.c
cd "$root" || exit 1
for tool in gcc clang objcopy strip nm xz llvm-symbolizer addr2line dwp llvm-dwp python3; do
    command -v "$tool" >/dev/null || { fail "tools" "$tool not found"; finish sym_files; exit; }
done
cflags=(-g -O2 -fno-toplevel-reorder -fno-ipa-cp -fno-inline-small-functions -rdynamic -Wall)
gcc "${cflags[@]}" -o "$work/full" "$src" -ldl || { fail build "gcc failed"; finish sym_files; exit; }

# expect NAME BINARY NOTES ROW0 ROW1 ROW2: runs BINARY (a copy of the
# reference, made otherwise) under the library; the #0 frame of the three
# answers must be ROWk: "sym FUNCTION" (named from a symbol table, with
# module+offset), "nameless" (no name: module+offset only), "line FUNCTION
# SITE" (FUNCTION at the line of the marker SITE, no inlined row) or
# "inline" (inlined_alloc at its site, inlined into outer_alloc). NOTES:
# the exact number of other "memtrace:" lines, each then printed.
expect() {
    local name=$1 bin=$2 notes=$3
    shift 3
    local rc=0
    runs=$((runs + 1))
    out=$work/run$runs.out
    timeout 60 env LD_PRELOAD="$lib" "$bin" >/dev/null 2>"$out" || rc=$?
    local verdict
    verdict=$(python3 - "$out" "$work/full" "$root/$src" "$notes" "$@" <<'EOF'
import re, subprocess, sys
out, full, src, notes, specs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:]
lines = open(out, errors="replace").read().splitlines()
errors = []
marks = {}
for n, l in enumerate(open(src), 1):
    m = re.search(r"SITE:(\w+)", l)
    if m:
        marks[m.group(1)] = n
other = [l for l in lines if l.startswith("memtrace: ") and not re.match(r"memtrace: 0x[0-9a-f]+: ", l)]
if len(other) != notes:
    errors.append("%d notes, not %d: %s" % (len(other), notes, other))
answers = []
for i, l in enumerate(lines):
    if re.match(r"memtrace: 0x[0-9a-f]+: start of ", l):
        answers.append(lines[i + 1:i + 3])
if len(answers) != 3:
    errors.append("%d answers, not 3" % len(answers))
syms = []
for l in subprocess.run(["nm", "-S", "--defined-only", full], capture_output=True,
                        text=True).stdout.splitlines():
    f = l.split()
    if len(f) == 4 and f[2] in "tT":
        syms.append((int(f[0], 16), int(f[1], 16), f[3]))
def truth(off):
    """The function of the reference's symbol table holding OFF."""
    return next((n for a, z, n in syms if a <= off < a + z), None)
for k, (spec, rows) in enumerate(zip(specs, answers)):
    spec = spec.split()
    row, nxt = rows[0], rows[1] if len(rows) > 1 else ""
    # Files are named as gdb names them, relative to the unit's directory;
    # but a clang skeleton unit whose split unit is not read has no
    # DW_AT_name, and its line table names the file by its full path.
    row = row.replace(" at " + src[:-len("tests/progs/sym_files.c")], " at ")
    if spec[0] in ("sym", "nameless"):
        m = re.match(r"^  #0 (\S+) in (\S+)\+0x([0-9a-f]+)$", row)
        if not m:
            errors.append("answer %d: %r is not module+offset" % (k, row))
            continue
        where = truth(int(m.group(3), 16))
        if spec[0] == "sym" and not (m.group(1) == spec[1] == where):
            errors.append("answer %d: %r; %s wanted, addr2line says %s" % (k, row, spec[1], where))
        if spec[0] == "nameless" and not (m.group(1).startswith("0x") and where == "static_alloc"):
            errors.append("answer %d: %r; no name wanted (addr2line: %s)" % (k, row, where))
    elif spec[0] == "line":
        want = "  #0 %s at tests/progs/sym_files.c:%d:" % (spec[1], marks[spec[2]])
        if not row.startswith(want) or nxt.startswith("     inlined into"):
            errors.append("answer %d: %r %r, not %r alone" % (k, row, nxt, want))
    elif spec[0] == "inline":
        want = "  #0 inlined_alloc at tests/progs/sym_files.c:%d:" % marks["inlined"]
        if not row.startswith(want) or not nxt.startswith("     inlined into outer_alloc at "):
            errors.append("answer %d: %r %r, not %r inlined into outer_alloc" % (k, row, nxt, want))
print("\n".join(errors) if errors else "ok")
EOF
)
    if [ "$rc" != 0 ]; then
        fail "$name" "status $rc: $(head -c 2000 "$out")"
    elif [ "$verdict" = ok ]; then
        pass "$name"
    else
        fail "$name" "$verdict"
    fi
}

runs=0 # expect's output: $out
full=$work/full
symtab="sym exported_alloc"

# on_core NAME BINARY N: BINARY stopped by gdb at its Nth print_trace call,
# a core written there, and `memtrace core` asked about the same pointer:
# memtrace-symbolize's answer must be the library's (answer N of the last
# expect run, $out), frame for frame, a nameless frame's run-time address
# aside (gdb turns address space randomization off).
on_core() {
    local name=$1 bin=$2 n=$3 conts=()
    for ((i = 1; i < n; i++)); do conts+=(-ex continue); done
    rm -f "$work/core"
    timeout 120 "$build/memtrace" gdb -batch -ex 'set breakpoint pending on' -ex 'break print_trace' \
        -ex run "${conts[@]}" -ex "gcore $work/core" -ex kill -- "$bin" >/dev/null 2>&1 </dev/null
    timeout 120 "$build/memtrace" core -batch -ex 'memtrace ptr' -- "$bin" "$work/core" \
        >"$work/core.out" 2>&1 </dev/null
    local want got
    want=$(awk -v n="$n" '/^memtrace: 0x[0-9a-f]+: start of / { k++ } k == n && /^  /' "$out" |
           sed -E 's/#([0-9]+) 0x[0-9a-f]+ in /#\1 ADDR in /')
    got=$(awk '/^memtrace: 0x[0-9a-f]+: start of / { k++ } k == 1 && /^  /' "$work/core.out" |
          sed -E 's/#([0-9]+) 0x[0-9a-f]+ in /#\1 ADDR in /')
    if [ -n "$want" ] && [ "$want" = "$got" ]; then
        pass "$name, on a core file: memtrace-symbolize's frames as the library's"
    else
        fail "$name, on a core file" "$(printf 'library:\n%s\ncore:\n%s' "$want" "$(cat "$work/core.out")")"
    fi
}
# ---------------------------------------------------------------- stripped
# The debug sections stripped, .symtab kept: every function named.
strip --strip-debug -o "$work/symtab" "$full"
expect "stripped of debug sections: names from .symtab" "$work/symtab" 0 \
    "$symtab" "sym static_alloc" "sym outer_alloc"
# Stripped of every symbol but .dynsym (-rdynamic): the static function is
# not named after the exported one before it.
strip --strip-all -o "$work/dynsym" "$full"
expect "stripped of all but .dynsym: the static function unnamed" "$work/dynsym" 0 \
    "$symtab" nameless "sym outer_alloc"
on_core "stripped of all but .dynsym" "$work/dynsym" 2
# MiniDebugInfo (.gnu_debugdata: an xz-compressed ELF file holding the
# symbols .dynsym lacks, as Fedora's find-debuginfo makes it).
nm --format=posix --defined-only "$full" | awk '$2 ~ /^[Tt]$/ { print $1 }' | sort >"$work/funcs"
nm -D --format=posix --defined-only "$full" | awk '{ print $1 }' | sort >"$work/dynfuncs"
comm -23 "$work/funcs" "$work/dynfuncs" >"$work/keep"
objcopy --only-keep-debug "$full" "$work/mini.full"
objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols="$work/keep" \
    "$work/mini.full" "$work/mini"
xz -f "$work/mini"
objcopy --add-section .gnu_debugdata="$work/mini.xz" "$work/dynsym" "$work/minidebuginfo"
expect "MiniDebugInfo: the static function named from .gnu_debugdata" "$work/minidebuginfo" 0 \
    "$symtab" "sym static_alloc" "sym outer_alloc"
on_core "MiniDebugInfo" "$work/minidebuginfo" 2
# A .gnu_debugdata that does not decompress: as without it.
head -c 4096 /dev/urandom >"$work/garbage.xz"
objcopy --add-section .gnu_debugdata="$work/garbage.xz" "$work/dynsym" "$work/baddebugdata"
expect "a .gnu_debugdata that does not decompress: as .dynsym alone" "$work/baddebugdata" 0 \
    "$symtab" nameless "sym outer_alloc"

# ---------------------------------------------------------------- separate debug files
# separate NAME: $work/NAME, the reference stripped of its debug sections
# (.symtab kept), with a .gnu_debuglink to $work/NAME.debug (its debug
# sections), made otherwise below.
separate() {
    objcopy --only-keep-debug "$full" "$work/$1.debug" &&
    strip --strip-debug -o "$work/$1" "$full" &&
    objcopy --add-gnu-debuglink="$work/$1.debug" "$work/$1"
}
separate linked
expect "a .gnu_debuglink beside the program: file:line" "$work/linked" 0 \
    "line exported_alloc exported" "line static_alloc static" inline
separate missing
rm "$work/missing.debug"
expect "a missing debug file: .symtab's names, no note" "$work/missing" 0 \
    "$symtab" "sym static_alloc" "sym outer_alloc"
separate truncated
head -c 3000 "$work/truncated.debug" >"$work/t" && mv "$work/t" "$work/truncated.debug"
expect "a truncated debug file: .symtab's names, one note" "$work/truncated" 1 \
    "$symtab" "sym static_alloc" "sym outer_alloc"
on_core "a truncated debug file" "$work/truncated" 2
has "a truncated debug file: the note names it" "$out" \
    "memtrace: truncated: the debug file $work/truncated.debug is not this build's or cannot be read; its frames are named from the symbol table"
# Another build's debug file (a different build ID) under the right name.
separate mismatched
gcc "${cflags[@]}" -DOTHER_BUILD -o "$work/other" "$src" -ldl -Wl,--build-id=0x0123456789abcdef &&
objcopy --only-keep-debug "$work/other" "$work/mismatched.debug"
expect "a debug file of another build: .symtab's names, one note" "$work/mismatched" 1 \
    "$symtab" "sym static_alloc" "sym outer_alloc"
has "a debug file of another build: the note names it" "$out" \
    "memtrace: mismatched: the debug file $work/mismatched.debug is not this build's"
# A FIFO under the debug file's name (nothing writes to it): opened
# without blocking and refused, the program not hung.
separate fifo
rm "$work/fifo.debug" && mkfifo "$work/fifo.debug"
expect "a FIFO named as the debug file: no hang, .symtab's names, one note" "$work/fifo" 1 \
    "$symtab" "sym static_alloc" "sym outer_alloc"
# zstd-compressed debug sections: libelf 0.188 (Debian 12) cannot
# decompress them.
objcopy --compress-debug-sections=zstd "$full" "$work/zstd"
expect "zstd-compressed debug sections (not read by libelf 0.188): .symtab's names" "$work/zstd" 0 \
    "$symtab" "sym static_alloc" "sym outer_alloc"

# ---------------------------------------------------------------- split DWARF
# split NAME CC DWARF: $work/NAME/prog built with -gsplit-dwarf, its .dwo
# beside its object.
split() {
    mkdir -p "$work/$1" &&
    local flags=("${cflags[@]}")
    [ "$2" = clang ] && flags=(-g -O2 -Wall)
    "$2" "${flags[@]}" "-gdwarf-$3" -gsplit-dwarf -c -o "$work/$1/prog.o" "$src" &&
    "$2" -rdynamic -o "$work/$1/prog" "$work/$1/prog.o" -ldl
}
split dwo gcc 5
expect "split DWARF, the .dwo beside the object: inlined frames" "$work/dwo/prog" 0 \
    "line exported_alloc exported" "line static_alloc static" inline
on_core "split DWARF" "$work/dwo/prog" 3
split moved gcc 5
mv "$work/moved/prog.dwo" "$work/moved.dwo"
expect "a .dwo that moved: the skeleton's lines, no inlined frames, one note" "$work/moved/prog" 1 \
    "line exported_alloc exported" "line static_alloc static" "line outer_alloc inlined"
has "a .dwo that moved: the note names it" "$out" \
    "memtrace: prog: split DWARF $work/moved/prog.dwo not found (nor read from a .dwp package); its frames have no inlined calls"
# .dwp packages (binutils' dwp, DWARF 4's GNU split units; llvm-dwp, DWARF
# 5): libdw 0.188 does not read them: as a .dwo that moved.
split dwp gcc 4 && dwp -e "$work/dwp/prog" -o "$work/dwp/prog.dwp" && rm "$work/dwp/prog.dwo"
expect "a dwp package (not read by libdw 0.188): as a .dwo that moved" "$work/dwp/prog" 1 \
    "line exported_alloc exported" "line static_alloc static" "line outer_alloc inlined"
on_core "a dwp package" "$work/dwp/prog" 3
split llvmdwp clang 5 && llvm-dwp -e "$work/llvmdwp/prog" -o "$work/llvmdwp/prog.dwp" &&
    rm "$work/llvmdwp/prog.dwo"
expect "an llvm-dwp package (not read by libdw 0.188): as a .dwo that moved" "$work/llvmdwp/prog" 1 \
    "line exported_alloc exported" "line static_alloc static" "line outer_alloc inlined"

# ---------------------------------------------------------------- a Debian binary
# /usr/bin/sqlite3 as Debian ships it: it and libsqlite3.so.0 stripped
# (.dynsym only; their -dbgsym packages are not installed, nor reachable),
# glibc with libc6-dbg's debug file under /usr/lib/debug/.build-id, as a
# -dbgsym package lays one. Its allocation stacks, from the profiler's
# pprof profile (`go tool pprof -raw`: each location's address, which is
# the return address, and its rows): a row in sqlite3 or libsqlite3 is the
# .dynsym function whose size covers the offset, or, where none does,
# "MODULE+OFFSET"; a row in libc has the functions, lines and inlined
# chain llvm-symbolizer reads from libc6-dbg's file (file names compared
# by their last component: it joins them with the unit's directory; a
# function name may be addr2line's instead: the two name glibc's aliased
# functions differently). binutils 2.40's addr2line is not the oracle
# here: it names another file for some of glibc's DWARF 5 rows (getpwuid.c
# for the getXXbyYY.c the line table and gdb give).
export HOME=$work/home PPROF_TMPDIR=$work/pprof-tmp
mkdir -p "$HOME" "$PPROF_TMPDIR"
libc=$(readlink -f /lib/x86_64-linux-gnu/libc.so.6)
libc_id=$(readelf -n "$libc" | awk '/Build ID:/ { print $3; exit }')
if ! command -v sqlite3 >/dev/null || ! command -v go >/dev/null ||
    [ ! -f "/usr/lib/debug/.build-id/${libc_id:0:2}/${libc_id:2}.debug" ]; then
    fail "a Debian binary" "needs sqlite3, golang-go and libc6-dbg (make deps)"
else
    timeout 120 env LD_PRELOAD="$build/libmemtrace-profiler.so" MEMTRACE_INTERVAL_MS=0 \
        MEMTRACE_PPROF="$work/sqlite3.pb.gz" sqlite3 :memory: \
        'create table t(a text); insert into t values (hex(randomblob(300))); select length(a) from t;' \
        >"$work/sqlite3.out" 2>"$work/sqlite3.err"
    timeout 120 go tool pprof -raw "$work/sqlite3.pb.gz" >"$work/sqlite3.raw" 2>&1
    verdict=$(python3 - "$work/sqlite3.raw" <<'EOF2'
import os, re, subprocess, sys
raw = open(sys.argv[1]).read().splitlines()
maps, locs, cur, section = {}, [], None, None
for l in raw:
    if l in ("Locations", "Mappings", "Samples:"):
        section = l
        continue
    if section == "Mappings":
        m = re.match(r"(\d+): 0x([0-9a-f]+)/0x([0-9a-f]+)/0x([0-9a-f]+) (\S+)", l)
        if m:
            maps[m.group(1)] = (int(m.group(2), 16), int(m.group(4), 16), m.group(5))
    elif section == "Locations":
        m = re.match(r"\s*\d+: 0x([0-9a-f]+) M=(\d+) (\S+) (\S*):(\d+) s=\d+$", l)
        if m:
            cur = [int(m.group(1), 16), m.group(2), [(m.group(3), m.group(4), int(m.group(5)))]]
            locs.append(cur)
            continue
        m = re.match(r"\s+(\S+) (\S*):(\d+) s=\d+$", l)
        if m and cur:
            cur[2].append((m.group(1), m.group(2), int(m.group(3))))
dynsyms = {}
def dynsym(path):
    if path not in dynsyms:
        out = subprocess.run(["nm", "-D", "-S", "--defined-only", path], capture_output=True,
                             text=True).stdout
        dynsyms[path] = [(int(f[0], 16), int(f[1], 16), f[3]) for f in
                         (l.split() for l in out.splitlines()) if len(f) == 4 and f[2] in "tTwWiI"]
    return dynsyms[path]
errors, counts = [], {"named": 0, "nameless": 0, "libc": 0}
for addr, mid, rows in locs:
    start, off0, path = maps[mid]
    off = addr - 1 - start + off0
    base = os.path.basename(path)
    if base.startswith("sqlite3") or base.startswith("libsqlite3"):
        want = next((n for a, z, n in dynsym(path) if a <= off < a + z), None)
        got = rows[0][0]
        if want is None and got != "%s+0x%x" % (base, off):
            errors.append("%s+0x%x: %r, no symbol covers it" % (base, off, got))
        elif want is not None and got != want:
            errors.append("%s+0x%x: %r, .dynsym says %r" % (base, off, got, want))
        counts["named" if want else "nameless"] += 1
    elif base.startswith("libc.so"):
        t = subprocess.run(["llvm-symbolizer", "--inlining", "--obj=" + path, hex(off)],
                           capture_output=True, text=True).stdout.strip().splitlines()
        want = [(fn, os.path.basename(loc.rsplit(":", 2)[0]), int(loc.rsplit(":", 2)[1]))
                for fn, loc in zip(t[0::2], t[1::2])]
        t = subprocess.run(["addr2line", "-i", "-f", "-C", "-e", path, hex(off)],
                           capture_output=True, text=True).stdout.splitlines()
        names = [n[len("__GI_"):] if n.startswith("__GI_") else n for n in t[0::2]]
        got = [(fn, os.path.basename(f), ln) for fn, f, ln in rows]
        # The oracles name a function with internal aliases differently,
        # each at times by an alias (glibc's __GI_ ones, or the public
        # name): memtrace's (DWARF's DW_AT_name, as gdb's) must be
        # llvm-symbolizer's or addr2line's without __GI_.
        got = [(w[0] if g[0] in (w[0], names[i] if i < len(names) else None) else g[0],) + g[1:]
               for i, (g, w) in enumerate(zip(got, want))] + got[len(want):]
        if got != want:
            errors.append("libc.so.6+0x%x: %s, llvm-symbolizer %s (addr2line: %s)"
                          % (off, got, want, names))
        counts["libc"] += 1
if not counts["named"] or not counts["nameless"] or not counts["libc"]:
    errors.append("too few frames to compare: %s" % counts)
print("\n".join(errors) if errors else "ok %d %d %d" % (counts["named"], counts["nameless"], counts["libc"]))
EOF2
)
    case $verdict in
    "ok "*) set -- $verdict
            pass "a Debian binary, sqlite3: $2 named and $3 nameless frames as .dynsym, $4 libc frames as llvm-symbolizer with libc6-dbg" ;;
    *) fail "a Debian binary, sqlite3" "$verdict" ;;
    esac
fi

finish sym_files
