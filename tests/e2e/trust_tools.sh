#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Trust, the tools' part: what `memtrace export`, `memtrace view`,
# memtrace-symbolize and the reports do with files and bytes they did not
# write themselves.
#  - item 2: export and view never follow a symbolic link planted at their
#    output's name (the target untouched, one line, status 1); what they
#    create is 0600;
#  - item 3: a thread's name, a tag scope's name and a source file's name
#    (from the debug information) with escape sequences and a newline are
#    printed escaped ("\xHH") by the library's reports, the gdb command on a
#    live process and on a core (the helper's own lines too), and
#    `memtrace tags`;
#  - item 8: a descriptor whose quarantine slot offsets are damaged is
#    refused with its one line, on a live process and on a core, where
#    memtrace-symbolize crashed;
#  - item 9: a 50-byte recording whose culled record counts 2^40 blocks is
#    refused by the heaptrack export at once, with one line;
#  - item 10: memtrace view says one memtrace: line, never a traceback, for
#    a recording whose command line is not UTF-8 (the export's JSON stays
#    valid), pprof files with fields of the wrong wire type, a folded file
#    with a 5,000-digit count or a byte that is not UTF-8 after 64 KiB; and
#    "<!--<script>" in a function name or the command line leaves the page
#    working (headless Chromium);
#  - item 15: the heaptrack export tells a 4 GiB + 16-byte allocation from
#    a 16-byte one (heaptrack_print's histogram); the tags JSON with a scope
#    name that is not UTF-8 parses.
# Recordings are made here byte by byte (mkrec.py below), so that each
# holds exactly the case.
set -u
. "$(dirname "$0")/lib.sh"
memtrace=$build/memtrace
lib=$build/libmemtrace.so
prog=$tests/trust_tools_names
helper=$root/gdb/memtrace.py
ulimit -c 0
umask 022
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_TAGS MEMTRACE_RECORD
EVIL_THREAD='thread 2 "\x1b[2J\x0am:x"'

# only_line NAME FILE LINE: FILE is the one line LINE.
only_line() {
    check "$1" "$3" "$(cat "$2")"
}
# no_escape NAME FILE: no ESC byte and no Python traceback in FILE.
no_escape() {
    if grep -q $'\033' "$2"; then fail "$1" "an ESC byte reached the output: $(cat -v "$2")"
    elif grep -q Traceback "$2"; then fail "$1" "a traceback: $(cat "$2")"
    else pass "$1"; fi
}

# mkrec.py OUT BODY: a recording (src/timeline/record_format.h) of one
# block stored raw, its records BODY, a Python expression over the helpers.
cat >"$work/mkrec.py" <<'EOF'
import struct, sys
def u(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7f) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)
def s(v): return u(((v << 1) ^ (v >> 63)) & (2**64 - 1))
def st(b): return u(len(b)) + b
def head(cmd, cull=0): return b"H" + u(1) + u(1234) + u(0) + u(cull) + st(cmd)
def thread(n): return b"T" + u(n)
def stack(sid, *frames):
    out, prev = b"S" + u(sid) + u(len(frames)), 0
    for f in frames:
        out += s(f - prev)
        prev = f
    return out
def alloc(dt, sid, size, daddr): return b"A" + s(dt) + u(sid) + u(size) + s(daddr)
def culled(dt, sid, count, size): return b"C" + s(dt) + u(sid) + u(count) + u(size)
def end(dt): return b"E" + s(dt)
body = eval("(" + sys.argv[2] + ")")
open(sys.argv[1], "wb").write(b"MTREC01\n" + struct.pack("<III", len(body), len(body), 0x6b6c426d) + body)
EOF
mkrec() { python3 "$work/mkrec.py" "$@"; }

# A small recording: two sites, one block each, freed.
mkrec "$work/r.rec" 'head(b"prog") + thread(1) + stack(1, 0x401000) + stack(2, 0x402000)
    + alloc(1000, 1, 100, 0x10000) + alloc(1000, 2, 200, 0x10000) + end(10**6)'

# ------------------------------------------------------------ item 2: outputs
# A link planted at the output's name in a shared directory: not followed.
echo precious >"$work/victim"
chmod 644 "$work/victim"
planted() { # NAME LINK-PATH EXPECTED-LINE COMMAND...
    local name=$1 link=$2 line=$3
    shift 3
    rm -f "$link"
    ln -s "$work/victim" "$link"
    "$@" >/dev/null 2>"$work/planted.err"
    RC=$?
    status "$name" 1
    only_line "$name: one line" "$work/planted.err" "$line"
    check "$name: the link's target untouched" precious "$(cat "$work/victim")"
    check "$name: the link stays a link" yes "$([ -L "$link" ] && echo yes)"
    rm -f "$link"
}
planted "export --json, REC.json a link" "$work/r.rec.json" \
    "memtrace export: $work/r.rec.json: cannot be written (a symbolic link; not followed)" \
    "$memtrace" export --json "$work/r.rec"
planted "export --heaptrack, OUT.gz a link" "$work/r.gz" \
    "memtrace export: $work/r.gz: cannot be written (a symbolic link; not followed)" \
    "$memtrace" export --heaptrack "$work/r.rec" -o "$work/r.gz"
planted "export --heaptrack, OUT.zst a link" "$work/r.zst" \
    "memtrace export: $work/r.zst: cannot be written (a symbolic link; not followed)" \
    "$memtrace" export --heaptrack "$work/r.rec" -o "$work/r.zst"
mkdir "$work/v"
"$memtrace" export --json "$work/r.rec" -o "$work/v/t.json" 2>/dev/null
planted "view, PAGE a link" "$work/v/t.json.html" \
    "memtrace: $work/v/t.json.html: not written (a symbolic link; not followed)" \
    "$memtrace" view "$work/v/t.json"
check "view: no temporary left beside the page" "t.json" "$(ls -A "$work/v")"

# What they create is 0600, whatever the umask lets through.
rm -f "$work/v/t.json"
"$memtrace" export --json "$work/r.rec" -o "$work/v/t.json" 2>/dev/null
"$memtrace" export --heaptrack "$work/r.rec" -o "$work/v/t.gz" 2>/dev/null
"$memtrace" export --heaptrack "$work/r.rec" -o "$work/v/t.zst" 2>/dev/null
"$memtrace" export --json "$work/r.rec" 2>/dev/null
"$memtrace" view "$work/v/t.json" 2>/dev/null
"$memtrace" view "$work/r.rec" -o "$work/v/r.html" 2>/dev/null
for f in v/t.json v/t.gz v/t.zst r.rec.json v/t.json.html v/r.html; do
    check "created 0600 (umask 022): $f" 600 "$(stat -c %a "$work/$f" 2>&1)"
done

# ------------------------------------------------------------ item 9: a culled count of 2^40
mkrec "$work/cull.rec" 'head(b"x") + thread(1) + culled(1, 1, 2**40, 2**44) + end(1)'
check "culled 2^40: the recording is $(stat -c %s "$work/cull.rec") bytes" yes \
    "$([ "$(stat -c %s "$work/cull.rec")" -le 51 ] && echo yes)"
timeout 60 "$memtrace" export --heaptrack "$work/cull.rec" -o "$work/cull.gz" 2>"$work/cull.err"
RC=$?
status "culled 2^40: export --heaptrack refuses at once" 1
only_line "culled 2^40: one line" "$work/cull.err" \
    "memtrace export: $work/cull.rec: its culled blocks exceed 268435456, the heaptrack export's bound (a damaged recording?); --json reads it"
check "culled 2^40: no file written" no "$([ -e "$work/cull.gz" ] && echo yes || echo no)"
timeout 60 "$memtrace" export --json "$work/cull.rec" -o "$work/cull.json" 2>"$work/cull-json.err"
RC=$?
status "culled 2^40: export --json reads it" 0
check "culled 2^40: the JSON counts its allocations" 1099511627776 \
    "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["totals"]["allocations"])' "$work/cull.json" 2>&1)"

# ------------------------------------------------------------ item 15: heaptrack sizes, tags JSON
# Two sites, blocks of 4 GiB + 16 bytes and of 16 bytes: two sizes.
mkrec "$work/big.rec" 'head(b"x") + thread(1) + stack(1, 0x401000) + stack(2, 0x402000)
    + alloc(1000, 1, 2**32 + 16, 0x10000) + alloc(1000, 2, 16, 0x10000) + end(10**6)'
# And both from one site: the kinds' key must still tell them apart.
mkrec "$work/big1.rec" 'head(b"x") + thread(1) + stack(1, 0x401000)
    + alloc(1000, 1, 2**32 + 16, 0x10000) + alloc(1000, 1, 16, 0x10000) + end(10**6)'
for r in big big1; do
    "$memtrace" export --heaptrack "$work/$r.rec" -o "$work/$r.gz" 2>/dev/null
    heaptrack_print -f "$work/$r.gz" -H "$work/$r.hist" >/dev/null 2>&1
    check "$r: heaptrack_print's size histogram has 16 and 4 GiB + 16 apart" \
        "$(printf '16\t1\n4294967312\t1')" "$(cat "$work/$r.hist" 2>&1)"
done

# The tags JSON of a scope whose name is not UTF-8 (and holds control
# bytes), in a thread named with them.
(cd "$work" && timeout 60 env LD_PRELOAD="$lib" MEMTRACE_TAGS="$work/tg" "$prog" keep \
    >/dev/null 2>"$work/tg.err")
RC=$?
status "tags: the program" 0
check "tags JSON: strict JSON (jq)" ok "$(jq -e . "$work/tg.json" >/dev/null 2>&1 && echo ok)"
check "tags JSON: the names as escaped" \
    "['\x1b[2J\nm:x', 'scope\xff\xfe\x1b]0;X\x07']" \
    "$(python3 -c 'import json, sys
d = json.loads(open(sys.argv[1], "rb").read())   # bytes: UTF-8 or an error
t = [x for x in d["threads"] if x["thread"] == 2][0]
print(ascii([t["name"], t["root"]["children"][0]["name"]]))' "$work/tg.json" 2>&1)"

# ------------------------------------------------------------ item 3: names escaped
# The library's report: a double free in the named thread, the block
# allocated in the file whose name holds escapes (trust_tools_names.c's
# #line).
T=tests/progs/trust_tools_names.c
evil_file="$root/evil\x1b]0;X\x07\x0afile.c"
(cd "$root" && timeout 60 env LD_PRELOAD="$lib" "$prog" double >/dev/null 2>"$work/double.err") \
    2>/dev/null
RC=$?
status "double free in the named thread (glibc aborts after the report)" 134
for line in "  free by $EVIL_THREAD at:" "  #0 named at $T:$(site_line $T double):9" \
            "  freed before by $EVIL_THREAD (after allocation #N) at:" \
            "  allocated by $EVIL_THREAD (allocation #N) at:" \
            "  #0 evil_alloc at $evil_file:1002:12"; do
    check "double free: the line '$line'" 1 \
        "$(sed -E 's/allocation #[0-9]+\)/allocation #N)/' "$work/double.err" | grep -cxF -- "$line")"
done
check "double free: the report's first line" "memtrace: double free of a 24-byte block at" \
    "$(head -1 "$work/double.err" | cut -d' ' -f1-8)"
no_escape "double free: no ESC byte reaches stderr" "$work/double.err"

# The gdb command on the live process and on its core, `memtrace tags`;
# then (item 8) the descriptor damaged: a quarantine slot offset far
# outside the slot, with four blocks held in main's quarantine.
damaged_line="memtrace: memtrace_state looks corrupted (quarantine_slot_filled 1099511627776, not an 8-byte field inside quarantine_slot_size 64)"
timeout 120 gdb -q -batch -nx -ex "set env LD_PRELOAD=$lib" -ex "break checkpoint" -ex "run keep" \
    -ex "source $helper" -ex "memtrace g_named" -ex "memtrace tags" -ex "memtrace check" \
    -ex $'memtrace nosuch\033[2J' \
    -ex "gcore $work/clean.core" \
    -ex "set var memtrace_state.quarantine_slot_filled = 0x10000000000" \
    -ex "gcore $work/damaged.core" -ex "memtrace check" -ex "kill" "$prog" >"$work/gdb.out" 2>&1
named_re="^memtrace: 0x[0-9a-f]+: start of a 40-byte block allocated by thread 2 \"\\\\x1b\[2J\\\\x0am:x\" \(allocation #[0-9]+\)\$"
check "gdb, live: the block's thread, its name escaped" 1 "$(grep -cE "$named_re" "$work/gdb.out")"
check "gdb, live: its stack" "  #0 named at $T:$(site_line $T named):15" \
    "$(grep -A1 -E "$named_re" "$work/gdb.out" | sed -n 2p)"
check "gdb, memtrace tags: the thread's line" "thread 2 \"\\x1b[2J\\x0am:x\":" \
    "$(grep '^thread 2 ' "$work/gdb.out")"
check "gdb, memtrace tags: the scope's lines" 2 \
    "$(grep -c '^    scope\\xff\\xfe\\x1b\]0;X\\x07: 100 bytes in 1 blocks, 1 allocations, 0 frees;' "$work/gdb.out")"
check "gdb, live: memtrace check before the damage" \
    "memtrace: check: 0 damaged blocks; 3 live blocks and 4 quarantined blocks checked" \
    "$(grep '^memtrace: check:' "$work/gdb.out")"
check "gdb, live: the helper's own line (gdb's error) escaped too" \
    "memtrace: cannot evaluate 'nosuch\x1b[2J': Invalid character '\x1b' in expression." \
    "$(grep "^memtrace: cannot evaluate 'nosuch" "$work/gdb.out")"
no_escape "gdb, live: no ESC byte reaches gdb's output" "$work/gdb.out"
timeout 120 "$memtrace" core -batch -ex "memtrace g_named" -- "$prog" "$work/clean.core" \
    >"$work/core.out" 2>&1
check "memtrace core: the block's thread, its name escaped" 1 "$(grep -cE "$named_re" "$work/core.out")"
no_escape "memtrace core: no ESC byte reaches gdb's output" "$work/core.out"

# ------------------------------------------------------------ item 8: damaged quarantine offsets
check "damaged slot offset, live: memtrace check says so in one line" "$damaged_line" \
    "$(grep -A1 'quarantine_slot_filled' "$work/gdb.out" | grep '^memtrace:')"
timeout 120 "$memtrace" core -batch -ex "memtrace check" -ex "memtrace g_named" -- \
    "$prog" "$work/damaged.core" >"$work/dcore.out" 2>&1
lacks "damaged slot offset, core: memtrace-symbolize did not stop" "$work/dcore.out" \
    "memtrace-symbolize stopped"
check "damaged slot offset, core: memtrace check and memtrace EXPR say so in one line each" \
    "$damaged_line
$damaged_line" "$(grep '^memtrace:' "$work/dcore.out")"

# ------------------------------------------------------------ item 10: memtrace view's input
# view NAME ARGS...: memtrace view ARGS; RC, stderr in $work/NAME.err.
view() {
    local name=$1
    shift
    timeout 120 "$memtrace" view "$@" >/dev/null 2>"$work/$name.err"
    RC=$?
}
# bad_input NAME LINE ARGS...: one line LINE, status 1, no page.
bad_input() {
    local name=$1 line=$2
    shift 2
    view "$name" "$@" -o "$work/$name.html"
    status "$name" 1
    only_line "$name: one memtrace: line" "$work/$name.err" "$line"
    check "$name: no page" no "$([ -e "$work/$name.html" ] && echo yes || echo no)"
}
# A recording whose command line is not UTF-8 and holds "<!--<script>".
mkrec "$work/cmd.rec" 'head(b"prog \xff\xfe --x=<!--<script>") + thread(1) + stack(1, 0x401000)
    + alloc(1000, 1, 100, 0x10000) + end(10**6)'
"$memtrace" export --json "$work/cmd.rec" -o "$work/cmd.json" 2>/dev/null
check "command not UTF-8: the export's JSON is valid, the bytes as \\u00XX" \
    "'prog \\xff\\xfe --x=<!--<script>'" \
    "$(python3 -c 'import json, sys
print(ascii(json.loads(open(sys.argv[1], "rb").read())["command"]))' "$work/cmd.json" 2>&1)"
view cmd "$work/cmd.rec" -o "$work/cmd.html"
status "command not UTF-8: memtrace view of the recording" 0

# Gzip'd pprof files whose fields have the wrong wire type (profile.proto:
# string_table 6, sample_type 1, sample 2, location 4 with address 3 and
# line 4, function 5).
cat >"$work/mkpprof.py" <<'PY'
import gzip, sys
w = sys.argv[1]
def ld(f, b): return bytes([f << 3 | 2, len(b)]) + b
def vi(f, v): return bytes([f << 3, v])
strings = ld(6, b"") + ld(6, b"inuse_space") + ld(6, b"bytes")
good_type = ld(1, vi(1, 1) + vi(2, 2))
sample = ld(2, vi(1, 1) + vi(2, 100))
files = {
    "wire-string": vi(6, 5) + strings + good_type,
    "wire-type": strings + vi(1, 1) + sample,
    "wire-sample": strings + good_type + vi(2, 1),
    # an address and a line number of wire type 2: left out
    "wire-location": strings + good_type + sample
                     + ld(4, vi(1, 1) + ld(3, b"x") + ld(4, vi(1, 1) + ld(2, b"y")))
                     + ld(5, vi(1, 1) + vi(2, 1)),
}
for name, raw in files.items():
    open("%s/%s.pb.gz" % (w, name), "wb").write(gzip.compress(raw))
PY
python3 "$work/mkpprof.py" "$work"
for f in wire-string:"a string" wire-type:"a message field" wire-sample:"a message field"; do
    bad_input "pprof ${f%%:*}" \
        "memtrace: $work/${f%%:*}.pb.gz: not a pprof profile (${f#*:} of wire type 0, 1 or 5)" \
        "$work/${f%%:*}.pb.gz"
done
view wire-location "$work/wire-location.pb.gz" -o "$work/wire-location.html"
status "pprof wire-location: read, the fields of the wrong type left out" 0
no_escape "pprof wire-location: no traceback" "$work/wire-location.err"

# Folded files: a count of 5,000 digits; a byte that is not UTF-8 after
# 64 KiB (the first 64 KiB decide whether it is one); "<!--<script>" in a
# function's name.
{ printf 'main;f '; head -c 5000 /dev/zero | tr '\0' 9; echo; } >"$work/long.folded"
bad_input "folded, a 5000-digit count" "memtrace: $work/long.folded:1: a count of 5000 digits" \
    "$work/long.folded"
{ for i in $(seq 8000); do echo "main;f$i 1"; done; printf 'main;g\377 2\n'; } >"$work/late.folded"
view late "$work/late.folded" -o "$work/late.html"
status "folded, a byte not UTF-8 after 64 KiB: the page, the byte as U+FFFD" 0
no_escape "folded, a byte not UTF-8 after 64 KiB: no traceback" "$work/late.err"
printf 'main;<!--<script>f;g 100\nmain;h 50\n' >"$work/script.folded"
view script "$work/script.folded" -o "$work/script.html"
status "<!--<script> in a name: the page" 0
check "<!--<script> in a name, the command line: not in the pages' HTML as such" 0 \
    "$(cat "$work/script.html" "$work/cmd.html" | grep -c '<!--<script>')"

# The pages in headless Chromium: the page's script ran to its end and drew
# the names as text.
browser=$(command -v chromium || command -v chromium-browser)
if [ -z "$browser" ]; then
    fail "chromium" "not installed (Debian's chromium: make deps)"
else
    for page in script cmd; do
        timeout 120 "$browser" --headless --disable-gpu --no-sandbox --user-data-dir="$work/chrome" \
            --enable-logging=stderr --v=0 --dump-dom "file://$work/$page.html" \
            >"$work/$page.dom" 2>"$work/$page.log"
        check "$page page: nothing on Chromium's console" "" "$(grep -E ':CONSOLE[:(]' "$work/$page.log")"
    done
    check "<!--<script> in a function's name: the page drew it" yes \
        "$(grep -qF '&lt;!--&lt;script&gt;f' "$work/script.dom" && grep -q '<svg' "$work/script.dom" &&
           echo yes)"
    check "<!--<script> in the command line: the page shows it" yes \
        "$(grep -qF 'command: prog ÿþ --x=&lt;!--&lt;script&gt;' "$work/cmd.dom" &&
           grep -q '<svg' "$work/cmd.dom" && echo yes)"
fi

finish trust_tools
