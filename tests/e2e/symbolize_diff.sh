#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The symbolization differential test (a first slice of the build
# matrix): every frame memtrace prints for the allocation stacks of
# tests/progs/symdiff_main.c (and symdiff_cxx.cpp) and the shared library
# of symdiff_lib.c must name the same function, file and line, and the same
# inlined chain, as binutils' `addr2line -i -f -C` on the same address, and
# the same column as llvm-symbolizer where both give one (addr2line gives
# none). Built with gcc 12 and clang 14 (clang emits no .debug_aranges),
# DWARF 4 and 5, -O0 and -O2, PIE and not: 16 C builds, 4 C++ ones
# (g++ and clang++, -O0 and -O2), -O3 and -O2 -flto with each compiler,
# and 2 that link one compiler's object into the other's program. Then
# where the debug information is (each checked on a core file too, by
# `memtrace core`): split DWARF (.dwo files beside the objects; gcc and
# clang, DWARF 4 and 5), compressed sections (-gz, gcc's .zdebug), and
# separate debug files: .gnu_debuglink beside the module, in its .debug/,
# under DEBUG-ROOT/PATH, the build ID under DEBUG-ROOT/.build-id, and dwz
# -m's common file named by .gnu_debugaltlink. DEBUG-ROOT is a scratch
# directory named by MEMTRACE_DEBUG_DIR, and, as root (CI), /usr/lib/debug
# itself for the dwz and Debian builds (their files removed at exit). Last,
# the program and library packaged as Debian's debhelper does (dh_dwz,
# dh_strip: see debian()), the files of a -dbgsym package laid where it
# installs them: the real programs' case.
# Last of all, tests/progs/symdiff_rs.rs built by rustc at opt-level 0
# and 2 with the C library (the Rust block at the end).
#
# print_trace prints a frame that has debug information without its
# address, so each build runs twice: as built, and as a copy with the debug
# sections stripped (objcopy --strip-debug: the same code at the same
# offsets, the symbol table kept), where every frame of the build's own
# modules is "FUNCTION in MODULE+OFFSET", OFFSET being the address of the
# call's last byte (return address - 1) in the module's file, which
# addr2line takes. The two runs make the same allocations, so frame k of
# one is frame k of the other. A third run, under the profiler, must print
# the same three stacks, row for row, in its exit report, and a fourth,
# under gdb, must get print_trace's answers from gdb's `memtrace ptr`
# (memtrace-symbolize) at each print_trace call.
#
# File names: the programs are compiled from the project's root by
# relative paths, as the other suites' are; gdb and memtrace name a file as
# the line table does, relative to the CU's directory (DW_AT_comp_dir, the
# root), where addr2line joins the two: memtrace's name must be gdb's
# exactly (`info line`), and name the file addr2line names.
#
# SYMDIFF_KEEP=DIR keeps the builds and outputs in DIR.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

lib=$build/libmemtrace.so
profiler=$build/libmemtrace-profiler.so
if [ -n "${SYMDIFF_KEEP:-}" ]; then
    rm -rf "$work"
    trap - EXIT
    work=$SYMDIFF_KEEP
    mkdir -p "$work"
fi
# Files this run lays under the debug root, removed at exit.
debug_root=/usr/lib/debug
# The directories made there are removed too, deepest first, when empty
# (another run may have laid files in them meanwhile).
laid=$work/laid made=$work/made
unlay() {
    if [ -f "$laid" ]; then xargs -r -d '\n' rm -rf -- <"$laid"; fi
    if [ -f "$made" ]; then tac "$made" | xargs -r -d '\n' rmdir -- 2>/dev/null; fi
}
# lay_dir DIR: mkdir -p DIR, each directory it makes listed in $made.
lay_dir() {
    local d=$1 new=()
    while [ ! -d "$d" ]; do
        new=("$d" "${new[@]}")
        d=${d%/*}
    done
    mkdir -p "$1" && { [ ${#new[@]} = 0 ] || printf '%s\n' "${new[@]}" >>"$made"; }
}
if [ -n "${SYMDIFF_KEEP:-}" ]; then trap unlay EXIT; else trap 'unlay; rm -rf "$work"' EXIT; fi
for l in "$lib" "$profiler"; do
    [ -f "$l" ] || { echo "symbolize_diff: $l not built" >&2; exit 1; }
done
for tool in gcc g++ clang clang++ addr2line llvm-symbolizer objcopy python3 gdb; do
    command -v "$tool" >/dev/null || { fail "tools" "$tool not found"; finish symbolize_diff; exit; }
done

# build DIR CC LANG DWARF OPT PIE: the program and its library into
# DIR/debug (OPT: O0, O2, O3 or O2-flto), their stripped copies into
# DIR/stripped. LANG c or cxx; mixed:
# C, the library's code compiled by the other compiler and linked into the
# program, which then has .debug_aranges for gcc's CU only.
build() {
    local dir=$1 cc=$2 lang=$3 dwarf=$4 opt=$5 pie=$6 kind=${7:-in}
    case $kind in
    dwo) build_split "$@"; return ;;
    esac
    local flags=(-g "-gdwarf-$dwarf" "-${opt%%-*}" -Wall -Wextra) pieflags=(-fPIE -pie)
    [ "$kind" = gz ] && flags+=(-gz=zlib)
    # Debian's default flags (dpkg-buildflags), but -ffile-prefix-map,
    # which would name the files relative to "." rather than the root.
    [ "$kind" = debian ] && flags+=(-fstack-protector-strong -Wformat -Werror=format-security
                                    -Wl,-z,relro)
    [ "$kind" = zdebug ] && flags+=(-gz=zlib-gnu)
    [ "${opt#*-}" = flto ] && flags+=(-flto)
    local src=tests/progs/symdiff_main.c
    [ "$pie" = nopie ] && pieflags=(-fno-pie -no-pie)
    [ "$lang" = cxx ] && src=tests/progs/symdiff_cxx.cpp
    cd "$root" || return
    mkdir -p "$dir/debug" "$dir/stripped"
    local libcc=${cc%++}
    [ "$libcc" = g ] && libcc=gcc
    if [ "$lang" = mixed ]; then
        libcc=clang
        [ "$cc" = clang ] && libcc=gcc
        "$libcc" "${flags[@]}" "${pieflags[0]}" -c -o "$dir/debug/lib.o" tests/progs/symdiff_lib.c &&
        "$cc" "${flags[@]}" "${pieflags[@]}" -o "$dir/debug/symdiff" "$src" "$dir/debug/lib.o" -ldl &&
        objcopy --strip-debug "$dir/debug/symdiff" "$dir/stripped/symdiff"
        return
    fi
    "$libcc" "${flags[@]}" -fPIC -shared -Wl,-soname,libsymdiff.so \
        -o "$dir/debug/libsymdiff.so" tests/progs/symdiff_lib.c &&
    "$cc" "${flags[@]}" "${pieflags[@]}" -o "$dir/debug/symdiff" "$src" \
        -L"$dir/debug" -lsymdiff -ldl -Wl,-rpath,'$ORIGIN' &&
    objcopy --strip-debug "$dir/debug/libsymdiff.so" "$dir/stripped/libsymdiff.so" &&
    objcopy --strip-debug "$dir/debug/symdiff" "$dir/stripped/symdiff" || return
    case $kind in
    link* | buildid*) separate "$dir" "$kind" ;;
    debian) debian "$dir" ;;
    esac
}

# separate DIR KIND: the build of DIR/debug moved to DIR/ref (the oracles
# read it), and DIR/debug made of its files stripped of their debug
# sections (strip --strip-debug, as Debian's dh_strip), the debug sections
# in a separate file (objcopy --only-keep-debug) found by
#   link      .gnu_debuglink, the file beside the module
#   link-dir  .gnu_debuglink, in the module's .debug/ directory
#   link-usr  .gnu_debuglink, under $debug_root/PATH-OF-THE-MODULE'S-DIR
#   buildid   the build ID, $debug_root/.build-id/xx/yyyy.debug
#   buildid-dwz  the same after `dwz -m` moved what the two files share
#             into a common file named by .gnu_debugaltlink, under
#             $debug_root/.dwz/ (Debian's dh_dwz)
# $debug_root is /usr/lib/debug (as root: buildid-dwz, debian) or a
# scratch root the runs name in MEMTRACE_DEBUG_DIR (run_build).
separate() {
    local dir=$1 kind=$2 m f id dest common
    mv "$dir/debug" "$dir/ref" && mkdir "$dir/debug" || return
    for m in symdiff libsymdiff.so; do
        objcopy --only-keep-debug "$dir/ref/$m" "$dir/$m.debug" &&
        strip --remove-section=.comment --strip-debug -o "$dir/debug/$m" "$dir/ref/$m" || return
    done
    if [ "$kind" = buildid-dwz ]; then
        common=.dwz/${work##*/}-${dir##*/}.debug
        lay_dir "$debug_root/.dwz" && echo "$debug_root/$common" >>"$laid" &&
        dwz -m "$debug_root/$common" -M "/usr/lib/debug/$common" \
            "$dir/symdiff.debug" "$dir/libsymdiff.so.debug" || return
        if [ "$debug_root" != /usr/lib/debug ]; then
            # The altlink names the file where Debian installs it; under a
            # scratch root it is found by its build ID.
            id=$(build_id "$debug_root/$common")
            lay_dir "$debug_root/.build-id/${id:0:2}" &&
            echo "$debug_root/.build-id/${id:0:2}/${id:2}.debug" >>"$laid" &&
            ln -sf "../../$common" "$debug_root/.build-id/${id:0:2}/${id:2}.debug"
        fi
        readelf -S "$dir/symdiff.debug" | grep -q gnu_debugaltlink || { echo "dwz made no altlink"; return 1; }
    fi
    for m in symdiff libsymdiff.so; do
        f=$dir/$m.debug
        # The stripped run must not find the debug file by the build ID
        # the copy shares with it: its ID's bytes changed in place.
        python3 -c 'import sys; p, i = sys.argv[1], bytes.fromhex(sys.argv[2]); b = open(p, "rb").read()
assert b.count(i) == 1; open(p, "wb").write(b.replace(i, bytes(255 - x for x in i)))' \
            "$dir/stripped/$m" "$(build_id "$f")" || return
        case $kind in
        link) dest=$dir/debug/$m.debug ;;
        link-dir) mkdir -p "$dir/debug/.debug" && dest=$dir/debug/.debug/$m.debug ;;
        link-usr) lay_dir "$debug_root$dir/debug" && echo "$debug_root$work" >>"$laid" &&
                  dest=$debug_root$dir/debug/$m.debug ;;
        buildid*) id=$(build_id "$f") && lay_dir "$debug_root/.build-id/${id:0:2}" &&
                  dest=$debug_root/.build-id/${id:0:2}/${id:2}.debug && echo "$dest" >>"$laid" ;;
        esac
        case $kind in
        link*) objcopy --add-gnu-debuglink="$f" "$dir/debug/$m" || return ;;
        esac
        mv "$f" "$dest" || return
    done
}

# debian DIR: DIR/debug made of the build of DIR/debug (moved to DIR/ref)
# as Debian's debhelper packages it, the program and library standing for
# a package's files and their -dbgsym package's: dh_dwz (dwz -m, the common
# file under /usr/lib/debug/.dwz/TRIPLET/), then dh_strip: the debug file,
# compressed, at the build ID's path under /usr/lib/debug/.build-id,
# .comment and .note removed (an executable loses .symtab with them; a
# library is stripped --strip-unneeded), a .gnu_debuglink added.
debian() {
    local dir=$1 m f id common
    common=.dwz/x86_64-linux-gnu/memtrace-test-${work##*/}-${dir##*/}.debug
    mv "$dir/debug" "$dir/ref" && mkdir "$dir/debug" &&
    cp "$dir/ref/symdiff" "$dir/ref/libsymdiff.so" "$dir/debug/" &&
    lay_dir "$debug_root/.dwz/x86_64-linux-gnu" && echo "$debug_root/$common" >>"$laid" &&
    dwz -m "$debug_root/$common" -M "/usr/lib/debug/$common" \
        "$dir/debug/symdiff" "$dir/debug/libsymdiff.so" || return
    if [ "$debug_root" != /usr/lib/debug ]; then
        # memtrace-symbolize (libdwfl's standard search) finds the common
        # file under a scratch root by its build ID only; the library also
        # by the altlink's /usr/lib/debug name read under the root.
        id=$(build_id "$debug_root/$common") && lay_dir "$debug_root/.build-id/${id:0:2}" &&
        ln -sf "../../$common" "$debug_root/.build-id/${id:0:2}/${id:2}.debug" || return
    fi
    for m in symdiff libsymdiff.so; do
        f=$dir/debug/$m
        id=$(build_id "$f") && lay_dir "$debug_root/.build-id/${id:0:2}" || return
        local dest=$debug_root/.build-id/${id:0:2}/${id:2}.debug
        echo "$dest" >>"$laid"
        objcopy --only-keep-debug --compress-debug-sections "$f" "$dest" || return
        if [ "$m" = symdiff ]; then
            strip --remove-section=.comment --remove-section=.note "$f"
        else
            strip --remove-section=.comment --remove-section=.note --strip-unneeded "$f"
        fi &&
        objcopy --add-gnu-debuglink="$dest" "$f" || return
        python3 -c 'import sys; p, i = sys.argv[1], bytes.fromhex(sys.argv[2]); b = open(p, "rb").read()
assert b.count(i) == 1; open(p, "wb").write(b.replace(i, bytes(255 - x for x in i)))' \
            "$dir/stripped/$m" "$id" || return
    done
}

build_id() { readelf -n "$1" | awk '/Build ID:/ { print $3; exit }'; }

# build_split DIR CC c DWARF OPT PIE dwo: split DWARF (-gsplit-dwarf),
# each object compiled apart so that its .dwo lies beside it in DIR/debug.
# DIR/ref: the same build without -gsplit-dwarf (the same code: the oracles
# read it; binutils 2.40's addr2line reads no split DWARF). A .dwp package
# is not read (libdw 0.188): tests/e2e/sym_files.sh checks what is left.
build_split() {
    local dir=$1 cc=$2 dwarf=$4 opt=$5 pie=$6 kind=$7 d split
    local flags=(-g "-gdwarf-$dwarf" "-$opt" -Wall -Wextra) pic=-fPIE link=-pie
    [ "$pie" = nopie ] && pic=-fno-pie link=-no-pie
    cd "$root" || return
    mkdir -p "$dir/debug" "$dir/ref" "$dir/stripped"
    for d in debug ref; do
        split=()
        [ "$d" = debug ] && split=(-gsplit-dwarf)
        "$cc" "${flags[@]}" "${split[@]}" -fPIC -c -o "$dir/$d/lib.o" tests/progs/symdiff_lib.c &&
        "$cc" "${flags[@]}" "${split[@]}" "$pic" -c -o "$dir/$d/main.o" tests/progs/symdiff_main.c &&
        "$cc" -shared -Wl,-soname,libsymdiff.so -o "$dir/$d/libsymdiff.so" "$dir/$d/lib.o" &&
        "$cc" "$link" -o "$dir/$d/symdiff" "$dir/$d/main.o" -L"$dir/$d" -lsymdiff -ldl \
            -Wl,-rpath,'$ORIGIN' || return
    done
    for m in symdiff libsymdiff.so; do
        same_code "$dir/ref/$m" "$dir/debug/$m" &&
        objcopy --strip-debug "$dir/ref/$m" "$dir/stripped/$m" || return
    done
}

# Whether A and B have the same code (.text): the oracles read one, the
# runs the other.
same_code() {
    cmp -s <(objcopy -O binary --only-section=.text "$1" /dev/stdout) \
        <(objcopy -O binary --only-section=.text "$2" /dev/stdout) || { echo "$1 and $2 differ in .text"; return 1; }
}

# compare DIR: the two runs' print_trace answers against addr2line and
# llvm-symbolizer; prints "ok N" (N frames compared) or the differences.
compare() {
    python3 - "$1" "$root" <<'EOF'
import os, re, subprocess, sys

d, root = sys.argv[1], sys.argv[2]
ours = ("symdiff", "libsymdiff.so")

def blocks(path, header=r"^memtrace: 0x[0-9a-f]+: start of "):
    """The answers of a run (print_trace's; the profiler's exit report's
    sites with HEADER): per block, its frames, each a list of rows
    (function, file or None, line, column, module, offset)."""
    out, frames = [], None
    row = re.compile(r"^ +(#\d+|inlined into) (.*?)(?: at (.+?):(\d+)(?::(\d+))?| in (\S+)\+0x([0-9a-f]+))?"
                     r"(?: \(tail call\))?$")
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if re.match(header, line):
            frames = []
            out.append(frames)
            continue
        m = row.match(line)
        if frames is None or not m:
            if not line.startswith(" "):
                frames = None
            continue
        r = (m.group(2), m.group(3), int(m.group(4) or 0), int(m.group(5) or 0), m.group(6),
             int(m.group(7), 16) if m.group(7) else None)
        if m.group(1).startswith("#"):
            frames.append([r])
        elif frames:
            frames[-1].append(r)
    return out

def addr2line(mod, off):
    t = subprocess.run(["addr2line", "-i", "-f", "-C", "-e", mod, hex(off)], capture_output=True,
                       text=True, check=True).stdout.splitlines()
    rows = []
    for fn, loc in zip(t[0::2], t[1::2]):
        loc = re.sub(r" \(discriminator \d+\)$", "", loc)
        f, _, l = loc.rpartition(":")
        line = int(l) if l.isdigit() else 0
        rows.append((None if fn == "??" else fn, None if f in ("??", "") or line == 0 else f, line))
    return rows

def symbolizer(mod, off):
    """llvm-symbolizer's rows: (file, column)."""
    t = subprocess.run(["llvm-symbolizer", "--inlining", "--obj=" + mod, hex(off)],
                       capture_output=True, text=True, check=True).stdout.strip().splitlines()
    rows = []
    for fn, loc in zip(t[0::2], t[1::2]):
        parts = loc.rsplit(":", 2)
        rows.append((parts[0], int(parts[2]) if len(parts) == 3 and parts[2].isdigit() else 0))
    return rows

# gdb's files of the rows of an address, innermost first, as its `bt`
# names them: the line table's for the innermost (find_pc_line), then each
# inlined call's DW_AT_call_file (the symtab of the inlined function's
# symbol, which gdb gives the call's file and line).
GDB_ROWS = """
import gdb
for a in ADDRS:
    sal = gdb.find_pc_line(a)
    files = [sal.symtab.filename if sal.symtab and sal.line else None]
    b = gdb.block_for_pc(a)
    fns = []
    while b is not None:
        if b.function is not None:
            fns.append(b.function)
        b = b.superblock
    files += [f.symtab.filename if f.symtab else None for f in fns[:-1]]
    print("@@ " + repr(files))
"""

def gdb_files(mod, offs):
    """gdb's files of the rows of each of OFFS in MOD (one gdb)."""
    script = os.path.join(d, "gdb_rows.py")
    with open(script, "w") as f:
        f.write("ADDRS = %r\n" % offs + GDB_ROWS)
    t = subprocess.run(["gdb", "-nx", "-batch", "-x", script, mod], capture_output=True,
                       text=True, timeout=120).stdout
    out = [eval(l[3:]) for l in t.splitlines() if l.startswith("@@ ")]
    return out + [[]] * (len(offs) - len(out))

dbg, strip = blocks(d + "/debug.txt"), blocks(d + "/stripped.txt")
errors, compared = [], 0
if len(dbg) != 3 or len(strip) != 3:
    errors.append("expected 3 answers in each run, got %d and %d" % (len(dbg), len(strip)))
frames = []  # (where, rows, path, addr2line's rows, columns)
for b, (fd, fs) in enumerate(zip(dbg, strip)):
    if len(fd) != len(fs):
        errors.append("block %d: %d frames, %d stripped" % (b, len(fd), len(fs)))
        continue
    mine = 0
    for k, (rows, srow) in enumerate(zip(fd, fs)):
        mod, off = srow[0][4], srow[0][5]
        if mod not in ours:
            continue
        mine += 1
        compared += 1
        path = d + ("/ref/" if os.path.isdir(d + "/ref") else "/debug/") + mod
        want = addr2line(path, off)
        llvm = symbolizer(path, off)
        # binutils 2.40 names the file of a line row in gcc's LTO unit by
        # the unit's name, "<artificial>"; gdb (info line) and
        # llvm-symbolizer name the source file, as memtrace does.
        want = [(w[0], llvm[i][0] if w[1] and w[1].endswith("/<artificial>") and i < len(llvm)
                 else w[1], w[2]) for i, w in enumerate(want)]
        frames.append(("block %d frame #%d (%s+0x%x)" % (b, k, mod, off), rows, path, off, want,
                       [c for _, c in llvm]))
    if mine < 2:
        errors.append("block %d: %d frames in the build's modules" % (b, mine))
# File names are gdb's, exactly: addr2line joins every relative name with
# DW_AT_comp_dir, where gdb names a file as its line table does, relative
# (the CU's DW_AT_name for its primary file): gdb_files. addr2line's file
# must be the same file.
offs = {}
for _, _, path, off, _, _ in frames:
    offs.setdefault(path, []).append(off)
named = {path: dict(zip(o, gdb_files(path, o))) for path, o in offs.items()}
for where, rows, path, off, want, cols in frames:
    gdb = named[path][off]
    if len(gdb) != len(want):
        errors.append("%s: gdb has %d rows, addr2line %d" % (where, len(gdb), len(want)))
        continue
    gdb = [g if w[1] else None for g, w in zip(gdb, want)]
    for w, g in zip(want, gdb):
        if w[1] and not (g and (w[1] == g or (not g.startswith("/") and w[1].endswith("/" + g)))):
            errors.append("%s: gdb names %s, addr2line %s" % (where, g, w[1]))
    want = [(w[0], g, w[2]) for w, g in zip(want, gdb)]
    got = [r[:3] for r in rows]
    # GCC gives C++ functions with internal linkage no linkage name:
    # addr2line names an inlined call's caller "run" from DW_AT_name,
    # where memtrace names it from its symbol, demangled whole, "run()"
    # (sym_function_name); the one tolerated difference.
    got = [(w[0] if w[0] and g[0] and "(" not in w[0] and g[0].startswith(w[0] + "(")
            else g[0],) + g[1:] for g, w in zip(got, want)] + got[len(want):]
    if got != want:
        errors.append("%s: memtrace %s, addr2line and gdb %s" % (where, got, want))
        continue
    for i, r in enumerate(rows):
        if r[3] and i < len(cols) and cols[i] and r[3] != cols[i]:
            errors.append("%s row %d: column %d, llvm-symbolizer %d" % (where, i, r[3], cols[i]))
# Across runs, a frame no symbol names is compared without its run-time
# address (address space layout differs from run to run; under gdb it is
# off): libc's frames, where MEMTRACE_DEBUG_DIR leaves out libc6-dbg's file.
def placeless(blocks):
    return [[[(("0x?",) if re.match(r"0x[0-9a-f]+$", r[0] or "") else r[:1]) + r[1:] for r in f]
             for f in b] for b in blocks]
dbg_placeless = placeless(dbg)
# The profiler's exit report names the same stacks with the same rows (the
# C++ runtime's own allocation at start-up left out).
def program_stacks(stacks):
    return sorted(st for st in stacks
                  if any(r[1] and "tests/progs/symdiff_" in r[1] for f in st for r in f))
prof = program_stacks(placeless(blocks(d + "/profile.txt", r"^memtrace: at the peak \[\d+\] ")))
if len(prof) != 3 or prof != program_stacks(dbg_placeless):
    errors.append("the profiler's sites %s, print_trace's %s" % (sorted(prof), sorted(dbg)))
# gdb's memtrace command (memtrace-symbolize) answers as print_trace does.
gdb = placeless(blocks(d + "/gdb.txt"))
if gdb != dbg_placeless:
    errors.append("gdb's memtrace command %s, print_trace %s" % (gdb, dbg))
# On a core written at the last print_trace call too (the builds with
# separate debug files: memtrace-symbolize finds them from the core).
if os.path.exists(d + "/core.txt"):
    core = placeless(blocks(d + "/core.txt"))
    if core != dbg_placeless[2:]:
        errors.append("memtrace on the core %s, print_trace %s" % (core, dbg[2:]))
for e in errors:
    print(e)
if not errors:
    print("ok", compared)
EOF
}

run_build() { # NAME CC LANG DWARF OPT PIE [KIND]
    local name=$1 dir=$work/$1 kind=${7:-in}
    if [ -n "${SYMDIFF_ONLY:-}" ] && ! [[ $name =~ $SYMDIFF_ONLY ]]; then
        return
    fi
    # The debug root: /usr/lib/debug itself as root for dwz's and Debian's
    # builds, else a scratch root named by MEMTRACE_DEBUG_DIR to every run.
    debug_root=/usr/lib/debug
    unset MEMTRACE_DEBUG_DIR
    case $kind in
    link-usr | buildid) debug_root=$dir.root ;;
    buildid-dwz | debian) [ "$(id -u)" = 0 ] || debug_root=$dir.root ;;
    esac
    if [ "$debug_root" != /usr/lib/debug ]; then
        lay_dir "$debug_root"
        export MEMTRACE_DEBUG_DIR=$debug_root
    fi
    if ! (build "$dir" "$2" "$3" "$4" "$5" "$6" "$kind") >"$dir.build" 2>&1; then
        fail "$name" "build failed: $(cat "$dir.build")"
        return
    fi
    timeout 60 env LD_PRELOAD="$lib" "$dir/debug/symdiff" >/dev/null 2>"$dir/debug.txt"
    timeout 60 env LD_PRELOAD="$lib" "$dir/stripped/symdiff" >/dev/null 2>"$dir/stripped.txt"
    timeout 60 env LD_PRELOAD="$profiler" "$dir/debug/symdiff" >/dev/null 2>"$dir/profile.txt"
    local gcore=()
    [ "$kind" != in ] && gcore=(-ex "gcore $dir/core")
    timeout 120 "$build/memtrace" gdb -batch -ex 'set breakpoint pending on' \
        -ex 'break print_trace' -ex run -ex 'memtrace ptr' -ex continue -ex 'memtrace ptr' \
        -ex continue -ex 'memtrace ptr' "${gcore[@]}" -ex continue -- "$dir/debug/symdiff" \
        >"$dir/gdb.txt" 2>/dev/null </dev/null
    if [ "$kind" != in ]; then
        timeout 120 "$build/memtrace" core -batch -ex 'memtrace ptr' -- "$dir/debug/symdiff" \
            "$dir/core" >"$dir/core.txt" 2>/dev/null </dev/null
    fi
    local verdict
    verdict=$(compare "$dir" 2>&1)
    case $verdict in
    "ok "*) pass "$name: ${verdict#ok } frames as addr2line, the profiler's and gdb's as print_trace's" ;;
    *) fail "$name" "$verdict" ;;
    esac
}

for cc in gcc clang; do
    for dwarf in 4 5; do
        for opt in O0 O2; do
            for pie in pie nopie; do
                run_build "$cc-dwarf$dwarf-$opt-$pie" "$cc" c "$dwarf" "$opt" "$pie"
            done
        done
    done
done
for cxx in g++ clang++; do
    for opt in O0 O2; do
        run_build "$cxx-dwarf5-$opt-pie" "$cxx" cxx 5 "$opt" pie
    done
done
for cc in gcc clang; do
    run_build "$cc-dwarf5-O3-pie" "$cc" c 5 O3 pie
    run_build "$cc-dwarf5-O2-flto-pie" "$cc" c 5 O2-flto pie
done
run_build "gcc+clang-lib-dwarf5-O2-pie" gcc mixed 5 O2 pie
run_build "clang+gcc-lib-dwarf5-O2-pie" clang mixed 5 O2 pie

# Where the debug information is: split DWARF (.dwo, .dwp), separate debug
# files, compressed sections.
run_build gcc-dwarf5-O2-pie-dwo gcc c 5 O2 pie dwo
run_build gcc-dwarf4-O2-nopie-dwo gcc c 4 O2 nopie dwo
run_build clang-dwarf5-O2-pie-dwo clang c 5 O2 pie dwo
run_build gcc-dwarf5-O2-pie-gz gcc c 5 O2 pie gz
run_build gcc-dwarf5-O2-pie-zdebug gcc c 5 O2 pie zdebug
run_build gcc-dwarf5-O2-pie-link gcc c 5 O2 pie link
run_build clang-dwarf5-O2-pie-link-dir clang c 5 O2 pie link-dir
run_build gcc-dwarf5-O2-pie-link-usr gcc c 5 O2 pie link-usr
run_build clang-dwarf5-O2-pie-buildid clang c 5 O2 pie buildid
run_build gcc-dwarf5-O2-pie-buildid-dwz gcc c 5 O2 pie buildid-dwz
run_build gcc-dwarf5-O2-pie-debian gcc c 5 O2 pie debian
run_build clang-dwarf4-O2-pie-debian clang c 4 O2 pie debian # dwz 0.15: no DWARF 5 .debug_addr
# ---- Rust (a block of its own): tests/progs/symdiff_rs.rs built by rustc
# with debug information, at opt-level 0 (a debug build) and 2 (a release
# build with debuginfo), linked with the C library (gcc, -O2); function
# (demangled), file, line and the inlined chain, which here runs through
# the standard library's generic code inlined into the program, must be
# addr2line's. From here on `build` makes these.
rust_build() { # DIR rustc rust DWARF OPT PIE
    local dir=$1 opt=${5#O}
    cd "$root" || return
    mkdir -p "$dir/debug" "$dir/stripped"
    gcc -g -O2 -fPIC -shared -Wl,-soname,libsymdiff.so -o "$dir/debug/libsymdiff.so" \
        tests/progs/symdiff_lib.c &&
    rustc -g -C opt-level="$opt" -L "$dir/debug" -l symdiff -C 'link-arg=-Wl,-rpath,$ORIGIN' \
        -o "$dir/debug/symdiff" tests/progs/symdiff_rs.rs &&
    objcopy --strip-debug "$dir/debug/libsymdiff.so" "$dir/stripped/libsymdiff.so" &&
    objcopy --strip-debug "$dir/debug/symdiff" "$dir/stripped/symdiff"
}
if command -v rustc >/dev/null; then
    build() { rust_build "$@"; }
    run_build "rustc-O0-debug" rustc rust 4 O0 pie
    run_build "rustc-O2-debuginfo" rustc rust 4 O2 pie
else
    fail "rust rows" "rustc not found (make deps installs it)"
fi

finish symbolize_diff
