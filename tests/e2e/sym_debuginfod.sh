#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Debug information from a debuginfod server (DEBUGINFOD_URLS), fetched out
# of the traced process only (design notes, trap 13). A real debuginfod on
# 127.0.0.1 serves the debug file of tests/progs/sym_late_prog.c, whose
# binary here is stripped of its debug sections (its symbol table kept, no
# debug link):
#  - the gdb command on the live process, `memtrace core` on its gcore'd
#    core and `memtrace export` of a recording cut short name thr's and
#    mk's sites at their file:line, as addr2line names them on the
#    unstripped build; without DEBUGINFOD_URLS the same frames are the
#    symbol table's names without a line;
#  - the traced program itself never loads libdebuginfod or libcurl, and
#    its own exit report stays local;
#  - a server that has no file for the module (404), is down (connection
#    refused) or accepts and never answers (DEBUGINFOD_TIMEOUT=2): the
#    frames fall back to the symbol table, the answer comes, status 0, and
#    one note for the module says why (libdebuginfod's error), besides the
#    export's own line.
# Prints "sym_debuginfod: N passed, N failed" last.
set -u
. "$(dirname "$0")/lib.sh"
memtrace=$build/memtrace
export_=$build/memtrace-export
tracer=$build/libmemtrace.so
profiler=$build/libmemtrace-profiler.so
src=tests/progs/sym_late_prog.c
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_RECORD MEMTRACE_SAMPLE DEBUGINFOD_URLS \
    DEBUGINFOD_TIMEOUT DEBUGINFOD_PROGRESS DEBUGINFOD_VERBOSE
cd "$work" || exit 1
mk_line=$(site_line "$src" mk)
thr_line=$(site_line "$src" thr)
if ! command -v debuginfod >/dev/null; then
    fail "debuginfod" "not installed (make deps installs it)"
    finish sym_debuginfod
    exit
fi

pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

mkdir srv run
cp "$tests/sym_late_prog" full
objcopy --only-keep-debug full srv/prog.debug
strip --strip-debug -o srv/prog full
cp srv/prog run/prog
id=$(readelf -n run/prog | sed -n 's/.*Build ID: //p')

# The server: its own database, the directory scanned once at start.
port=$(free_port)
debuginfod -p "$port" -d "$work/db.sqlite" -F "$work/srv" -t 0 -g 0 >debuginfod.log 2>&1 &
pids+=($!)
url=http://127.0.0.1:$port
# http_status URL: the status of a GET of URL, 0 when there is no answer.
http_status() {
    python3 -c 'import sys, urllib.request, urllib.error
try: print(urllib.request.urlopen(sys.argv[1], timeout=5).status)
except urllib.error.HTTPError as e: print(e.code)
except Exception: print(0)' "$1"
}
for i in $(seq 300); do
    [ "$(http_status "$url/buildid/$id/debuginfo")" = 200 ] && break
    sleep 0.2
done
check "the server serves the debug file by build ID" 200 "$(http_status "$url/buildid/$id/debuginfo")"

# A fresh client cache for each run: libdebuginfod caches misses too.
fresh() { rm -rf "$work/cache"; export DEBUGINFOD_CACHE_PATH=$work/cache; }

# The stripped program killed while recording: its frames have no symbols.
MEMTRACE_RECORD=$work/cut.rec LD_PRELOAD=$tracer run/prog wait >cut.out 2>cut.err &
pid=$!
for i in $(seq 300); do grep -q '^ready' cut.out 2>/dev/null && break; sleep 0.1; done
sleep 1.5
{ kill -KILL $pid; wait $pid; } 2>/dev/null
base=$(sed -n 's/^base 0x//p' cut.out)

# site JSON BYTES: "function|file's name|line" of the site's first two frames.
site() {
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
# oracle ADDRS...: addr2line -f -i -C on the unstripped build.
oracle() {
    local a out=()
    for a in "$@"; do
        out+=("$(addr2line -f -i -C -e full "$(printf '0x%x' $((a - 1 - 0x$base)))" | head -2 | paste -sd' ' |
                 sed 's/ \(.*\):\([0-9]*\)\( (discriminator [0-9]*)\)\{0,1\}$/|\1|\2/; s/|.*\//|/')")
    done
    echo "${out[*]}"
}
truncated_line="memtrace export: cut.rec is truncated (the file ends before the recording's end): the run up to"

fresh
DEBUGINFOD_URLS=$url timeout 120 "$export_" --json cut.rec -o served.json 2>served.err
check "export, served: status, and only the truncated line" "0 $truncated_line" \
    "$? $(sed 's/ [0-9.]* s$//' served.err)"
mapfile -t thr < <(site served.json 1000)
mapfile -t mkf < <(site served.json 500)
check "export, served: thr at its line" "thr|sym_late_prog.c|$thr_line" "${thr[0]%% *}"
# shellcheck disable=SC2086
check "export, served: mk's frames as addr2line names them" "$(oracle ${mkf[1]:-0})" "${mkf[0]:-}"
check "export, served: mk at its line" "mk|sym_late_prog.c|$mk_line" "${mkf[0]%% *}"

fresh
timeout 120 "$export_" --json cut.rec -o local.json 2>/dev/null
mapfile -t loc < <(site local.json 1000)
check "export, no DEBUGINFOD_URLS: the symbol table's name, no line" "thr|None|None" "${loc[0]%% *}"

# The gdb command on the live program, and memtrace core on its core.
fresh
DEBUGINFOD_URLS=$url timeout 120 "$memtrace" gdb -batch -ex 'break pause' -ex 'run wait' \
    -ex 'memtrace *(void **)((char *)&g_keep + 56)' -ex "gcore $work/prog.core" -ex kill -- run/prog \
    >gdb.out 2>&1
check "gdb command, served: thr at its line" "  #0 thr at $src:$thr_line:" \
    "$(grep -m1 '^  #0 ' gdb.out | sed 's/:[0-9]*$/:/')"
grep -q '^  #0 ' gdb.out || sed 's/^/NOTE gdb.out: /' gdb.out | tail -25
fresh
DEBUGINFOD_URLS=$url timeout 120 "$memtrace" core -batch -ex 'memtrace *(void **)((char *)&g_keep + 56)' \
    -- run/prog prog.core >core.out 2>&1
check "memtrace core, served: thr at its line" "  #0 thr at $src:$thr_line:" \
    "$(grep -m1 '^  #0 ' core.out | sed 's/:[0-9]*$/:/')"
fresh
timeout 120 "$memtrace" core -batch -ex 'memtrace *(void **)((char *)&g_keep + 56)' \
    -- run/prog prog.core >core_local.out 2>&1
check "memtrace core, no DEBUGINFOD_URLS: module+offset" "  #0 thr in prog+0x" \
    "$(grep -m1 '^  #0 ' core_local.out | sed 's/0x[0-9a-f]*$/0x/')"

# The traced program: no libdebuginfod, no libcurl, no request; its exit
# report local (thr named from the symbol table, no line).
fresh
before=$(grep -c ' GET ' debuginfod.log)
DEBUGINFOD_URLS=$url LD_DEBUG=files LD_PRELOAD=$profiler MEMTRACE_INTERVAL_MS=0 run/prog >/dev/null 2>inproc.err
check "in the program: status, no libdebuginfod or libcurl loaded" "0 0" \
    "$? $(grep -c 'file=.*\(libdebuginfod\|libcurl\)' inproc.err)"
check "in the program: no request to the server" "$before" "$(grep -c ' GET ' debuginfod.log)"
check "in the program: its exit report local" "  #0 thr in prog+0x" \
    "$(grep -m1 '^  #0 thr ' inproc.err | sed 's/0x[0-9a-f]*$/0x/')"

# A server that has no file for the module (another build: 404).
mkdir other
gcc -O0 -g -pthread -Iinclude -o other/full "$root/$src" -ldl -Wl,--build-id=0x0123456789abcdef0123456789abcdef01234567 &&
strip --strip-debug -o other/prog other/full
MEMTRACE_RECORD=$work/other.rec LD_PRELOAD=$tracer other/prog wait >other.out 2>other.err &
pid=$!
for i in $(seq 300); do grep -q '^ready' other.out 2>/dev/null && break; sleep 0.1; done
sleep 1.5
{ kill -KILL $pid; wait $pid; } 2>/dev/null
fresh
DEBUGINFOD_URLS=$url timeout 120 "$export_" --json other.rec -o other.json 2>other.export
check "server without the file: export's status, one note for the module, the truncated line" \
    "0|memtrace: no debug info for prog from debuginfod (No such file or directory)|${truncated_line/cut.rec/other.rec}" \
    "$?|$(sed 's/ [0-9.]* s$//' other.export | paste -sd'|')"
mapfile -t ot < <(site other.json 1000)
check "server without the file: the symbol table's name, no line" "thr|None|None" "${ot[0]%% *}"

# A server that is down: refused at once.
fresh
down=$(free_port)
DEBUGINFOD_URLS=http://127.0.0.1:$down timeout 120 "$export_" --json cut.rec -o down.json 2>down.err
check "server down: export's status, one note for the module, the truncated line" \
    "0|memtrace: no debug info for prog from debuginfod (Connection refused)|$truncated_line" \
    "$?|$(sed 's/ [0-9.]* s$//' down.err | paste -sd'|')"
mapfile -t dn < <(site down.json 1000)
check "server down: the symbol table's name, no line" "thr|None|None" "${dn[0]%% *}"

# A server that accepts and never answers: DEBUGINFOD_TIMEOUT bounds it.
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
print(s.getsockname()[1], flush=True)
held = []
while True:
    held.append(s.accept()[0])' >slow.port &
pids+=($!)
for i in $(seq 100); do [ -s slow.port ] && break; sleep 0.1; done
slow=http://127.0.0.1:$(cat slow.port)
fresh
start=$(date +%s)
DEBUGINFOD_URLS=$slow DEBUGINFOD_TIMEOUT=2 timeout 120 "$export_" --json cut.rec -o slow.json 2>slow.err
rc=$?
took=$(($(date +%s) - start))
check "slow server: export's status, one note for the module, the truncated line" \
    "0|memtrace: no debug info for prog from debuginfod (Timer expired)|$truncated_line" \
    "$rc|$(sed 's/ [0-9.]* s$//' slow.err | paste -sd'|')"
mapfile -t sl < <(site slow.json 1000)
check "slow server: the symbol table's name, no line" "thr|None|None" "${sl[0]%% *}"
if [ "$took" -le 30 ]; then pass "slow server: done in $took s (DEBUGINFOD_TIMEOUT=2)"; else
    fail "slow server: time" "$took s"; fi
fresh
start=$(date +%s)
DEBUGINFOD_URLS=$slow DEBUGINFOD_TIMEOUT=2 timeout 120 "$memtrace" core -batch \
    -ex 'memtrace *(void **)((char *)&g_keep + 56)' -- run/prog prog.core >core_slow.out 2>&1
took=$(($(date +%s) - start))
check "slow server: memtrace core answers, module+offset" "  #0 thr in prog+0x" \
    "$(grep -m1 '^  #0 ' core_slow.out | sed 's/0x[0-9a-f]*$/0x/')"
if [ "$took" -le 60 ]; then pass "slow server: memtrace core in $took s"; else
    fail "slow server: memtrace core's time" "$took s"; fi

finish sym_debuginfod
