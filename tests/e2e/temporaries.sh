#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Temporary allocations are heaptrack's (src/store/temporary.h): on the same
# programs, heaptrack's own run and memtrace's profiler exit report, the
# recording's JSON (the page's figure) and heaptrack_print on memtrace's
# heaptrack export all count the same. heaptrack_print's count is first
# reproduced from its own file (zstd -dc) with its quirk (a free of kind 0
# right after a free counts: kind 0 is the program's first, here the
# emergency pool of the libstdc++ heaptrack itself loads, freed at exit);
# the rule's count is that without the quirk.
source "$(dirname "$0")/lib.sh"

ht_rule() { # FILE QUIRK: heaptrack's rule over its interpreted file
    zstd -dc "$1" | awk -v quirk="$2" '
        $1 == "+" { last = $2; armed = 1; ql = $2 }
        $1 == "-" { if ((armed && last == $2) || (quirk && ql == $2)) t++; armed = 0; ql = "0" }
        END { print t + 0 }'
}
ht_print() { heaptrack_print -f "$1" 2>/dev/null | sed -n 's/^temporary memory allocations: \([0-9]*\) .*/\1/p'; }
profiler_temps() { # the exit report's sites shown plus "N more sites"
    awk '/^  temporary: [0-9]+ of/ { s += $2 }
         /more sites not shown/ { for (i = 2; i <= NF; i++) if ($i == "temporary") s += $(i - 1) }
         END { print s + 0 }' "$1"
}

# NAME TOLERANCE CMD...: every count against heaptrack's rule on its run
compare() {
    local name=$1 tol=$2; shift 2
    local d=$work/run_$name; mkdir -p "$d"
    timeout 300 heaptrack -o "$d/ht" "$@" >/dev/null 2>&1
    if [ ! -s "$d/ht.zst" ]; then fail "$name heaptrack" "no heaptrack file"; return; fi
    local printed quirk rule
    printed=$(ht_print "$d/ht.zst"); quirk=$(ht_rule "$d/ht.zst" 1); rule=$(ht_rule "$d/ht.zst" 0)
    check "$name: heaptrack_print's count is heaptrack's rule on its file" "$printed" "$quirk"
    timeout 300 env MEMTRACE_EXIT_TOP=0 MEMTRACE_TOP_BY=temporary \
        LD_PRELOAD="$build/libmemtrace-profiler.so" "$@" >/dev/null 2>"$d/prof"
    timeout 300 env MEMTRACE_RECORD="$d/rec" LD_PRELOAD="$build/libmemtrace.so" "$@" >/dev/null 2>&1
    "$build/memtrace-export" --json "$d/rec" -o "$d/rec.json" 2>/dev/null
    "$build/memtrace-export" --heaptrack "$d/rec" -o "$d/export.zst" >/dev/null 2>&1
    local prof json exp
    prof=$(profiler_temps "$d/prof")
    json=$(grep -o '"totals":{[^}]*}' "$d/rec.json" | grep -o '"temporary":[0-9]*' | cut -d: -f2)
    exp=$(ht_print "$d/export.zst")
    echo "  $name: heaptrack_print $printed, rule on heaptrack's file $rule, profiler $prof," \
         "JSON $json, heaptrack_print on the export $exp"
    for what in "profiler:$prof" "JSON:$json" "export:$exp"; do
        local v=${what#*:}
        if [ "$tol" = 0 ]; then
            check "$name: ${what%%:*} = heaptrack's" "$rule" "$v"
        elif [ -n "$v" ] && [ $((v > rule ? v - rule : rule - v)) -le "$tol" ]; then
            pass "$name: ${what%%:*} $v within $tol of heaptrack's $rule"
        else
            fail "$name: ${what%%:*}" "$v, heaptrack's $rule (tolerance $tol)"
        fi
    done
    [ -n "$EXPECT" ] && check "$name: the known count" "$EXPECT" "$rule"
}

for p in loop known; do
    gcc -O0 -g -o "$work/$p" "$root/tests/progs/temporaries_$p.c" || fail "build $p" "gcc"
done
cd "$work" || exit 1
EXPECT=20000 compare loop 0 ./loop
EXPECT=1702 compare known 0 ./known
cat >small.sql <<'SQL'
CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000)
INSERT INTO t SELECT x, x % 97, printf('name-%08d', (x * 7919) % 5000) FROM c;
CREATE INDEX t_name ON t(name);
SELECT grp, count(*), max(name) FROM t GROUP BY grp ORDER BY 2 DESC LIMIT 3;
SQL
EXPECT= compare sqlite3 0 /usr/bin/sqlite3 :memory: ".read small.sql"
cat >small.py <<'PY'
d = {}
for i in range(3000):
    d[str(i)] = [i, str(i) * 3]
print(sum(len(v[1]) for v in d.values()))
PY
# python3: memtrace sees a few calls heaptrack does not (46,869 against
# 46,866 allocations here: the interpreter's start before heaptrack's
# hooks are in); those move the count by at most as many.
PYTHONHASHSEED=0 PYTHONMALLOC=malloc EXPECT= compare python3 4 /usr/bin/python3 small.py

finish temporaries
