#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# memtrace view: the page in a real browser. Headless
# Chromium (Debian's chromium) opens each page from a file; nothing may
# reach its console (an error, an uncaught exception, a refused load), the
# page's script must run to its end, and what it drew is checked against
# the data it was drawn from (tests/e2e/view_dom.py): every point of the
# memory line and of each stacked band at each sample time, the peak
# marker at the peak's time and bytes, allocations per second, the four
# site tables in order with their stacks, each flame graph's cells.
#  - a timeline JSON of a made-up run with four known phases
#    (tests/e2e/timeline_gen.py, computed event by event as the contract
#    says) and one of 40 sites (only ten drawn as bands, the rest "other");
#    a recording of timeline_phases, viewed directly, against its export, and
#    the same with its last block cut (truncated, frames by address), when
#    the launcher has `memtrace export` (the record branch's);
#  - pprof profiles of tests/progs/pprof_sites (the profiler's pair, exit
#    and .peak, and the tracer's) and the same run's folded files: the
#    flame graphs equal MEMTRACE_FOLDED's stacks, the leaked table names
#    the sites at their lines with their exact bytes, and the page says
#    there is no timeline;
#  - bad input: one memtrace: line, its status, no page written.
# A screenshot of the recording's page (without an export, the generated
# phases') is left in build/tests/view.png: doc/view.png, which doc/timeline.adoc
# shows, is one, made with the record branch merged.
# Prints "view: N passed, N failed"; exits 1 on failure.
set -u
. "$(dirname "$0")/lib.sh"
memtrace=$build/memtrace
P=tests/progs/pprof_sites.c
prog=$tests/pprof_sites
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_PPROF_EVERY

browser=$(command -v chromium || command -v chromium-browser)
if [ -z "$browser" ]; then
    fail "chromium" "not installed (Debian's chromium: make deps)"
    finish view
    exit 1
fi

# open PAGE NAME: Chromium's DOM of PAGE after its script ran, in
# $work/NAME.dom; its console, if anything reached it, fails NAME.
open_page() {
    timeout 120 "$browser" --headless --disable-gpu --no-sandbox --user-data-dir="$work/chrome" \
        --enable-logging=stderr --v=0 --dump-dom "file://$1" >"$work/$2.dom" 2>"$work/$2.log"
    local console
    console=$(grep -E ':CONSOLE[:(]' "$work/$2.log")
    if [ -s "$work/$2.dom" ] && [ -z "$console" ]; then
        pass "$2: Chromium opened the page, nothing on its console"
    else
        fail "$2: Chromium's console" "${console:-no DOM: $(tail -3 "$work/$2.log")}"
    fi
}
# dom_checks NAME ARGS...: view_dom.py's PASS and FAIL lines, counted here.
dom_checks() {
    local name=$1 line
    shift
    while IFS= read -r line; do
        case $line in
        PASS\ *) pass "$name: ${line#PASS }" ;;
        FAIL\ *) fail "$name: ${line#FAIL }" "" ;;
        *) fail "$name: view_dom.py" "$line" ;;
        esac
    done < <(python3 "$root/tests/e2e/view_dom.py" "$@" 2>&1)
}
# view NAME ARGS...: memtrace view ARGS, its status in RC, stderr in $work/NAME.err.
view() {
    local name=$1
    shift
    "$memtrace" view "$@" >"$work/$name.out" 2>"$work/$name.err"
    RC=$?
}

# bad NAME STATUS MESSAGE ARGS...: memtrace view ARGS says MESSAGE, exits
# STATUS, and writes no page.
bad() {
    local name=$1 st=$2 msg=$3
    shift 3
    rm -f "$work"/*.html.tmp* "$work/bad.html"
    view bad "$@" -o "$work/bad.html"
    status "$name" "$st"
    check "$name: its one line" "$msg" "$(cat "$work/bad.err")"
    if [ -e "$work/bad.html" ] || ls "$work"/*.tmp* >/dev/null 2>&1; then
        fail "$name: no page written" "$(ls "$work")"
    else
        pass "$name: no page written"
    fi
}
# ---------------------------------------------------------------- a timeline
python3 "$root/tests/e2e/timeline_gen.py" phases "$work/phases.json"
view phases "$work/phases.json"
status "view phases.json" 0
check "view phases.json: the one line naming the page" \
    "memtrace: view: $work/phases.json.html written" "$(cat "$work/phases.err")"
page=$work/phases.json.html
has "the page is self-contained: no network (Content-Security-Policy default-src 'none')" "$page" \
    "content=\"default-src 'none'; script-src 'unsafe-inline'"
lacks "the page loads no script from elsewhere" "$page" "<script src"
open_page "$page" phases
dom_checks phases timeline "$work/phases.dom" "$work/phases.json"
# The made-up run's own numbers, which the page must show (its header).
python3 - "$work/phases.dom" <<'EOF' >"$work/phases.facts"
import sys, re
print(re.search(r'<p class="facts">(.*?)</p>', open(sys.argv[1]).read()).group(1))
EOF
# 2,001 temporary: churn's 2,000 and spike's first free, right after the
# last allocation of its size and site (heaptrack's rule).
has "phases: the header's totals" "$work/phases.facts" \
    "4,500 allocations (1.11 MiB), 4,000 frees · peak 1.04 MiB at 6.000 ms · leaked 7.81 KiB in 500 blocks · 2,001 temporary allocations"
# screenshot PAGE: Chromium's PNG of PAGE in build/tests/view.png.
screenshot() {
    rm -f "$work/view.png"
    timeout 120 "$browser" --headless --disable-gpu --no-sandbox --user-data-dir="$work/chrome" \
        --hide-scrollbars --window-size=1200,1900 --screenshot="$work/view.png" "file://$1" \
        >/dev/null 2>&1
    if [ "$(head -c 8 "$work/view.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then
        pass "a screenshot of $(basename "$1") (build/tests/view.png)"
        cp "$work/view.png" "$tests/view.png"
    else
        fail "a screenshot of $(basename "$1")" "no PNG"
    fi
}
screenshot "$page"

python3 "$root/tests/e2e/timeline_gen.py" big 40000 40 "$work/sites40.json"
view sites40 "$work/sites40.json" -o "$work/sites40.html"
status "view sites40.json -o PAGE" 0
open_page "$work/sites40.html" sites40
dom_checks sites40 timeline "$work/sites40.dom" "$work/sites40.json"

# A recording cut short: the page says so.
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["truncated"]=True; json.dump(d,open(sys.argv[2],"w"))' \
    "$work/phases.json" "$work/cut.json"
view cut "$work/cut.json"
open_page "$work/cut.json.html" cut
has "truncated: the page says the recording was cut short" "$work/cut.dom" \
    'id="truncated">This recording was cut short'

# A recording, read through `memtrace export --json` (the record branch's).
# The recording tests' program of known phases (tests/progs/timeline_phases.c)
# when it is built, else pprof_sites; the screenshot is then of its page.
if "$memtrace" --help | grep -qE '^(Usage:)? +memtrace export '; then
    rprog=$tests/timeline_phases
    [ -x "$rprog" ] || rprog=$prog
    MEMTRACE_RECORD=$work/run.rec LD_PRELOAD=$build/libmemtrace.so "$rprog" "$work/run.log" \
        >/dev/null 2>&1
    "$memtrace" export --json "$work/run.rec" -o "$work/rec.json" 2>"$work/export.err"
    view rec "$work/run.rec" -o "$work/rec.html"
    status "view RECORDING ($(basename "$rprog"))" 0
    check "view RECORDING: the one line naming the page" \
        "memtrace: view: $work/rec.html written" "$(cat "$work/rec.err")"
    open_page "$work/rec.html" recording
    dom_checks recording timeline "$work/recording.dom" "$work/rec.json"
    screenshot "$work/rec.html"
    # Its last block cut (kill -9 or a full disk while it was written: the
    # symbols are in it, so the frames read by module and address): the
    # export's line passed on, the page of the readable prefix, which says so.
    head -c $(($(stat -c %s "$work/run.rec") - 1)) "$work/run.rec" >"$work/half.rec"
    "$memtrace" export --json "$work/half.rec" -o "$work/half.json" 2>"$work/half-export.err"
    view half "$work/half.rec" -o "$work/half.html"
    status "view a recording cut short" 0
    check "view a recording cut short: the export's line, then the page's" \
        "$(cat "$work/half-export.err")
memtrace: view: $work/half.html written" "$(cat "$work/half.err")"
    open_page "$work/half.html" half
    has "half: the page says the recording was cut short" "$work/half.dom" \
        'id="truncated">This recording was cut short'
    dom_checks half timeline "$work/half.dom" "$work/half.json"
else
    echo "SKIP a recording viewed directly: this launcher has no 'memtrace export' yet"
fi

# ---------------------------------------------------------------- pprof and folded
if [ ! -x "$prog" ]; then
    fail "pprof_sites" "$prog not built (make build/tests/pprof_sites)"
else
    MEMTRACE_PPROF=$work/app.pb.gz MEMTRACE_FOLDED=$work/app.folded \
        LD_PRELOAD=$build/libmemtrace-profiler.so "$prog" >/dev/null 2>"$work/prof.err"
    view pprof "$work/app.pb.gz"
    status "view app.pb.gz (its .peak beside it)" 0
    open_page "$work/app.pb.gz.html" pprof
    dom_checks pprof profile "$work/pprof.dom" "$work/app.folded" "$work/app.folded.peak"
    # The leaked table: the sites at their lines, exact bytes and blocks.
    python3 - "$work/pprof.dom" <<'EOF' >"$work/pprof.leaked"
import sys, re
sec = open(sys.argv[1]).read().split('id="by-leaked"')[1].split("</section>")[0]
for row in re.findall(r"<tr data-site.*?</tr>", sec):
    name = re.search(r"<summary>(.*?)</summary>", row).group(1)
    v = re.search(r'data-key="leaked_bytes" data-value="(\d+)">([^<]*)<', row)
    print("%s %s %s" % (name, v.group(1), v.group(2)))
EOF
    has "pprof: leaked: keep's 7 blocks of 48 at the inlined malloc's line" "$work/pprof.leaked" \
        "inlined_alloc at $(at $P inlined | sed 's/:$//') 336 336 bytes (7)"
    has "pprof: leaked: the thread's 3 blocks of 200" "$work/pprof.leaked" \
        "alloc_thread at $(at $P thread | sed 's/:$//') 600 600 bytes (3)"
    lacks "pprof: leaked: not the freed site" "$work/pprof.leaked" "alloc_freed"
    has "pprof: allocated: the freed site's 5 allocations of 64" "$work/pprof.dom" \
        'data-key="allocations" data-value="5">5</td><td class="num" data-key="allocated_bytes" data-value="320">'
    has "pprof: temporary: not in a pprof profile, and the page says so" "$work/pprof.dom" \
        'Top sites by temporary allocations</h3><p class="note">'
    # The peak flame graph's total is the exit report's peak (folded stacks: line).
    peak=$(sed -n 's/^memtrace: folded stacks: .* (\([0-9]*\) bytes, peak at .*/\1/p' "$work/prof.err")
    has "pprof: the peak flame graph holds the exit report's peak ($peak bytes)" "$work/pprof.dom" \
        "data-total=\"$peak\""

    view folded "$work/app.folded.peak" -o "$work/folded.html"
    status "view app.folded.peak (the exit's file beside it)" 0
    open_page "$work/folded.html" folded
    dom_checks folded profile "$work/folded.dom" "$work/app.folded" "$work/app.folded.peak"

    MEMTRACE_PPROF=$work/tracer.pb.gz LD_PRELOAD=$build/libmemtrace.so "$prog" >/dev/null 2>&1
    view tracer "$work/tracer.pb.gz"
    status "view the tracer's pprof profile (in use at exit only)" 0
    open_page "$work/tracer.pb.gz.html" tracer
    dom_checks tracer profile "$work/tracer.dom" "$work/app.folded" -
    has "tracer: no peak in it, and the page says so" "$work/tracer.dom" \
        '<section id="flame-peak"><h3>At the peak</h3><p class="absent">Not in this input (pprof).</p>'
fi

# ---------------------------------------------------------------- bad input
bad "no such file" 1 "memtrace: $work/none: No such file or directory" "$work/none"
echo '{"memtrace_timeline": 2}' >"$work/v2.json"
bad "a timeline of another version" 1 \
    "memtrace: $work/v2.json: not a memtrace timeline of version 1 (\"memtrace_timeline\": 2)" "$work/v2.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["total"]["bytes"].pop(); json.dump(d,open(sys.argv[2],"w"))' \
    "$work/phases.json" "$work/short.json"
bad "a series shorter than times_ns" 1 \
    "memtrace: $work/short.json: total.bytes has 1999 values for 2000 times" "$work/short.json"
echo '{"memtrace_timeline": 1, "times_ns": [' >"$work/cut-json.json"
bad "JSON cut short" 1 \
    "memtrace: $work/cut-json.json: not valid JSON (Expecting value: line 2 column 1 (char 39))" \
    "$work/cut-json.json"
head -c 100 "$work/app.pb.gz" >"$work/cut.pb.gz"
bad "a gzip file cut short" 1 \
    "memtrace: $work/cut.pb.gz: a damaged gzip file (Compressed file ended before the end-of-stream marker was reached)" \
    "$work/cut.pb.gz"
printf 'a;b 12\nnot folded\n' >"$work/bad.folded"
printf '\177ELF\002\001\001' >"$work/elf"
bad "a file of none of the four kinds" 1 \
    "memtrace: $work/elf: not a memtrace recording, timeline (memtrace export --json), pprof profile or folded-stacks file" \
    "$work/elf"
bad "a folded file with a line that is not" 1 \
    "memtrace: $work/bad.folded:2: not a folded-stacks line (FRAME;FRAME;... COUNT)" "$work/bad.folded"
view nodir "$work/phases.json" -o "$work/nodir/p.html"
status "a page in a missing directory" 1
check "a page in a missing directory: its line" \
    "memtrace: $work/nodir/p.html: not written (No such file or directory)" "$(cat "$work/nodir.err")"
# An export that fails (an unreadable recording): its first line in ours.
printf '#!/bin/sh\necho "memtrace export: $3: Permission denied" >&2\nexit 1\n' >"$work/failing-launcher"
chmod +x "$work/failing-launcher"
printf 'MTREC01\n' >"$work/denied.rec"
MEMTRACE_LAUNCHER=$work/failing-launcher python3 "$build/view/memtrace_view.py" "$work/denied.rec" \
    -o "$work/denied.html" >/dev/null 2>"$work/denied.err"
RC=$?
status "a recording the export cannot read" 1
check "a recording the export cannot read: its one line" \
    "memtrace: $work/denied.rec: a recording that \`memtrace export --json\` could not read (memtrace export: $work/denied.rec: Permission denied)" \
    "$(cat "$work/denied.err")"
check "a recording the export cannot read: no page written" "" "$(ls "$work"/denied.html* 2>/dev/null)"
view noarg
status "no FILE" 2
check "no FILE: its line" "memtrace: view: no FILE given; try 'memtrace --help'" "$(cat "$work/noarg.err")"
view twoargs a b
status "two FILEs" 2
check "two FILEs: its line" "memtrace: view: give one FILE; try 'memtrace --help'" "$(cat "$work/twoargs.err")"
view badopt -x f
status "an unknown option" 2
check "an unknown option: its line" "memtrace: view: unknown option '-x'; try 'memtrace --help'" \
    "$(cat "$work/badopt.err")"

finish view
