#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The launcher in cli/ answers as the one in gdb/ did, now that
# memtrace-symbolize reads the ELF files for it:
#  - memtrace gdb and memtrace run on ELF files of the other class, the
#    other machine, the other byte order, on cores (made here, and one of
#    gcore's), cut short at three places, with no program headers, and on
#    files that are no ELF: each refused with the line and status of
#    before, or let through to gdb (GDB names a stub that says it ran);
#    the expected lines are those of the launcher in gdb/memtrace.sh,
#    whose shell parsed the headers with od;
#  - memtrace-symbolize --elf-info's lines on them, and its one memtrace:
#    line and status 1 on a file that is no ELF;
#  - --core-check says what the gdb helper's Python said of a core without
#    libmemtrace, another program's and one cut short;
#  - --wait-syscalls names on x86-64 the numbers the launcher had written
#    in (read poll select pause nanosleep ... accept4);
#  - without memtrace-symbolize beside it, run refuses with one line;
#  - no file under cli/ holds a Python program in a heredoc, system call
#    numbers, or od.
# Prints "house_launcher: N passed, N failed" last.
set -u
. "$(dirname "$0")/lib.sh"
memtrace=$build/memtrace
symbolize=$build/memtrace-symbolize
unset MEMTRACE_LIB
cd "$work" || exit 1

# ------------------------------------------------------------ the files
# elf FILE CLASS DATA MACHINE TYPE PTYPES...: an ELF file of that class
# (1, 2), byte order (1 LSB, 2 MSB), e_machine and e_type, whose program
# headers have the types PTYPES (3: PT_INTERP, pointing at its path).
python3 - <<'EOF'
import os, struct
def elf(path, cls, data, machine, etype, ptypes):
    e = "<" if data == 1 else ">"
    ehsz, phsz = (64, 56) if cls == 2 else (52, 32)
    interp = b"/lib/ld-linux.so.2\0"
    at = ehsz + phsz * len(ptypes)
    tab = b""
    for t in ptypes:
        off, n = (at, len(interp)) if t == 3 else (0, 0)
        if cls == 2:
            tab += struct.pack(e + "IIQQQQQQ", t, 4, off, 0, 0, n, n, 1)
        else:
            tab += struct.pack(e + "IIIIIIII", t, off, 0, 0, n, n, 4, 1)
    ident = b"\x7fELF" + bytes([cls, data, 1]) + b"\0" * 9
    fmt = "HHIQQQIHHHHHH" if cls == 2 else "HHIIIIIHHHHHH"
    hdr = ident + struct.pack(e + fmt, etype, machine, 1, 0, ehsz, 0, 0, ehsz, phsz,
                              len(ptypes), 64 if cls == 2 else 40, 0, 0)
    with open(path, "wb") as f:
        f.write(hdr + tab + interp)
    os.chmod(path, 0o755)
elf("elf32_interp", 1, 1, 3, 2, (6, 3, 1))       # i386, dynamic
elf("elf32_static", 1, 1, 3, 2, (1, 1))
elf("arm64_interp", 2, 1, 183, 2, (6, 3, 1))     # aarch64
elf("arm64_static", 2, 1, 183, 2, (1, 1))
elf("be64_interp", 2, 2, 21, 2, (6, 3, 1))       # ppc64, big-endian
elf("be64_static", 2, 2, 21, 2, (1,))
elf("core64", 2, 1, 62, 4, (4, 1, 1))            # ET_CORE: notes, loads
elf("nophdrs", 2, 1, 62, 2, ())
elf("class3", 2, 1, 62, 2, (3,))
b = bytearray(open("class3", "rb").read())
b[4] = 3                                         # no ELF class
open("class3", "wb").write(b)
EOF
printf 'int main(void) { return 0; }\n' >dyn.c
${CC:-gcc} -o dyn dyn.c
head -c 40 dyn >trunc_head      # inside the ELF header
head -c 64 dyn >trunc_phdrs     # the header whole, no program header
head -c 200 dyn >trunc_mid      # PT_PHDR and PT_INTERP whole, not its path
printf 'echo plain ran\n' >plain
head -c 300 /dev/urandom >random
: >empty
chmod 755 trunc_head trunc_phdrs trunc_mid plain random empty
# A core of gcore's, of a sleeping sleep.
sleep 60 &
sleeper=$!
timeout 60 gcore -o "$work/gcore" "$sleeper" >/dev/null 2>&1
kill "$sleeper" 2>/dev/null
wait "$sleeper" 2>/dev/null
mv "$work"/gcore.* realcore 2>/dev/null && chmod 755 realcore
printf '#!/bin/sh\necho "gdb ran"\n' >fakegdb
chmod 755 fakegdb

# ------------------------------------------------------------ launcher
static() { echo "memtrace: ./$1 is statically linked: nothing can be preloaded into it, so memtrace cannot trace it"; }
# answer NAME STATUS LINE: memtrace gdb on ./NAME prints LINE on stderr and
# exits STATUS; a file let through reaches gdb (the stub).
answer() {
    local out rc=0
    out=$(GDB=$work/fakegdb timeout 60 "$memtrace" gdb -batch -- "./$1" 2>&1) || rc=$?
    check "memtrace gdb ./$1: the line of before" "$3" "$out"
    check "memtrace gdb ./$1: the status of before" "$2" "$rc"
    if [ "$2" = 1 ]; then
        rc=0
        out=$(timeout 60 "$memtrace" run "./$1" 2>&1) || rc=$?
        check "memtrace run ./$1: the line and status of before" "$3 [$2]" "$out [$rc]"
    fi
}
for f in elf32_static arm64_static core64 nophdrs trunc_phdrs; do
    answer "$f" 1 "$(static "$f")"
done
if [ -f realcore ]; then
    answer realcore 1 "$(static realcore)"
else
    fail "gcore made a core of sleep" "no core in $work"
fi
for f in elf32_interp arm64_interp be64_interp be64_static class3 dyn trunc_head trunc_mid \
    plain random empty; do
    answer "$f" 0 "gdb ran"
done
RC=0
timeout 60 "$memtrace" run ./plain >plain.out 2>&1 || RC=$?
status "memtrace run ./plain, no ELF: run by the shell" 0
has "memtrace run ./plain: its output" plain.out "plain ran"

# ------------------------------------------------------------ --elf-info
info() { "$symbolize" --elf-info "$1" 2>&1 | paste -sd' '; echo "[${PIPESTATUS[0]}]"; }
check "--elf-info, 32-bit i386 with PT_INTERP" \
    "class 32 byte-order native machine 3 type exec program-headers whole pt-interp yes interp /lib/ld-linux.so.2
[0]" "$(info elf32_interp)"
check "--elf-info, big-endian ppc64 without" \
    "class 64 byte-order foreign machine 21 type exec program-headers whole pt-interp no
[0]" "$(info be64_static)"
check "--elf-info, a core" \
    "class 64 byte-order native machine 62 type core program-headers whole pt-interp no
[0]" "$(info core64)"
check "--elf-info, cut after PT_INTERP's entry" \
    "class 64 byte-order native machine 62 type dyn program-headers cut-short pt-interp yes
[0]" "$(info trunc_mid)"
check "--elf-info, cut in the ELF header: one line, status 1" \
    "memtrace: trunc_head: not an ELF file (its header is cut short or damaged)
[1]" "$(info trunc_head)"
check "--elf-info, no ELF: one line, status 1" "memtrace: plain: not an ELF file
[1]" "$(info plain)"
check "--elf-info, no file: one line, status 1" \
    "memtrace: none: No such file or directory
[1]" "$(info none)"

# ------------------------------------------------------------ --core-check
# The gdb helper's core checks, asked of memtrace-symbolize: on gcore's
# core of sleep, the sentences the helper's Python said (leak_robust checks
# them through memtrace core).
build_id() { readelf -n "$1" | awk '/Build ID:/ { print $3; exit }'; }
if [ -f realcore ]; then
    sleep_exe=$(realpath "$(command -v sleep)")
    check "--core-check: a core without libmemtrace" \
        "the core file realcore: libmemtrace is not among the libraries of the core file realcore: $sleep_exe did not run under memtrace when it dumped (\`memtrace run\` or \`memtrace gdb\` start it so)" \
        "the core file realcore: $("$symbolize" --core-check realcore "$sleep_exe")"
    true_exe=$(realpath /bin/true)
    check "--core-check: another program's core" \
        "the core file realcore was not dumped by $true_exe: its program was $sleep_exe, build-id $(build_id "$sleep_exe"), not $(build_id "$true_exe")" \
        "$("$symbolize" --core-check realcore "$true_exe")"
    need=0
    while read -r type off _ _ filesz _; do
        case $type in [A-Z]*) case $off in 0x*)
            [ $((off + filesz)) -gt "$need" ] && need=$((off + filesz)) ;; esac ;; esac
    done < <(readelf -lW realcore)
    size=$(stat -c %s realcore)
    head -c $((size / 2)) realcore >short.core
    check "--core-check: a core cut short" \
        "the core file short.core is cut short: $((size / 2)) bytes, where its segments need $need (a core size limit or a full disk when it was dumped?)" \
        "$("$symbolize" --core-check short.core "$sleep_exe")"
fi
check "--core-check: no ELF, no file: nothing, status 0" "[0] [0]" \
    "$("$symbolize" --core-check plain)[$?] $("$symbolize" --core-check none)[$?]"

# ------------------------------------------------------------ --wait-syscalls
if [ "$(uname -m)" = x86_64 ]; then
    check "--wait-syscalls: the numbers the launcher had written in" \
        "0 7 23 34 35 43 45 47 61 128 130 202 230 232 247 270 271 281 288" \
        "$("$symbolize" --wait-syscalls | tr ' ' '\n' | sort -n | paste -sd' ')"
else
    echo "SKIP --wait-syscalls: the numbers of before are x86-64's"
fi

# ------------------------------------------------------------ alone
mkdir alone
cp "$memtrace" "$build/libmemtrace.so" alone/
RC=0
timeout 60 alone/memtrace run ./dyn >alone.out 2>&1 || RC=$?
status "memtrace run without memtrace-symbolize beside it" 1
check "memtrace run without memtrace-symbolize: one line" \
    "memtrace: cannot find memtrace-symbolize (looked for $work/alone/../libexec/memtrace/memtrace-symbolize)" \
    "$(cat alone.out)"

# ------------------------------------------------------------ cli/'s text
# A heredoc's body that reads as Python (import, def, a gdb python block),
# a set or list of three or more bare integers, or od.
py_heredocs=$(awk '
    FNR == 1 { body = 0 }
    body && $0 == tag { body = 0; next }
    body && /^[ \t]*(import |from [a-z_.]+ import |def |class |python$)/ { print FILENAME ":" FNR ": " $0 }
    !body && match($0, /<<-?[ \t]*['\''"]?[A-Za-z_]+/) {
        tag = substr($0, RSTART, RLENGTH); sub(/^<<-?[ \t]*['\''"]?/, "", tag); body = 1 }
    /^[ \t]*echo python/ { print FILENAME ":" FNR ": " $0 }' "$root"/cli/*)
check "cli/: no Python program in a heredoc" "" "$py_heredocs"
numbers=$(grep -nE '[{[][[:space:]]*[0-9]+[[:space:]]*,[[:space:]]*[0-9]+[[:space:]]*,[[:space:]]*[0-9]+' \
    "$root"/cli/* | grep -v '^[^:]*:[0-9]*:[[:space:]]*#')
check "cli/: no system call numbers (no set of three numbers)" "" "$numbers"
check "cli/: no orig_rax compared with a number" "" \
    "$(grep -nE 'orig_rax[^#]*(==|in)[[:space:]]*[({[]?[0-9]' "$root"/cli/*)"
check "cli/: no od" "" "$(grep -nE '(^|[|$(;&[:space:]])od[[:space:]]+-' "$root"/cli/*)"

finish house_launcher
