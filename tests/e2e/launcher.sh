#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The launcher (build/memtrace): --help (the same text as README.adoc's),
# --version (the Makefile's VERSION, also the library's), each command and
# each error (exact message and exit status); MEMTRACE_CHILDREN through a
# shell-script wrapper with the profiler; recording on demand by the API,
# by a signal and from MEMTRACE_START=0 (tests/progs/recording.c): which
# blocks print_trace and the gdb command know, their exact sites, the
# "recording since" line, and no false double free.
set -u
. "$(dirname "$0")/lib.sh"
mt=$build/memtrace
# Without the quarantine and redzones: tests/progs/recording.c checks that
# a block freed while recording is on has its address handed out again at
# once, to a block allocated while off (untraced, so of another size with
# a redzone).
export MEMTRACE_QUARANTINE=0 MEMTRACE_REDZONE=0
prog=$tests/recording
src=tests/progs/recording.c

check_eq() { # NAME GOT WANT
    if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "got '$2', want '$3'"; fi
}
check_grep() { # NAME FILE FIXED-STRING
    if grep -qF -- "$3" "$2"; then pass "$1"; else fail "$1" "'$3' not in $(head -c 3000 "$2")"; fi
}
check_no_grep() { # NAME FILE FIXED-STRING
    if grep -qF -- "$3" "$2"; then fail "$1" "'$3' in $(grep -F -- "$3" "$2" | head -3)"; else pass "$1"; fi
}

# check_error NAME STATUS MESSAGE COMMAND...: COMMAND prints exactly
# MESSAGE on stderr, nothing on stdout, and exits with STATUS.
check_error() {
    local name=$1 want_rc=$2 want=$3 rc=0
    shift 3
    "$@" >"$work/out" 2>"$work/err" </dev/null || rc=$?
    check_eq "$name: exit status" "$rc" "$want_rc"
    check_eq "$name: message" "$(cat "$work/err")" "$want"
    check_eq "$name: no output" "$(cat "$work/out")" ""
}

version=$(sed -n 's/^VERSION := //p' "$root/Makefile")

# ---------------------------------------------------------------- --help, --version
rc=0
"$mt" --help >"$work/help" 2>&1 || rc=$?
check_eq "--help: exit status" "$rc" 0
check_eq "--help: first line" "$(head -1 "$work/help")" \
    "Usage: memtrace run [--profile] [--leak-check] [--output FILE] [--no-children]"
# README.adoc shows the text in a block after "// memtrace --help".
awk '/^\/\/ memtrace --help$/ { on = 1; next } on && /^----$/ { if (++n == 2) exit; next } on && n == 1' \
    "$root/README.adoc" >"$work/help.readme"
if diff "$work/help.readme" "$work/help" >"$work/help.diff"; then
    pass "--help: the text README.adoc shows"
else
    fail "--help: the text README.adoc shows" "$(head -20 "$work/help.diff")"
fi
check_eq "--version" "$("$mt" --version)" "memtrace $version"
# Each command answers --help and -h with the same text, wherever an
# option of its own would stand (gdb: the first word; later ones are gdb's).
for args in "run --help" "run -h" "run --profile --help" "gdb --help" "gdb -h" \
    "core --help" "core -h"; do
    rc=0
    # shellcheck disable=SC2086
    "$mt" $args >"$work/help.cmd" 2>&1 </dev/null || rc=$?
    check_eq "$args: exit status" "$rc" 0
    if cmp -s "$work/help" "$work/help.cmd"; then
        pass "$args: the --help text"
    else
        fail "$args: the --help text" "$(head -3 "$work/help.cmd")"
    fi
done
check_eq "Makefile VERSION is set" "$([ -n "$version" ] && echo yes)" yes

# ---------------------------------------------------------------- run
"$mt" run "$prog" api >"$work/run.out" 2>"$work/run.err"
check_eq "run: exit status" "$?" 0
check_grep "run: the library's version (memtrace_version)" "$work/run.out" "@@ version $version"
check_grep "run: traced (print_trace knows the first block)" "$work/run.err" \
    "  #0 main at $(at $src before)"
rc=0; "$mt" run sh -c 'exit 7' || rc=$?
check_eq "run: the program's exit status" "$rc" 7
# --leak-check: MEMTRACE_LEAK_CHECK=1, the report, its summary line last
# and status 23 (tests/progs/leaks.c loses 100 + 48 + 64 bytes directly,
# 3 x 32 + 64 behind them, 300 held only by an interior pointer; the C
# library keeps blocks of its own).
rc=0; "$mt" run --leak-check "$tests/leaks" >/dev/null 2>"$work/leak_flag.err" || rc=$?
check_eq "run --leak-check: exit status 23" "$rc" 23
check_eq "run --leak-check: the summary line" \
    "$(tail -1 "$work/leak_flag.err" | sed 's/, [0-9]* bytes still reachable in [0-9]* blocks$//')" \
    "memtrace: leaks: 212 bytes definitely lost in 3 blocks, 160 bytes indirectly lost in 4 blocks, 300 bytes possibly lost in 1 blocks"
check_eq "run --leak-check: MEMTRACE_LEAK_CHECK=1" \
    "$("$mt" run --leak-check --profile sh -c 'echo "$MEMTRACE_LEAK_CHECK"')" 1
check_eq "run: tracer preloaded" "$("$mt" run sh -c 'echo "$LD_PRELOAD"')" "$build/libmemtrace.so"
check_eq "run --profile: profiler preloaded" "$("$mt" run --profile sh -c 'echo "$LD_PRELOAD"')" \
    "$build/libmemtrace-profiler.so"
check_eq "run: LD_PRELOAD kept after memtrace" \
    "$(LD_PRELOAD=$build/tests/libdl_sites.so "$mt" run sh -c 'echo "$LD_PRELOAD"')" \
    "$build/libmemtrace.so:$build/tests/libdl_sites.so"
check_eq "run: PROG found on PATH" "$(PATH=$tests:$PATH "$mt" run recording api 2>/dev/null | grep '@@ start')" \
    "@@ start 1"
MEMTRACE_INTERVAL_MS=0 "$mt" run --profile --output "$work/report.%p" "$prog" api >/dev/null 2>&1
ls "$work"/report.* >"$work/reports" 2>/dev/null
check_eq "run --profile --output: one report file" "$(wc -l <"$work/reports")" 1
check_grep "run --profile --output: the exit report in it" "$(head -1 "$work/reports")" \
    "memtrace: exit report, pid "
rm -f "$work"/report.*
"$mt" run --profile --output="$work/eq.txt" true
check_grep "run --output=FILE" "$work/eq.txt" "memtrace: exit report, pid "

# ---------------------------------------------------------------- errors
printf 'int main(void) { return 0; }\n' >"$work/static.c"
${CC:-gcc} -static -o "$work/static" "$work/static.c"
${CC:-gcc} -static-pie -o "$work/static_pie" "$work/static.c"
printf 'not a program\n' >"$work/plain"
mkdir -p "$work/bin"
cp "$mt" "$build/libmemtrace.so" "$build/memtrace.py" "$work/bin/"
try="try 'memtrace --help'"
check_error "no command" 2 "memtrace: no command given; $try" "$mt"
check_error "unknown command" 2 "memtrace: unknown command 'trace'; $try" "$mt" trace ls
check_error "run: no program" 2 "memtrace: run: no program given; $try" "$mt" run --profile
check_error "run: unknown option" 2 "memtrace: run: unknown option '--children'; $try" \
    "$mt" run --children ls
check_error "run: --output without --profile" 2 \
    "memtrace: run: --output is where the profiler's reports go; add --profile; $try" \
    "$mt" run --output x ls
check_error "run: --output without FILE" 2 "memtrace: run: --output needs a FILE; $try" \
    "$mt" run --profile --output
check_error "run: missing program" 127 "memtrace: no-such-prog: no such program" \
    "$mt" run no-such-prog
check_error "run: missing program by path" 127 "memtrace: $work/none: no such program" \
    "$mt" run "$work/none"
check_error "run: not executable" 126 "memtrace: $work/plain: not an executable file" \
    "$mt" run "$work/plain"
check_error "run: a directory" 126 "memtrace: $work: not an executable file" "$mt" run "$work"
check_error "run: static program" 1 \
    "memtrace: $work/static is statically linked: nothing can be preloaded into it, so memtrace cannot trace it" \
    "$mt" run "$work/static"
check_error "run: static-pie program" 1 \
    "memtrace: $work/static_pie is statically linked: nothing can be preloaded into it, so memtrace cannot trace it" \
    "$mt" run "$work/static_pie"
check_error "gdb: static program" 1 \
    "memtrace: $work/static is statically linked: nothing can be preloaded into it, so memtrace cannot trace it" \
    "$mt" gdb -batch -- "$work/static"
check_error "run: missing library (MEMTRACE_LIB)" 1 \
    "memtrace: cannot find nope.so (looked for $work/nope.so)" \
    env MEMTRACE_LIB="$work/nope.so" "$mt" run true
check_error "run --profile: missing profiler library" 1 \
    "memtrace: cannot find libmemtrace-profiler.so (looked for $work/bin/libmemtrace-profiler.so)" \
    "$work/bin/memtrace" run --profile true
check_error "gdb: options without --" 2 \
    "memtrace: gdb: put gdb's options before -- and the program after it; $try" \
    "$mt" gdb -batch "$prog"
check_error "gdb: no program" 2 "memtrace: gdb: no program given; $try" "$mt" gdb -batch --
check_error "gdb: missing program" 127 "memtrace: no-such-prog: no such program" \
    "$mt" gdb -batch -- no-such-prog
check_error "gdb: gdb missing" 1 \
    "memtrace: cannot find gdb ($work/no-gdb); install it, or set GDB to one" \
    env GDB="$work/no-gdb" "$mt" gdb -batch -- "$prog"
check_error "core: arguments" 2 "memtrace: core: give PROG and CORE; $try" "$mt" core "$prog"
check_error "core: one word after --" 2 "memtrace: core: give PROG and CORE after --; $try" \
    "$mt" core -batch -- "$prog"
check_error "core: three words after --" 2 "memtrace: core: give PROG and CORE after --; $try" \
    "$mt" core -- "$prog" "$work/core.none" x
check_error "core: missing core file" 1 "memtrace: $work/core.none: no such core file" \
    "$mt" core "$prog" "$work/core.none"

# ---------------------------------------------------------------- gdb, core
# gdb's options pass through before --; the answers name the exact sites,
# and end with the recording line. gcore writes the core file for `core`.
timeout 120 "$mt" gdb -batch -nx -ex "break while_off" -ex "break all_allocated" \
    -ex "run api >$work/gdb.prog" -ex "echo @@cmd off\\n" -ex "memtrace stats" -ex continue -ex up \
    -ex "echo @@cmd before\\n" -ex "memtrace before" \
    -ex "echo @@cmd during\\n" -ex "memtrace during" \
    -ex "echo @@cmd after\\n" -ex "memtrace after" \
    -ex "echo @@cmd version\\n" -ex "memtrace version" \
    -ex "echo @@cmd leaks\\n" -ex "memtrace leaks" \
    -ex "echo @@cmd refs\\n" -ex "memtrace refs after" \
    -ex "gcore $work/core" -ex kill -- "$prog" api >"$work/gdb.out" 2>&1
cmd_block() { awk -v v="$1" '$0 == "@@cmd " v { on = 1; next } /^@@cmd / { on = 0 } on' "$2"; }
cmd_block before "$work/gdb.out" >"$work/gdb.before"
cmd_block during "$work/gdb.out" >"$work/gdb.during"
cmd_block after "$work/gdb.out" >"$work/gdb.after"
since_re='^memtrace: recording since allocation #[0-9]+ \([0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} UTC\); blocks allocated while it was off are unknown$'
check_eq "gdb: while off, memtrace stats ends with the recording-off line" \
    "$(cmd_block off "$work/gdb.out" | grep '^memtrace: recording' | sed -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} UTC/TIME/')" \
    "memtrace: recording off since TIME (after allocation #4); blocks allocated since are unknown"
check_grep "gdb: memtrace before: the 11-byte block" "$work/gdb.before" "start of a 11-byte block allocated by thread 1"
check_grep "gdb: memtrace before: its site" "$work/gdb.before" "  #0 main at $(at $src before)"
check_eq "gdb: memtrace before: ends with the recording line" \
    "$(tail -1 "$work/gdb.before" | grep -cE "$since_re")" 1
check_grep "gdb: memtrace during: not live (allocated while off)" "$work/gdb.during" \
    "not a live heap block; freed blocks that covered it, newest first:"
check_grep "gdb: memtrace during: the block freed there while recording" "$work/gdb.during" \
    "  #0 main at $(at $src reused)"
check_grep "gdb: memtrace after: the 44-byte block" "$work/gdb.after" "start of a 44-byte block allocated by thread 1"
check_grep "gdb: memtrace after: its site" "$work/gdb.after" "  #0 main at $(at $src after)"
after_seq=$(sed -n 's/.*start of a 44-byte block allocated by thread 1 (allocation #\([0-9]*\)).*/\1/p' "$work/gdb.after")
check_eq "gdb: recording since the first block after turning it on" \
    "$(grep -oE '^memtrace: recording since allocation #[0-9]+' "$work/gdb.after" | grep -oE '[0-9]+$')" \
    "$after_seq"
check_eq "gdb: memtrace version (memtrace_state)" \
    "$(cmd_block version "$work/gdb.out" | head -1)" "memtrace: library version $version"
cmd_block leaks "$work/gdb.out" >"$work/gdb.leaks"
check_eq "gdb: memtrace leaks starts with the recording line" \
    "$(head -1 "$work/gdb.leaks" | grep -cE "$since_re")" 1
check_eq "gdb: memtrace leaks ends with its summary line" \
    "$(tail -1 "$work/gdb.leaks" | grep -c '^memtrace: leaks: .* bytes still reachable in ')" 1
check_eq "gdb: memtrace refs ends with the recording line" \
    "$(cmd_block refs "$work/gdb.out" | grep -A1 -E '^memtrace: refs: [0-9]+ places?$' | tail -1 |
       grep -cE "$since_re")" 1
if [ -s "$work/core" ]; then
    printf 'up\nmemtrace after\n' | timeout 120 "$mt" core "$prog" "$work/core" >"$work/core.out" 2>&1
    check_grep "core: memtrace after: its site" "$work/core.out" "  #0 main at $(at $src after)"
    check_eq "core: the recording line" "$(grep -cE "$since_re" "$work/core.out")" 1
    # gdb's options before PROG CORE, with or without --: scripted triage.
    for dd in -- ""; do
        # shellcheck disable=SC2086
        timeout 120 "$mt" core -batch -nx -ex up -ex "memtrace version" -ex "memtrace after" \
            $dd "$prog" "$work/core" >"$work/core_opts.out" 2>"$work/core_opts.err"
        echo "rc $?" >>"$work/core_opts.out"
        check_eq "core -batch -ex ... ${dd:+-- }PROG CORE: the answers" \
            "$(grep -E '^(memtrace: (library|0x)|  #0 |rc )' "$work/core_opts.out" |
               sed -e 's/^memtrace: 0x[0-9a-f]*:/memtrace: ADDR:/' -e 's/^\(  #0 .*:\)[0-9]*$/\1/')" \
            "memtrace: library version $version
memtrace: ADDR: start of a 44-byte block allocated by thread 1 (allocation #$after_seq)
  #0 main at $(at $src after)
rc 0"
    done
else
    fail "core" "gcore wrote no core file: $(tail -3 "$work/gdb.out")"
fi
# Without --: PROG ARGS..., gdb's commands from stdin.
printf 'run\n' | timeout 120 "$mt" gdb "$prog" api >"$work/gdb2.out" 2>&1
check_grep "gdb PROG ARGS: runs PROG with its arguments, traced" "$work/gdb2.out" "@@ was 1"

# ---------------------------------------------------------------- MEMTRACE_CHILDREN
# A wrapper script in the manner of a pyenv shim: bash runs two children,
# then execs the real program.
cat >"$work/shim" <<EOF
#!/bin/bash
/bin/true
ls / >/dev/null
exec "$prog" "\$@"
EOF
chmod +x "$work/shim"
mkdir "$work/all" "$work/one"
MEMTRACE_INTERVAL_MS=0 "$mt" run --profile --output "$work/all/r.%p" "$work/shim" api >/dev/null 2>&1
check_eq "children traced by default: a report per process (true, ls, the program)" \
    "$(ls "$work/all" | wc -l)" 3
MEMTRACE_INTERVAL_MS=0 "$mt" run --profile --no-children --output "$work/one/r.%p" "$work/shim" api \
    >"$work/one.out" 2>"$work/one.err"
check_eq "--no-children through a shim: one report file" "$(ls "$work/one" | wc -l)" 1
check_grep "--no-children: the program the shim execs is traced" "$work/one.err" \
    "  #0 main at $(at $src after)"
# The folded file without %p belongs to the process the run starts: with
# --no-children that is the program the shim execs (the same process), which
# must write it under the name given, not as a child's NAME.PID.
mkdir "$work/fold"
MEMTRACE_INTERVAL_MS=0 MEMTRACE_FOLDED="$work/fold/f" "$mt" run --profile --no-children \
    "$work/shim" api >/dev/null 2>&1
check_eq "--no-children through a shim: the folded files under the name given" \
    "$(cd "$work/fold" && echo *)" "f f.peak"
check_eq "--no-children: the shim's children are not" \
    "$("$mt" run --no-children sh -c "$prog api; true" 2>&1 | head -1)" "recording: not under memtrace"
check_eq "--no-children: exec from a child is not traced either" \
    "$("$mt" run --no-children sh -c "(exec $prog api); true" 2>&1 | head -1)" "recording: not under memtrace"
printf 'void dummy(void);\nvoid dummy(void) {}\n' >"$work/other.c"
${CC:-gcc} -shared -fPIC -o "$work/libother.so" "$work/other.c"
check_eq "--no-children: other LD_PRELOAD entries stay, memtrace's go" \
    "$(LD_PRELOAD="$work/libother.so" "$mt" run --no-children sh -c 'echo "[$LD_PRELOAD]"')" \
    "[$work/libother.so]"
check_eq "--no-children: LD_PRELOAD goes when only memtrace was in it" \
    "$("$mt" run --no-children sh -c 'echo "${LD_PRELOAD-unset} $MEMTRACE_CHILDREN"')" "unset 0"
# /proc/PID/environ shows the environment's original area: the bytes the
# shortened LD_PRELOAD no longer uses must not show as an entry of their own.
check_eq "--no-children: /proc/PID/environ shows no leftover of LD_PRELOAD" \
    "$(LD_PRELOAD="$work/libother.so" "$mt" run --no-children sh -c \
        'tr "\0" "\n" </proc/$$/environ | grep -c memtrace\.so')" 0
check_eq "--no-children: an exec of the process itself stays traced" \
    "$("$mt" run --no-children sh -c "exec $prog api" 2>/dev/null | grep '@@ start')" "@@ start 1"
# An exec of the process itself with an environment that names LD_PRELOAD
# twice, a long list first: the copy with memtrace in front was sized for
# the last entry alone and overran it (the MEMTRACE_CHILDREN=0 entry after
# it, then whatever mapping followed). ld.so reads the last entry.
cat >"$work/dup_preload.c" <<'EOF_C'
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
extern char **environ;
int main(int argc, char **argv)
{
    if (argc > 1) {
        printf("traced %d children %s\n", dlsym(RTLD_DEFAULT, "memtrace_recording") != NULL,
               getenv("MEMTRACE_CHILDREN") ? getenv("MEMTRACE_CHILDREN") : "unset");
        return 0;
    }
    static char big[20000];
    memset(big, 'x', sizeof big - 1);
    memcpy(big, "LD_PRELOAD=", 11);
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 3, sizeof *env);
    memcpy(env, environ, n * sizeof *env);
    env[n] = big;
    env[n + 1] = "LD_PRELOAD=";
    char *args[] = { argv[0], "again", NULL };
    execve("/proc/self/exe", args, env);
    return 1;
}
EOF_C
${CC:-gcc} -o "$work/dup_preload" "$work/dup_preload.c" -ldl
check_eq "--no-children: an exec of itself with LD_PRELOAD twice: traced, MEMTRACE_CHILDREN=0" \
    "$("$mt" run --no-children "$work/dup_preload" 2>/dev/null)" "traced 1 children 0"
check_eq "MEMTRACE_CHILDREN=1 (the default): children traced" \
    "$("$mt" run sh -c "$prog api; true" 2>/dev/null | grep '@@ start')" "@@ start 1"

# ---------------------------------------------------------------- recording on demand
# Two toggles racing, one on and one off: the recording words (what gdb
# and every answer read) end up saying what the phase says.
check_eq "racing toggles: the recording words agree with the phase" \
    "$("$mt" run "$tests/recording_race" 2>&1)" "@@ disagree 0"
# check_recording NAME START: the program's stdout and stderr in
# $work/NAME.out and .err; START is 1 when recording was on from the start.
check_recording() {
    local name=$1 start=$2 out=$work/$1.out err=$work/$1.err
    local before during during2 after
    before=$(awk '$2 == "before" { print $3 }' "$out")
    during=$(awk '$2 == "during" { print $3 }' "$out")
    during2=$(awk '$2 == "during2" { print $3 }' "$out")
    after=$(awk '$2 == "after" { print $3 }' "$out")
    check_eq "$name: exit status" "$(cat "$work/$name.rc")" 0
    check_eq "$name: the block freed while on is reused while off" \
        "$(awk '$2 == "same" { print $3 }' "$out")" 1
    if [ "$start" = 1 ]; then
        check_eq "$name: block before: known" "$(block_of "$before" "$err" | head -1)" \
            "memtrace: $before: start of a 11-byte block allocated by thread 1 (allocation #2)"
        check_eq "$name: block before: its site" \
            "$(block_of "$before" "$err" | sed -n 2p | grep -cF "  #0 main at $(at $src before)")" 1
    else
        check_eq "$name: block before: unknown" "$(block_of "$before" "$err" | head -1)" \
            "memtrace: $before: not a live heap block; the nearest live blocks and the newest freed ones within 4096 bytes:"
    fi
    check_eq "$name: block allocated while off: unknown" "$(grep -F "memtrace: $during2:" "$err")" \
        "memtrace: $during2: not a live heap block; the nearest live blocks and the newest freed ones within 4096 bytes:"
    check_eq "$name: block allocated while off at a freed address: not live" \
        "$(grep -F "memtrace: $during:" "$err" | grep -c 'not a live heap block')" 1
    local head
    head=$(block_of "$after" "$err" | head -1)
    check_eq "$name: block after: known" "${head%#*}" \
        "memtrace: $after: start of a 44-byte block allocated by thread 1 (allocation "
    check_grep "$name: block after: its site" "$err" "  #0 main at $(at $src after)"
    local seq=${head##*#}
    seq=${seq%)}
    check_eq "$name: every answer ends with the recording line" "$(grep -cE "$since_re" "$err")" 5
    local gone
    gone=$(awk '$2 == "gone" { print $3 }' "$out")
    check_eq "$name: a recorded block freed while off is forgotten" \
        "$(grep -F "memtrace: $gone:" "$err" | grep -c 'start of a 555-byte block')" 0
    check_eq "$name: recording since the first block after turning it on" \
        "$(grep -oE '^memtrace: recording since allocation #[0-9]+' "$err" | sort -u | grep -oE '[0-9]+$')" \
        "$seq"
    check_no_grep "$name: free of the block allocated while off: no double free" "$err" "double free"
    check_no_grep "$name: no bad free reported at all" "$err" "memtrace: free of"
    check_grep "$name: the program ran to its end" "$err" "@@ done"
}

run_rec() { # NAME ENV... -- ARGS
    local name=$1 rc=0
    shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    env "${envs[@]}" "$mt" run "$prog" "$@" >"$work/$name.out" 2>"$work/$name.err" || rc=$?
    echo "$rc" >"$work/$name.rc"
}

run_rec api MEMTRACE_BAD_FREE=report -- api
check_eq "api: what memtrace_set_recording returned" \
    "$(grep -E '^@@ (start|was|now)' "$work/api.out" | tr '\n' ' ')" \
    "@@ start 1 @@ was 1 @@ now 0 @@ was 0 @@ now 1 "
check_recording api 1

for sig in USR2 SIGUSR2 12; do
    run_rec "signal_$sig" MEMTRACE_TOGGLE_SIGNAL=$sig -- signal
    check_eq "signal $sig: recording off, then on" \
        "$(grep -E '^@@ (start|now)' "$work/signal_$sig.out" | tr '\n' ' ')" "@@ start 1 @@ now 0 @@ now 1 "
    check_recording "signal_$sig" 1
done

run_rec start0 MEMTRACE_START=0 -- api
check_eq "MEMTRACE_START=0: starts off, turned on by the API" \
    "$(grep -E '^@@ (start|was|now)' "$work/start0.out" | tr '\n' ' ')" \
    "@@ start 0 @@ was 0 @@ now 0 @@ was 0 @@ now 1 "
check_recording start0 0

for bad in BOGUS KILL 0 99999; do
    run_rec "badsig_$bad" MEMTRACE_TOGGLE_SIGNAL=$bad -- api
    check_eq "MEMTRACE_TOGGLE_SIGNAL=$bad: one warning" "$(grep -c '^memtrace: MEMTRACE_TOGGLE' "$work/badsig_$bad.err")" 1
    check_grep "MEMTRACE_TOGGLE_SIGNAL=$bad: the warning" "$work/badsig_$bad.err" \
        "memtrace: MEMTRACE_TOGGLE_SIGNAL=\"$bad\" is not a signal that can be caught; no signal turns recording on and off"
    check_eq "MEMTRACE_TOGGLE_SIGNAL=$bad: the program runs on" "$(cat "$work/badsig_$bad.rc")" 0
done
# Signals memtrace must not take (faults, signals the program and the
# system rely on), by name and number, for both signal settings: one
# warning each, and a real segfault afterwards kills the program by SIGSEGV
# (139) instead of looping in memtrace's handler forever.
sig_refused() { # SETTING VALUE NAME LIB [VAR=VALUE...]
    local setting=$1 value=$2 name=$3 lib=$4 rc=0
    shift 4
    (ulimit -c 0; timeout 10 env LD_PRELOAD="$lib" "$@" "$setting=$value" "$prog" segv \
        >/dev/null 2>"$work/refused.err") 2>/dev/null || rc=$?
    local none="no signal turns recording on and off"
    [ "$setting" = MEMTRACE_SIGNAL ] && none="no signal asks for a report"
    local want="memtrace: $setting=\"$value\" is SIG$name, which the program and the system rely on; memtrace takes only USR1, USR2 or a real-time signal (RTMIN+n); $none"
    case $name in KILL|STOP) want="memtrace: $setting=\"$value\" is not a signal that can be caught; $none" ;; esac
    check_eq "$setting=$value ($(basename "$lib" .so)): one warning, a real segfault then dies by SIGSEGV" \
        "$(grep -c '^memtrace: ' "$work/refused.err") $(grep '^memtrace: ' "$work/refused.err") $rc" \
        "1 $want 139"
}
for s in SEGV:11 BUS:7 FPE:8 ILL:4 TRAP:5 ABRT:6 SYS:31 KILL:9 STOP:19 CHLD:17 PIPE:13 \
         TERM:15 INT:2 HUP:1 QUIT:3 ALRM:14 CONT:18 TSTP:20 XCPU:24 XFSZ:25 PROF:27; do
    name=${s%:*} number=${s#*:}
    for value in "$name" "$number"; do
        sig_refused MEMTRACE_TOGGLE_SIGNAL "$value" "$name" "$build/libmemtrace.so"
        sig_refused MEMTRACE_SIGNAL "$value" "$name" "$build/libmemtrace-profiler.so" \
            MEMTRACE_INTERVAL_MS=0
    done
done
sig_refused MEMTRACE_TOGGLE_SIGNAL sigsegv SEGV "$build/libmemtrace-profiler.so" MEMTRACE_INTERVAL_MS=0
sig_refused MEMTRACE_SIGNAL SIGBUS BUS "$build/libmemtrace-profiler.so" MEMTRACE_INTERVAL_MS=0
# What memtrace takes: USR1, USR2 and the real-time signals, in any of the
# spellings, without a word.
for value in USR1 usr2 SIGUSR2 10 RTMIN RTMIN+1 rtmax-2 RTMAX; do
    for s in MEMTRACE_TOGGLE_SIGNAL:libmemtrace MEMTRACE_SIGNAL:libmemtrace-profiler; do
        rc=0
        (ulimit -c 0; timeout 10 env LD_PRELOAD="$build/${s#*:}.so" MEMTRACE_INTERVAL_MS=0 \
            "${s%:*}=$value" "$prog" segv >/dev/null 2>"$work/taken.err") 2>/dev/null || rc=$?
        check_eq "${s%:*}=$value: taken without a word" \
            "$(grep -v 'MEMTRACE_INTERVAL_MS: a profiler setting' "$work/taken.err") $rc" " 139"
    done
done
# Both settings on one signal: the report's handler keeps it, the toggle
# says so once, and the signal still asks for a report.
rm -f "$work/both.out"
timeout 20 env LD_PRELOAD="$build/libmemtrace-profiler.so" MEMTRACE_INTERVAL_MS=0 \
    MEMTRACE_SIGNAL=USR2 MEMTRACE_TOGGLE_SIGNAL=USR2 MEMTRACE_OUTPUT="$work/both.out" \
    "$prog" signal >/dev/null 2>"$work/both.err"
check_eq "MEMTRACE_SIGNAL and MEMTRACE_TOGGLE_SIGNAL both USR2: one warning" \
    "$(grep '^memtrace: MEMTRACE' "$work/both.err")" \
    'memtrace: MEMTRACE_TOGGLE_SIGNAL="USR2": that signal has a handler already (MEMTRACE_SIGNAL'"'"'s or a library'"'"'s); no signal turns recording on and off'
check_eq "MEMTRACE_SIGNAL and MEMTRACE_TOGGLE_SIGNAL both USR2: the signal made a report" \
    "$(grep -c '^memtrace: report 1 (signal)' "$work/both.out")" 1
# Out of the real-time range, or RTMIN+-3 (SIGRTMIN - 3: SIGSYS): no signal.
for value in RTMIN+31 RTMAX-31 RTMIN+-3 RTMAX-+1 RTMIN+ 65; do
    rc=0
    timeout 10 env LD_PRELOAD="$build/libmemtrace-profiler.so" MEMTRACE_INTERVAL_MS=0 \
        MEMTRACE_SIGNAL="$value" "$prog" none >/dev/null 2>"$work/badrt.err" || rc=$?
    check_eq "MEMTRACE_SIGNAL=$value: no signal, one warning, the program runs on" \
        "$(grep '^memtrace: MEMTRACE' "$work/badrt.err") $rc" \
        "memtrace: MEMTRACE_SIGNAL=\"$value\" is not a signal that can be caught; no signal asks for a report 0"
done
run_rec badstart MEMTRACE_START=2 -- api
check_grep "MEMTRACE_START=2: the warning" "$work/badstart.err" \
    'memtrace: MEMTRACE_START="2" is not a whole number from 0 to 1; using 1'

# Never off: no recording line anywhere.
run_rec never -- none
check_eq "recording never off: the program ran" "$(cat "$work/never.rc")" 0
check_eq "recording never off: no recording line" "$(grep -c 'memtrace: recording' "$work/never.err")" 0
check_grep "recording never off: the block allocated in between is known" "$work/never.err" \
    "  #0 main at $(at $src during2)"

# The leak check at exit says it first (its summary line stays last).
MEMTRACE_START=0 MEMTRACE_LEAK_CHECK=1 "$mt" run "$prog" api >/dev/null 2>"$work/leak.err"
check_eq "leak check: the recording line comes first" \
    "$(grep -B1 '^memtrace: leak check' "$work/leak.err" | head -1 | grep -cE "$since_re")" 1
check_eq "leak check: the summary line is last" \
    "$(tail -1 "$work/leak.err" | grep -c '^memtrace: leaks: 0 bytes definitely lost')" 1

# The profiler's reports say it too.
MEMTRACE_START=0 MEMTRACE_INTERVAL_MS=0 "$mt" run --profile --output "$work/prof.txt" "$prog" api >/dev/null 2>&1
check_eq "profiler: the exit report's second line" \
    "$(sed -n 2p "$work/prof.txt" | grep -cE "$since_re")" 1

finish launcher
