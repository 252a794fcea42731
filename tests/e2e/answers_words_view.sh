#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The page's temporary allocations, as Chromium renders them, are
# heaptrack's: on tests/progs/temporaries_loop.c, temporaries_known.c and
# sqlite3, the figure in the page's facts line ("N temporary
# allocations", after its script ran: Chromium's --dump-dom) equals
# heaptrack's rule on heaptrack's own run of the same program
# (store/temporary.h; tests/e2e/temporaries.sh reads heaptrack's file the
# same way), for the whole recording and one culled with
# MEMTRACE_RECORD_CULL_MS=50.
# Prints "answers_words_view: N passed, N failed" last.
set -u
. "$(dirname "$0")/lib.sh"
memtrace=$build/memtrace
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_RECORD MEMTRACE_SAMPLE MEMTRACE_LIB
cd "$work" || exit 1
browser=$(command -v chromium || command -v chromium-browser)
if [ -z "$browser" ] || ! command -v heaptrack >/dev/null; then
    fail "chromium and heaptrack" "not installed (make deps)"
    finish answers_words_view
    exit 1
fi

ht_rule() { # heaptrack's rule over its own file
    zstd -dc "$1" | awk '$1 == "+" { last = $2; armed = 1 }
                         $1 == "-" { if (armed && last == $2) t++; armed = 0 }
                         END { print t + 0 }'
}
# page_temporaries REC NAME: the page's "N temporary allocations" as
# Chromium drew it, without its thousands' commas.
page_temporaries() {
    "$memtrace" view "$1" -o "$work/$2.html" >"$work/$2.out" 2>&1 ||
        { echo "memtrace view failed: $(cat "$work/$2.out")"; return; }
    timeout 120 "$browser" --headless --disable-gpu --no-sandbox --user-data-dir="$work/chrome" \
        --dump-dom "file://$work/$2.html" >"$work/$2.dom" 2>/dev/null
    grep -o '<p class="facts">[^<]*' "$work/$2.dom" |
        sed -n 's/.* \([0-9,]*\) temporary allocations.*/\1/p' | tr -d ,
}

for p in loop known; do
    gcc -O0 -g -o "$p" "$root/tests/progs/temporaries_$p.c" || fail "build $p" "gcc"
done
cat >small.sql <<'SQL'
CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000)
INSERT INTO t SELECT x, x % 97, printf('name-%08d', (x * 7919) % 5000) FROM c;
CREATE INDEX t_name ON t(name);
SELECT grp, count(*), max(name) FROM t GROUP BY grp ORDER BY 2 DESC LIMIT 3;
SQL
# NAME CMD...
compare() {
    local name=$1 c; shift
    timeout 300 heaptrack -o "$work/$name.ht" "$@" >/dev/null 2>&1
    local want; want=$(ht_rule "$work/$name.ht.zst")
    for c in 00 50; do
        rm -f "$work/$name.$c.rec"
        timeout 300 env MEMTRACE_RECORD="$work/$name.$c.rec" MEMTRACE_RECORD_CULL_MS=$c \
            LD_PRELOAD="$build/libmemtrace.so" "$@" >/dev/null 2>&1
        check "$name, cull $c ms: the page's temporary allocations = heaptrack's rule" \
            "$want" "$(page_temporaries "$work/$name.$c.rec" "$name$c")"
    done
}
compare loop ./loop
compare known ./known
compare sqlite3 /usr/bin/sqlite3 :memory: ".read small.sql"

finish answers_words_view
