#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The leak check at exit (MEMTRACE_LEAK_CHECK=1) against valgrind's
# memcheck (`valgrind --leak-check=full`) as the oracle: the verdict
# programs of tests/progs/leak_verdicts.c and real programs nobody here
# wrote (an interpreter with PYTHONMALLOC=malloc, Perl, Debian's command-line
# tools, a C++ program, a Rust program built by the tests), each run once
# under each tool on a small input. Definitely lost and indirectly lost,
# bytes and blocks, must be equal on every program; possibly lost too,
# except where the two definitions cannot agree (doc/leaks.adoc, "Leak
# checking compared"; the case says why).
set -u
. "$(dirname "$0")/lib.sh"
tracer=$build/libmemtrace.so
verdicts=$tests/leak_verdicts

if ! command -v valgrind >/dev/null; then
    fail "valgrind" "not installed (make deps installs it)"
    finish leak_oracle
    exit
fi

# Inputs: small, valgrind runs programs 20-50 times slower.
cd "$work"
seq 1 300 >nums.txt
printf '{"a": [1, 2, {"b": "c"}], "d": "e"}\n' >doc.json
printf '<a><b x="1">t</b><c/></a>\n' >doc.xml
printf 'rule cp\n  command = cp $in $out\nbuild out.txt: cp nums.txt\n' >build.ninja
mkdir -p tree/sub && cp nums.txt tree/ && cp doc.json tree/sub/
export PYTHONMALLOC=malloc                 # CPython's own allocator off: every object a block
export PERL_HASH_SEED=0 PERL_PERTURB_KEYS=0 # the same hash order in both runs
export LC_ALL=C

# "D/N I/M P/K" from memtrace's summary line in FILE.
ours() {
    awk '/^memtrace: leaks: [0-9]+ bytes definitely/ { print $3 "/" $8, $10 "/" $15, $17 "/" $22 }' "$1"
}
# The same from valgrind's LEAK SUMMARY in FILE ("no leaks are possible":
# all zero).
theirs() {
    tr -d , <"$1" | awk '
        /definitely lost:/ { d = $4 "/" $7 } /indirectly lost:/ { i = $4 "/" $7 }
        /possibly lost:/ { p = $4 "/" $7 }
        /All heap blocks were freed -- no leaks are possible/ { d = i = p = "0/0" }
        END { if (d != "") print d, i, p }'
}

n=0
# compare NAME POSSIBLY(yes|no: why) COMMAND...: runs COMMAND under both.
compare() {
    local name=$1 possibly=$2
    shift 2
    n=$((n + 1))
    timeout 120 env MEMTRACE_LEAK_CHECK=1 MEMTRACE_LEAK_EXITCODE=0 LD_PRELOAD="$tracer" "$@" \
        >"$work/m$n.out" 2>"$work/m$n.err" </dev/null
    timeout 300 valgrind --leak-check=full "$@" >"$work/v$n.out" 2>"$work/v$n.err" </dev/null
    local m v
    m=$(ours "$work/m$n.err")
    v=$(theirs "$work/v$n.err")
    if [ -z "$m" ] || [ -z "$v" ]; then
        fail "$name" "no summary: memtrace '$m' ($(tail -3 "$work/m$n.err")), valgrind '$v' ($(tail -3 "$work/v$n.err"))"
        return
    fi
    local md=${m%% *} vd=${v%% *} mrest=${m#* } vrest=${v#* }
    local mi=${mrest%% *} vi=${vrest%% *} mp=${m##* } vp=${v##* }
    if [ "$md $mi" = "$vd $vi" ]; then
        pass "$name: definitely lost $md, indirectly lost $mi (bytes/blocks), as valgrind"
    else
        fail "$name" "definitely/indirectly lost: memtrace $md $mi, valgrind $vd $vi"
    fi
    if [ "$possibly" = yes ]; then
        check "$name: possibly lost (bytes/blocks), as valgrind" "$vp" "$mp"
    else
        echo "NOTE $name: possibly lost memtrace $mp, valgrind $vp, not compared: ${possibly#no: }"
    fi
}

# ---- the verdict programs: one point of valgrind agreement each.
compare "a dead stack copy" yes "$verdicts" stack
compare "a dead stack copy, four threads sleeping" \
    "no: valgrind counts each thread's DTV possibly lost (the descriptor points 16 bytes into it); memtrace holds the dynamic linker's blocks, as LeakSanitizer" \
    "$verdicts" threads
# Where valgrind is wrong: its possibly lost blocks there are exactly the
# four sleeping threads' DTVs (allocate_dtv), which the threads use.
dtv=$(tr -d , <"$work/v$n.err" | awk '
    / are possibly lost in loss record / { b = $5; in_dtv = 0
                                          while ((getline line) > 0 && line !~ /^==[0-9]+== *$/)
                                              if (index(line, "allocate_dtv")) in_dtv = 1
                                          if (in_dtv) n += b; else other = 1 }
    END { print (other ? "other" : n + 0) }')
check "valgrind's possibly lost blocks with four threads: their DTVs, nothing else" 4 "$dtv"
compare "a lost block before a free chunk in a bin" yes "$verdicts" bins
compare "a lost block before the top chunk" yes "$verdicts" top
compare "an interior pointer only" yes "$verdicts" interior
compare "an owner and what it holds" yes "$verdicts" owner
[ "$(uname -m)" = x86_64 ] && compare "exit called with a block only in r12" yes "$verdicts" exit_r12

# ---- real programs.
perl_why="no: Perl copies its environment, where each tool puts variables of its own, into blocks it holds by interior pointers: their number and sizes follow the environment"
compare "python3" yes /usr/bin/python3 -c 'import json; print(json.dumps({"a": [1, 2]}))'
compare "perl" "$perl_why" /usr/bin/perl -e 'my %h = map { $_ => 1 } 1..100; print scalar(keys %h), "\n"'
compare "sed" yes /usr/bin/sed 's/1/one/g' nums.txt
compare "find" yes /usr/bin/find tree -name '*.json'
compare "grep" yes /usr/bin/grep -r 2 tree
compare "sort" yes /usr/bin/sort -r -n nums.txt
compare "mawk" yes /usr/bin/mawk '{ s += $1 } END { print s }' nums.txt
compare "tar" yes /usr/bin/tar cf "$work/t.tar" tree
compare "gzip" yes /usr/bin/gzip -c nums.txt
compare "xz" yes /usr/bin/xz -c nums.txt
compare "bzip2" yes /usr/bin/bzip2 -c nums.txt
compare "sqlite3" yes /usr/bin/sqlite3 :memory: 'create table t(a); insert into t values (1), (2); select sum(a) from t;'
compare "git" yes /usr/bin/git hash-object nums.txt
compare "c++filt" yes /usr/bin/c++filt _ZNSt6vectorIiSaIiEE9push_backERKi
printf '2^100\nquit\n' >calc.bc
compare "bc" yes /usr/bin/bc -q calc.bc
compare "jq" yes /usr/bin/jq .a doc.json
compare "xmllint" yes /usr/bin/xmllint --noout doc.xml
compare "diff" yes /usr/bin/diff nums.txt doc.json
compare "ninja (C++)" yes /usr/bin/ninja -n
compare "a Rust program" yes "$tests/leak_oracle_rs"

finish leak_oracle
