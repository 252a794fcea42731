#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Sites on memtrace view's page told apart, in headless Chromium (the DOM
# after the page's script ran, read by tests/e2e/answers_page_dom.py):
#  - a recording of tests/progs/answers_page_sites (three callers of one
#    wrapper, and a fourth caller of it reached by three stacks): the
#    legend's and the tables' names are exactly "CALLER at FILE:LINE →
#    xmalloc" at the SITE: markers, the fourth's three stacks one band and
#    one row of their summed bytes (2,100), each stack one click away; two
#    stacks that part after two shared frames, "from_y1 at FILE:LINE → … →
#    ymalloc";
#  - the caller/callee view of work and of xmalloc (#callers=NAME): the
#    exact bytes and allocations from and to each function;
#  - memtrace view RUN2 --base RUN1 through the launcher: the second run's
#    extra 5,000 bytes at extra and 2,000 at caller_b, exactly, most
#    growth first, nothing else; a missing base and a base of another
#    program: one memtrace: line, status 1, no page;
#  - sqlite3 (frames without symbols): the top rows' names are told apart
#    and name such frames by module+offset, which addr2line confirms.
# Prints "answers_page: N passed, N failed" last.
set -u
. "$(dirname "$0")/lib.sh"
memtrace=$build/memtrace
prog=$tests/answers_page_sites
F=tests/progs/answers_page_sites.c
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_RECORD MEMTRACE_SAMPLE \
    MEMTRACE_LIB MEMTRACE_RECORD_CULL_MS
cd "$work" || exit 1

browser=$(command -v chromium || command -v chromium-browser)
if [ -z "$browser" ]; then
    fail "chromium" "not installed (Debian's chromium: make deps)"
    finish answers_page
    exit 1
fi

# open URL NAME: Chromium's DOM of URL after its script ran, in NAME.dom;
# its console, if anything reached it, fails NAME.
open_page() {
    timeout 120 "$browser" --headless --disable-gpu --no-sandbox --user-data-dir="$work/chrome" \
        --enable-logging=stderr --v=0 --dump-dom "$1" >"$2.dom" 2>"$2.log"
    local console
    console=$(grep -E ':CONSOLE[:(]' "$2.log")
    if [ -s "$2.dom" ] && [ -z "$console" ]; then
        pass "$2: Chromium opened the page, nothing on its console"
    else
        fail "$2: Chromium's console" "${console:-no DOM: $(tail -3 "$2.log")}"
    fi
}
dom() { python3 "$root/tests/e2e/answers_page_dom.py" "$@" 2>&1; }
# record FILE ARGS...: a recording of the program in FILE (the name the
# recording's end line gives).
record() {
    local rec=$1
    shift
    timeout 120 env MEMTRACE_RECORD="$work/$rec" LD_PRELOAD="$build/libmemtrace.so" "$@" \
        >/dev/null 2>"$rec.err"
    [ -s "$work/$rec" ] || fail "recording $rec" "$(cat "$rec.err")"
}
name() { echo "$1 at $F:$(site_line $F "$1") → xmalloc"; }
# from_y1 and from_y2's stacks share ymalloc and yvia, then part.
yname() { echo "$1 at $F:$(site_line $F "$1") → … → ymalloc"; }

record run1.rec "$prog"
record run2.rec "$prog" more

# ---------------------------------------------------------------- names
"$memtrace" view run1.rec -o run1.html >view1.out 2>&1
RC=$?
status "view the recording" 0
open_page "file://$work/run1.html" run1
check "legend: the sites by the caller of xmalloc, bytes at exit (grow's three stacks one band)" \
    "$(name caller_c)|1|9000
$(name caller_b)|1|4000
$(name grow)|3|2100
$(name caller_a)|1|0
$(yname from_y1)|1|500
$(yname from_y2)|1|300
other sites|0|0" "$(dom legend run1.dom)"
check "table at the peak: one row per name, exact bytes" \
    "$(name caller_c)|9000|1
$(name caller_b)|4000|1
$(name grow)|2100|3
$(name caller_a)|1000|1
$(yname from_y1)|500|1
$(yname from_y2)|300|1" "$(dom table run1.dom by-peak peak_bytes)"
check "table of allocated bytes: the allocations summed over the stacks of a name" \
    "$(name caller_c)|3|1
$(name caller_b)|2|1
$(name grow)|3|3
$(name caller_a)|1|1
$(yname from_y1)|1|1
$(yname from_y2)|1|1" "$(dom table run1.dom by-allocated allocations)"
check "table of leaks: caller_a's block freed, not there" \
    "$(name caller_c)|9000|1
$(name caller_b)|4000|1
$(name grow)|2100|3
$(yname from_y1)|500|1
$(yname from_y2)|300|1" "$(dom table run1.dom by-leaked leaked_bytes)"
# The full stacks under a name, innermost first (to main: libc's own lines
# beyond it are the system's).
at_() { echo "$1 at $F:$(site_line $F "$2")"; }
check "grow's row: its three stacks" \
    "$(at_ xmalloc xmalloc) | $(at_ grow grow) | $(at_ from_one from_one) | main at $F:$(($(site_line $F main_work) + 1))
$(at_ xmalloc xmalloc) | $(at_ grow grow) | from_one at $F:$(($(site_line $F from_one) + 1)) | main at $F:$(($(site_line $F main_work) + 1))
$(at_ xmalloc xmalloc) | $(at_ grow grow) | $(at_ from_two from_two) | main at $F:$(($(site_line $F main_work) + 2))" \
    "$(dom stacks run1.dom by-peak "$(name grow)" | cut -d'|' -f1-4 | sed 's/ $//' | sort)"
check "caller_a's row: its stack" \
    "$(at_ xmalloc xmalloc) | $(at_ caller_a caller_a) | $(at_ main main_a)" \
    "$(dom stacks run1.dom by-peak "$(name caller_a)" | cut -d'|' -f1-3 | sed 's/ $//')"

# ---------------------------------------------------------------- callers and callees
open_page "file://$work/run1.html#callers=work" callers-work
check "callers of work: main; callees: caller_c and caller_b, bytes at the peak and allocations" \
    "work
up|main|13000|5
down|caller_c|9000|3
down|caller_b|4000|2" "$(dom callers callers-work.dom)"
open_page "file://$work/run1.html#callers=xmalloc" callers-xmalloc
check "callers of xmalloc: its four callers; it allocates itself" \
    "xmalloc
up|caller_c|9000|3
up|caller_b|4000|2
up|grow|2100|3
up|caller_a|1000|1
down|(allocates here)|16100|9" "$(dom callers callers-xmalloc.dom)"

# ---------------------------------------------------------------- a diff of two runs
"$memtrace" view run2.rec --base run1.rec -o diff.html >diff.out 2>&1
RC=$?
status "memtrace view RUN2 --base RUN1" 0
check "memtrace view --base: its one line" "memtrace: view: diff.html written" "$(cat diff.out)"
open_page "file://$work/diff.html" diff
check "diff: extra's 5000 bytes, caller_b's 2000, most growth first, nothing else" \
    "$(name extra)|peak_bytes=0>5000(5000) leaked_bytes=0>5000(5000) allocations=0>1(1) allocated_bytes=0>5000(5000)
$(name caller_b)|peak_bytes=4000>6000(2000) leaked_bytes=4000>6000(2000) allocations=2>3(1) allocated_bytes=4000>6000(2000)" \
    "$(dom diff diff.dom | tail -n +2)"
check "diff: the peaks of the two runs" \
    "peak 16.5 KiB → 23.3 KiB (+6.84 KiB) · base command: $prog" "$(dom diff diff.dom | head -1)"

# bad NAME STATUS MESSAGE ARGS...: memtrace view ARGS says MESSAGE, exits
# STATUS, and writes no page.
bad() {
    local name=$1 st=$2 msg=$3
    shift 3
    rm -f bad.html
    "$memtrace" view "$@" -o bad.html >bad.out 2>&1
    RC=$?
    status "$name" "$st"
    check "$name: its one line" "$msg" "$(cat bad.out)"
    if [ -e bad.html ] || ls ./.bad.html.* >/dev/null 2>&1; then
        fail "$name: no page written" "$(ls -a)"
    else
        pass "$name: no page written"
    fi
}
bad "--base: a missing file" 1 "memtrace: --base: none.rec: No such file or directory" \
    run2.rec --base none.rec
cp "$prog" other_prog
record other.rec ./other_prog
bad "--base: a run of another program" 1 \
    "memtrace: --base other.rec is a run of other_prog, run2.rec one of answers_page_sites: a diff is of two runs of one program" \
    run2.rec --base other.rec
bad "--base without a file" 2 \
    "memtrace: view: --base needs a FILE (the run to compare with); try 'memtrace --help'" \
    run2.rec --base

# ---------------------------------------------------------------- sqlite3
# Its library has few symbols: before, every row read "libsqlite3.so.0.8.6
# 0x7f..." (the innermost frame, by address).
if command -v sqlite3 >/dev/null; then
    cat >small.sql <<'EOF'
CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, val REAL);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000)
INSERT INTO t SELECT x, x % 37, 'name-' || x, x * 0.5 FROM c;
CREATE INDEX ti ON t(grp, name);
SELECT grp, count(*), sum(val) FROM t GROUP BY grp ORDER BY 3 DESC LIMIT 3;
EOF
    record sq.rec sqlite3 :memory: ".read small.sql"
    "$memtrace" view sq.rec -o sq.html >sq.out 2>&1
    open_page "file://$work/sq.html" sqlite3
    dom table sqlite3.dom by-peak peak_bytes | cut -d'|' -f1 >sq.names
    check "sqlite3: 20 rows at the peak, 20 names" "20 20" \
        "$(wc -l <sq.names) $(sort -u sq.names | wc -l)"
    lacks "sqlite3: no name by address (module 0x7f...)" sq.names " 0x"
    has "sqlite3: frames without a symbol by module+offset" sq.names "libsqlite3.so.0.8.6+0x"
    # The offsets are the library's: addr2line finds the function the
    # recording named at each of the first ten that have a symbol.
    "$memtrace" export --json sq.rec -o sq.json 2>/dev/null
    python3 - sq.json >sq.frames <<'EOF'
import json, sys
seen = set()
for s in json.load(open(sys.argv[1]))["sites"]:
    for f in s["frames"]:
        if f.get("function") and "libsqlite3" in (f.get("module") or "") and f["offset"] not in seen:
            seen.add(f["offset"])
            print(f["module"], f["offset"], f["function"])
EOF
    head -10 sq.frames >sq.want
    while read -r mod off fn; do
        echo "$mod $off $(addr2line -f -e "$mod" "$off" | head -1)"
    done <sq.want >sq.got
    check "sqlite3: offsets are the library's (addr2line, $(wc -l <sq.want) frames)" \
        "$(cat sq.want)" "$(cat sq.got)"
else
    fail "sqlite3" "not installed (make deps)"
fi

finish answers_page
