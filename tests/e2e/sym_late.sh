#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Recordings symbolized afterwards (tests/progs/sym_late_prog.c):
#  - a recording cut short by kill -9 holds no symbols (the end that writes
#    them never ran): `memtrace export --json`, `--heaptrack` (read back by
#    heaptrack_print) and `memtrace view` name its frames from the modules'
#    files, as addr2line -f -i -C names the same addresses;
#  - the program rebuilt (another build ID) or gone since: one line for the
#    module, its frames module+offset, no wrong name;
#  - heaptrack export of a stripped program: frames without a function are
#    named module+offset, so heaptrack_print keeps thr's 1000-byte site
#    apart from mk's 500 bytes (it merges frames by function and module).
# Prints "sym_late: N passed, N failed" last.
set -u
. "$(dirname "$0")/lib.sh"
memtrace=$build/memtrace
export_=$build/memtrace-export
tracer=$build/libmemtrace.so
src=tests/progs/sym_late_prog.c
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_RECORD MEMTRACE_SAMPLE DEBUGINFOD_URLS
cd "$work" || exit 1
mk_line=$(site_line "$src" mk)
thr_line=$(site_line "$src" thr)

# killed NAME PROG: records PROG (argument "wait") into NAME.rec and kills
# it with SIGKILL once it said ready and the writer had a second to write;
# its load address in NAME.base.
killed() {
    MEMTRACE_RECORD=$work/$1.rec LD_PRELOAD=$tracer "$2" wait >"$1.out" 2>"$1.err" &
    local pid=$! i
    for i in $(seq 300); do grep -q '^ready' "$1.out" 2>/dev/null && break; sleep 0.1; done
    sleep 1.5
    { kill -KILL $pid; wait $pid; } 2>/dev/null
    sed -n 's/^base 0x//p' "$1.out" >"$1.base"
}

# site_frames JSON BYTES: "function|file's name|line" of each frame of the
# site that allocated BYTES in all, then its addresses, space-separated.
site_frames() {
    python3 - "$1" "$2" <<'EOF'
import json, os, sys
d = json.load(open(sys.argv[1]))
for s in d["sites"]:
    if s["allocated_bytes"] == int(sys.argv[2]):
        print(" ".join("%s|%s|%s" % (f["function"], os.path.basename(f["file"] or "None"), f["line"])
                       for f in s["frames"][:2]))
        print(" ".join(f["address"] for f in s["frames"][:2]))
EOF
}

# oracle PROG BASE ADDRS...: addr2line -f -i -C's "function|file|line" of
# each return address (at ADDR - 1, as an offset into PROG).
oracle() {
    local prog=$1 base=$2 a out=()
    shift 2
    for a in "$@"; do
        out+=("$(addr2line -f -i -C -e "$prog" "$(printf '0x%x' $((a - 1 - 0x$base)))" |
                 head -2 | paste -sd' ' | sed 's/ \(.*\):\([0-9]*\)\( (discriminator [0-9]*)\)\{0,1\}$/|\1|\2/;
                                               s/|.*\//|/')")
    done
    echo "${out[*]}"
}

# ---- a recording cut short
cp "$tests/sym_late_prog" prog
killed cut ./prog
"$export_" --json cut.rec -o cut.json 2>cut.export
check "cut: export's status and line" \
    "0 memtrace export: cut.rec is truncated (the file ends before the recording's end): the run up to" \
    "$? $(sed 's/ [0-9.]* s$//' cut.export)"
mapfile -t thr < <(site_frames cut.json 1000)
mapfile -t mkf < <(site_frames cut.json 500)
check "cut, JSON: thr's site named" "thr|sym_late_prog.c|$thr_line" "${thr[0]%% *}"
check "cut, JSON: mk's site named, called from main" "mk|sym_late_prog.c|$mk_line main" \
    "$(echo "${mkf[0]}" | sed 's/ \([a-z]*\)|.*/ \1/')"
# shellcheck disable=SC2086
check "cut, JSON: mk's frames as addr2line -f -i -C names them" "$(oracle prog "$(cat cut.base)" ${mkf[1]:-0})" \
    "${mkf[0]}"
# shellcheck disable=SC2086
check "cut, JSON: thr's frame as addr2line -f -i -C names it" \
    "$(oracle prog "$(cat cut.base)" ${thr[1]%% *})" "${thr[0]%% *}"

# heaptrack's file of it, read by heaptrack_print: "CALLS BYTES FUNCTION at FILE:LINE"
# of each site in its MOST CALLS section.
ht_sites() {
    heaptrack_print --print-peaks=0 --print-temporary=0 "$1" 2>/dev/null | awk '
        /^[0-9]+ calls to allocation functions with / { n = $1; b = $7; getline f; getline at
            sub(/^  at /, "", at); if (at ~ /^  in /) at = "-"
            print n, b, f, at }' | sort
}
"$export_" --heaptrack cut.rec -o cut.heaptrack.gz 2>/dev/null
ht_sites cut.heaptrack.gz >cut.ht
has "cut, heaptrack_print: thr's 1000 bytes at its line" cut.ht "1 1000B thr $src:$thr_line"
has "cut, heaptrack_print: mk's 500 bytes at its line" cut.ht "5 500B mk $src:$mk_line"

"$memtrace" view cut.rec -o cut.html >/dev/null 2>cut.view
check "cut, view: the page's frames named" "thr:$thr_line mk:$mk_line" "$(python3 - cut.html <<'EOF'
import json, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
d = json.loads(re.search(r'id="memtrace-data">(.*?)</script>', page, re.S).group(1))
want = {1000: None, 500: None}
for s in d["sites"]:
    if s["allocated_bytes"] in want:
        f = d["frames"][s["stack"][0]]
        want[s["allocated_bytes"]] = "%s:%s" % (f[0], f[2])
print(want[1000], want[500])
EOF
)"

# ---- rebuilt since, or gone: one line, module+offset, no name
cp "$tests/sym_late_prog" prog2
killed rebuilt ./prog2
gcc -O0 -g -pthread -DREBUILT -o prog2 "$root/$src"
"$export_" --json rebuilt.rec -o rebuilt.json 2>rebuilt.export
check "rebuilt: one line for the module" \
    "memtrace export: $work/prog2: its build ID is not the recorded one (rebuilt or replaced since); its frames in rebuilt.rec are module+offset" \
    "$(grep -v 'is truncated' rebuilt.export)"
mapfile -t rb < <(site_frames rebuilt.json 1000)
check "rebuilt: thr's frame unnamed" "None|None|None" "${rb[0]%% *}"
cp "$tests/sym_late_prog" prog3
killed gone ./prog3
rm prog3
"$export_" --heaptrack gone.rec -o gone.heaptrack.gz 2>gone.export
check "gone: one line for the module, status 0" \
    "0 1" "$? $(grep -c "^memtrace export: $work/prog3: .*; its frames in gone.rec are module+offset\$" gone.export)"

# ---- a stripped program's sites apart in heaptrack_print
strip -o stripped "$tests/sym_late_prog"
MEMTRACE_RECORD=$work/stripped.rec LD_PRELOAD=$tracer ./stripped >stripped.out 2>/dev/null
"$export_" --heaptrack stripped.rec -o stripped.heaptrack.gz 2>/dev/null
ht_sites stripped.heaptrack.gz >stripped.ht
thr_off=$(sed -n 's/^1 1000B stripped+\(0x[0-9a-f]*\) -$/\1/p' stripped.ht)
mk_off=$(sed -n 's/^5 500B stripped+\(0x[0-9a-f]*\) -$/\1/p' stripped.ht)
check "stripped, heaptrack_print: thr's 1000 bytes a site of their own, at thr's call (addr2line)" \
    "thr $root/$src:$thr_line" \
    "$(addr2line -f -e "$tests/sym_late_prog" "${thr_off:-0}" | paste -sd' ' | sed 's/ (discriminator.*//')"
check "stripped, heaptrack_print: mk's 500 bytes a site of their own, at mk's call (addr2line)" \
    "mk $root/$src:$mk_line" \
    "$(addr2line -f -e "$tests/sym_late_prog" "${mk_off:-0}" | paste -sd' ' | sed 's/ (discriminator.*//')"

finish sym_late
