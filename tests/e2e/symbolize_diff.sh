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
# and 2 that link one compiler's object into the other's program; and
# tests/progs/symdiff_rs.rs built by rustc at opt-level 0 and 2 with the
# C library (the Rust block at the end).
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
# root), where addr2line joins the two: a relative name is compared joined
# with the root.
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
    local dir=$1 cc=$2 lang=$3 dwarf=$4 opt=$5 pie=$6
    local flags=(-g "-gdwarf-$dwarf" "-${opt%%-*}" -Wall -Wextra) pieflags=(-fPIE -pie)
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
    objcopy --strip-debug "$dir/debug/symdiff" "$dir/stripped/symdiff"
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

dbg, strip = blocks(d + "/debug.txt"), blocks(d + "/stripped.txt")
errors, compared = [], 0
if len(dbg) != 3 or len(strip) != 3:
    errors.append("expected 3 answers in each run, got %d and %d" % (len(dbg), len(strip)))
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
        path = d + "/debug/" + mod
        want = addr2line(path, off)
        llvm = symbolizer(path, off)
        cols = [c for _, c in llvm]
        # binutils 2.40 names the file of a line row in gcc's LTO unit by
        # the unit's name, "<artificial>"; gdb (info line) and
        # llvm-symbolizer name the source file, as memtrace does.
        want = [(w[0], llvm[i][0] if w[1] and w[1].endswith("/<artificial>") and i < len(llvm)
                 else w[1], w[2]) for i, w in enumerate(want)]
        got = [(r[0], r[1] if not r[1] or r[1].startswith("/") else os.path.join(root, r[1]), r[2])
               for r in rows]
        # A relative name of a CU built elsewhere (Rust's precompiled
        # standard library, DW_AT_comp_dir /rustc/HASH) is its own
        # directory's: taken as addr2line's when that ends in it.
        got = [(g[0], w[1] if g[1] and w[1] and r[1] and not r[1].startswith("/") and
                w[1].endswith("/" + r[1]) else g[1], g[2])
               for g, w, r in zip(got, want, rows)] + got[len(want):]
        # GCC gives C++ functions with internal linkage no linkage name:
        # addr2line names an inlined call's caller "run" from DW_AT_name,
        # where memtrace names it from its symbol, demangled whole, "run()"
        # (sym_function_name); the one tolerated difference.
        got = [(w[0] if w[0] and g[0] and "(" not in w[0] and g[0].startswith(w[0] + "(")
                else g[0],) + g[1:] for g, w in zip(got, want)] + got[len(want):]
        where = "block %d frame #%d (%s+0x%x)" % (b, k, mod, off)
        if got != want:
            errors.append("%s: memtrace %s, addr2line %s" % (where, got, want))
            continue
        for i, r in enumerate(rows):
            if r[3] and i < len(cols) and cols[i] and r[3] != cols[i]:
                errors.append("%s row %d: column %d, llvm-symbolizer %d" % (where, i, r[3], cols[i]))
    if mine < 2:
        errors.append("block %d: %d frames in the build's modules" % (b, mine))
# The profiler's exit report names the same stacks with the same rows (the
# C++ runtime's own allocation at start-up left out).
def program_stacks(stacks):
    return sorted(st for st in stacks
                  if any(r[1] and "tests/progs/symdiff_" in r[1] for f in st for r in f))
prof = program_stacks(blocks(d + "/profile.txt", r"^memtrace: at the peak \[\d+\] "))
if len(prof) != 3 or prof != program_stacks(dbg):
    errors.append("the profiler's sites %s, print_trace's %s" % (sorted(prof), sorted(dbg)))
# gdb's memtrace command (memtrace-symbolize) answers as print_trace does.
gdb = blocks(d + "/gdb.txt")
if gdb != dbg:
    errors.append("gdb's memtrace command %s, print_trace %s" % (gdb, dbg))
for e in errors:
    print(e)
if not errors:
    print("ok", compared)
EOF
}

run_build() { # NAME CC LANG DWARF OPT PIE
    local name=$1 dir=$work/$1
    if ! (build "$dir" "$2" "$3" "$4" "$5" "$6") >"$dir.build" 2>&1; then
        fail "$name" "build failed: $(cat "$dir.build")"
        return
    fi
    timeout 60 env LD_PRELOAD="$lib" "$dir/debug/symdiff" >/dev/null 2>"$dir/debug.txt"
    timeout 60 env LD_PRELOAD="$lib" "$dir/stripped/symdiff" >/dev/null 2>"$dir/stripped.txt"
    timeout 60 env LD_PRELOAD="$profiler" "$dir/debug/symdiff" >/dev/null 2>"$dir/profile.txt"
    timeout 120 "$build/memtrace" gdb -batch -ex 'set breakpoint pending on' \
        -ex 'break print_trace' -ex run -ex 'memtrace ptr' -ex continue -ex 'memtrace ptr' \
        -ex continue -ex 'memtrace ptr' -ex continue -- "$dir/debug/symdiff" \
        >"$dir/gdb.txt" 2>/dev/null </dev/null
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
