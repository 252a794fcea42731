#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# memtrace: run a program under libmemtrace.so or libmemtrace-profiler.so,
# with or without gdb (usage() below is the --help text, README.adoc's
# "The launcher" shows it). @VERSION@ is the Makefile's VERSION, put in by
# cli/cli.mk when it copies this file to build/memtrace.
#
# Finds the libraries and the gdb helper next to itself (the build
# directory) or where `make install` put them (the LIBDIR and
# DATADIR/memtrace it writes in below); MEMTRACE_LIB names the tracer
# library instead.
#
# Exit status: the program's own (the library's after an error report or
# leaks found: MEMTRACE_ERROR_EXITCODE, 23), or 2 for a usage error, 127 when the
# program is not found, 126 when it is not an executable file, 1 when it
# cannot be traced (statically linked, a library or gdb missing).
set -e
version=@VERSION@
self=$0
case $self in */*) ;; *) self=$(command -v -- "$self") ;; esac
here=$(cd "$(dirname "$self")" && pwd)
# `make install` writes the installed directories here.
libdir=@MEMTRACE_LIBDIR@
datadir=@MEMTRACE_DATADIR@
case $libdir in @*) libdir=$here/../lib ;; esac
case $datadir in @*) datadir=$here/../share ;; esac
if [ -f "$here/libmemtrace.so" ] || [ -f "$here/libmemtrace-profiler.so" ]; then
    libdir=$here
    helper=$here/memtrace.py
else
    helper=$datadir/memtrace/memtrace.py
fi
# memtrace view's program (tools/view/, python3): beside the launcher in build/,
# else in DATADIR/memtrace/view.
viewer=$here/view/memtrace_view.py
[ -f "$viewer" ] || viewer=$datadir/memtrace/view/memtrace_view.py
# memtrace-export (memtrace export): next to this file, or installed.
libexecdir=@MEMTRACE_LIBEXECDIR@
case $libexecdir in @*) libexecdir=$here/../libexec/memtrace ;; esac
[ -f "$here/memtrace-export" ] && libexecdir=$here
# memtrace-symbolize, which reads ELF files for the launcher: next to this
# file, or installed.
symbolize=$here/memtrace-symbolize
[ -f "$symbolize" ] || symbolize=$libexecdir/memtrace-symbolize
# memtrace attach's program in gdb (cli/memtrace_attach.py): next to this
# file in build/, else in DATADIR/memtrace.
attacher=$here/memtrace_attach.py
[ -f "$attacher" ] || attacher=$datadir/memtrace/memtrace_attach.py

usage() {
    cat <<'EOF'
Usage: memtrace run [--profile] [--leak-check] [--output FILE] [--no-children]
                    [--record[=PATH]] [--check] PROG [ARGS...]
       memtrace gdb [GDB-OPTION...] -- PROG [ARGS...]
       memtrace gdb PROG [ARGS...]
       memtrace core [GDB-OPTION...] [--] PROG CORE
       memtrace attach [--profile] PID
       memtrace detach PID
       memtrace export --heaptrack|--json TIMELINE [-o OUT] [--sampled-ok]
       memtrace view FILE [--base OLD] [-o PAGE]
       memtrace top [--interval SECONDS] [--by live|allocs|temporary|growth]
                    [--batch] [-n COUNT] PID
       memtrace symbolize [FILE...]
       memtrace --help | --version      (also COMMAND --help, COMMAND -h)

Records where every heap block of PROG was allocated, to ask about any
pointer later: print_trace(ptr) in the program or from gdb, or gdb's
`memtrace EXPR` command, also on a core file.

Commands:
  run    run PROG under the tracer (libmemtrace.so) or, with --profile,
         the profiler (libmemtrace-profiler.so), without gdb
  gdb    start gdb on PROG with the `memtrace` command loaded and the
         tracer preloaded into PROG only (not into gdb); options before
         `--` go to gdb as they are, e.g.
           memtrace gdb -batch -ex run -ex bt -- ./prog arg
  core   start gdb on a core file of PROG with the `memtrace` command
         loaded; options before PROG go to gdb as they are, e.g.
           memtrace core -batch -ex 'memtrace leaks' -- ./prog core.1234
  attach load the tracer (with --profile, the profiler) into the running
         process PID with gdb and trace it from now on (blocks allocated
         before are unknown); then ask with gdb -p PID as on any process
  detach stop tracing PID (the library stays loaded, idle)
  export a timeline (run --record) as heaptrack's data file, for
         heaptrack_gui and heaptrack_print (OUT: TIMELINE.heaptrack.gz;
         .gz or .zst), or as the timeline JSON (OUT: TIMELINE.json)
  view   write one HTML page (PAGE, default FILE.html; opened from the
         disk, no network) from a timeline (run --record) or its JSON
         (memtrace export --json), a pprof profile (MEMTRACE_PPROF) or a
         folded-stacks file (MEMTRACE_FOLDED): memory over time, the top
         sites, flame graphs of the peak and the leaks; --base OLD: each
         site's change from the run OLD (of the same program)
  top    a live view of the traced process PID that never stops it: live
         bytes and blocks, allocations a second, growth, and the top call
         sites, refreshed every SECONDS (1); keys l a t g order the sites,
         q quits; --batch prints COUNT refreshes as text (top -b -n)
  symbolize  write text memtrace wrote with MEMTRACE_SYMBOLIZE=later
         (reports, folded files; FILE..., else standard input) back with
         each raw frame symbolized, as MEMTRACE_SYMBOLIZE=now writes it
Options of run:
  --profile       the profiler: reports of the call sites holding the most
                  live bytes, periodically and at exit
  --leak-check    report the blocks PROG can no longer reach at exit, and
                  exit with status 23 when there are any
                  (MEMTRACE_LEAK_CHECK=1)
  --output FILE   write the profiler's reports to FILE (MEMTRACE_OUTPUT;
                  %p is the process id, %e the program's name)
  --no-children   trace PROG only, not the programs it starts
                  (MEMTRACE_CHILDREN=0)
  --record[=PATH] record every allocation and free over time to PATH
                  (MEMTRACE_RECORD; default memtrace.%e.%p.rec: %e the
                  program's name, %p the process id); at the end a line
                  names the file and how to view it
  --check         a debugging run for heap errors: every block of at most
                  a page on a guard page (MEMTRACE_GUARD_SAMPLE=1), a
                  larger quarantine (MEMTRACE_QUARANTINE=67108864) and an
                  abort, for a core, at the first error detected
                  (MEMTRACE_ON_ERROR=abort); each unless already set

Settings are MEMTRACE_* environment variables (man memtrace, SETTINGS;
doc/settings.adoc), e.g. MEMTRACE_START=0 to start with recording off and
MEMTRACE_TOGGLE_SIGNAL=USR2 to turn it on and off with kill -USR2.

Exit status: PROG's own, but MEMTRACE_ERROR_EXITCODE (default 1) after
any memtrace: error report (a heap error or a bad free; --check aborts at
the first, status 134) when PROG's own status is 0, and 23 when --leak-check finds leaks (over the
errors' status); 2 for a usage error; 127 when PROG is not found, 126 when
it is not an executable file; 1 when it cannot be traced (a statically
linked PROG, one set-user-ID or set-group-ID to another user or group, a
missing library or gdb; a script given to gdb).
EOF
}

die() { # STATUS MESSAGE
    echo "memtrace: $2" >&2
    exit "$1"
}

usage_error() {
    die 2 "$1; try 'memtrace --help'"
}

# The 64- or 32-bit ELF FILE has a program interpreter (PT_INTERP): ld.so
# loads it, so it can preload. Status 0 yes, 1 no (statically linked, or
# static-pie: no ld.so to read LD_PRELOAD), 2 when FILE is not an ELF file
# this machine reads (a script: its interpreter is what gets preloaded).
# A file of the other byte order is answered 2, and fails to run anyway.
# memtrace-symbolize reads the file (--elf-info, tools/launcher_requests.h).
elf_has_interp() {
    [ -x "$symbolize" ] || die 1 "cannot find memtrace-symbolize (looked for $symbolize)"
    info=$("$symbolize" --elf-info "$1" 2>/dev/null) || return 2
    case $info in
    *"byte-order foreign"* | *"pt-interp unknown"*) return 2 ;;
    *"pt-interp yes"*) return 0 ;;
    *) return 1 ;;
    esac
}

# The file NAME that exec would run from PATH (not a shell builtin: exec
# runs the program even where the shell has a builtin of that name).
find_in_path() (
    IFS=:
    for d in ${PATH-}; do
        [ -n "$d" ] || d=.
        if [ -f "$d/$1" ] && [ -x "$d/$1" ]; then
            echo "$d/$1"
            exit 0
        fi
    done
    exit 1
)

# Checks PROG (as the user wrote it) before anything is started, and sets
# prog_path to the file that runs.
check_prog() {
    case $1 in
    */*) prog_path=$1 ;;
    *) prog_path=$(find_in_path "$1") || prog_path= ;;
    esac
    if [ -z "$prog_path" ] || [ ! -e "$prog_path" ]; then
        die 127 "$1: no such program"
    fi
    if [ -d "$prog_path" ] || [ ! -x "$prog_path" ]; then
        die 126 "$1: not an executable file"
    fi
    status=0
    elf_has_interp "$prog_path" || status=$?
    if [ "$status" = 1 ]; then
        die 1 "$1 is statically linked: nothing can be preloaded into it, so memtrace cannot trace it"
    fi
}

# PROG (checked by check_prog) starts with #!: the kernel runs its
# interpreter, which is what gdb must be given (gdb reads PROG as an
# executable and fails on every command after).
refuse_script() {
    [ "$(head -c2 "$prog_path" 2>/dev/null)" != "#!" ] ||
        die 1 "$1 is a script; give gdb the interpreter (e.g. memtrace gdb INTERPRETER $1)"
}

# Refuses PROG (checked by check_prog) when exec would make it a secure-exec
# process (AT_SECURE): set-user-ID to a user other than the caller's real
# one, or set-group-ID to a group other than the caller's real one, on a
# file system that honours the bits. ld.so then ignores LD_PRELOAD's paths
# and the library ignores MEMTRACE_*, so PROG would run untraced. A root
# caller is refused too for a program set-user-ID to another user: the
# kernel makes that exec secure as well.
refuse_setid() {
    [ -u "$prog_path" ] || [ -g "$prog_path" ] || return 0
    if command -v findmnt >/dev/null 2>&1; then
        case ,$(findmnt -rno OPTIONS --target "$prog_path" 2>/dev/null), in
        *,nosuid,*) return 0 ;;
        esac
    fi
    set -- "$1" "$(stat -Lc '%u %g' "$prog_path" 2>/dev/null)"
    if [ -u "$prog_path" ] && [ "${2% *}" != "$(id -ru)" ]; then
        die 1 "$1 is set-user-ID to another user: the system ignores LD_PRELOAD for it, so memtrace cannot trace it"
    fi
    if [ -g "$prog_path" ] && [ "${2#* }" != "$(id -rg)" ]; then
        die 1 "$1 is set-group-ID to another group: the system ignores LD_PRELOAD for it, so memtrace cannot trace it"
    fi
}

check_lib() {
    [ -f "$1" ] || die 1 "cannot find $(basename "$1") (looked for $1)"
}

# Sets preload to the name LIB goes into LD_PRELOAD by. ld.so splits
# LD_PRELOAD at spaces and colons, so a LIB whose path holds one (memtrace
# in "My Projects") would not be preloaded and the program would run
# untraced: it is preloaded through a symbolic link of the same name in a
# directory of this user's whose path has none, $XDG_RUNTIME_DIR/memtrace
# or else /tmp/memtrace-UID, one per library directory (named by its
# path's checksum). The link stays: the programs the traced one starts
# preload it too. Status 1 and one line when there is no such directory
# (not this user's, a link, or writable by others).
preload_for() { # LIB
    preload=$1
    case $1 in *[[:space:]:]*) ;; *) return 0 ;; esac
    local top=${XDG_RUNTIME_DIR:-} sum dir link
    case $top in /*[[:space:]:]* | '' | [!/]*) top=/tmp/memtrace-$(id -u) ;; *) top=$top/memtrace ;; esac
    sum=$(printf '%s' "$(dirname -- "$1")" | cksum | cut -d' ' -f1)
    dir=$top/$sum
    link=$dir/$(basename -- "$1")
    (umask 077 && mkdir -p -- "$dir") 2>/dev/null || true
    if [ -d "$top" ] && [ ! -L "$top" ] && [ -O "$top" ] && [ -d "$dir" ] && [ ! -L "$dir" ] &&
        [ -O "$dir" ] && [ -z "$(find "$top" "$dir" -maxdepth 0 -perm /022 2>/dev/null)" ] &&
        ln -sfn -- "$1" "$link.$$" 2>/dev/null && mv -Tf -- "$link.$$" "$link" 2>/dev/null; then
        preload=$link
        return 0
    fi
    rm -f -- "$link.$$" 2>/dev/null || true
    die 1 "cannot preload $1: LD_PRELOAD cannot hold a path with a space or a colon, and $top is not a directory of this user's only to put a link to it in"
}

check_gdb() {
    command -v -- "${GDB:-gdb}" >/dev/null 2>&1 ||
        die 1 "cannot find gdb (${GDB:-gdb}); install it, or set GDB to one"
}

# proc_state CMD PID: refuses (one line, status 1, the process untouched)
# a process that gdb is not to call into: exited (a zombie: no memory
# left, only its status), stopped (SIGSTOP, job control: its user holds
# it still, and gdb's calls would run it), or traced by another program
# (one tracer at a time). From /proc, no ptrace: the state letter follows
# the last ") " of each thread's stat (the name before may hold
# anything). A process stopped after this check is attached all the same
# and stays stopped (cli/memtrace_attach.py's signal handling).
proc_state() {
    states=$(cat "/proc/$2"/task/*/stat 2>/dev/null | sed -n 's/.*) \(.\) .*/\1/p' | tr -d '\n')
    [ -n "$states" ] || die 1 "$1: no process $2"
    case $states in
    *[!ZX]*) ;;
    *) die 1 "$1: process $2 has exited (a zombie, not yet waited for by its parent): there is nothing to trace" ;;
    esac
    tracer=$(cat "/proc/$2"/task/*/status 2>/dev/null |
        awk '$1 == "TracerPid:" && $2 != 0 { print $2; exit }')
    [ -z "$tracer" ] ||
        die 1 "$1: process $2 is traced by process $tracer already (a debugger, strace: one tracer at a time); it was left as it was"
    case $states in
    *[Tt]*) die 1 "$1: process $2 is stopped (SIGSTOP, job control): let it run (kill -CONT $2) and $1 again; it was left as it was" ;;
    esac
}

# memtrace attach/detach (attach_pid CMD PID PROFILE). The checks that
# need no ptrace come first, each with one line and status 1, the target
# untouched; then gdb attaches, picks a thread stopped where it holds no
# allocator or loader lock, and calls dlopen and memtrace_attach (or
# memtrace_detach) in it (cli/memtrace_attach.py; src/runtime/attach.c).
attach_pid() {
    case $2 in
    '' | *[!0-9]*) usage_error "$1: '$2' is not a process id" ;;
    esac
    pid=$2
    { [ "$pid" != 0 ] && [ -d "/proc/$pid" ]; } || die 1 "$1: no process $pid"
    proc_state "$1" "$pid"
    maps=$(cat "/proc/$pid/maps" 2>/dev/null) && [ -n "$maps" ] ||
        die 1 "$1: not permitted to trace process $pid (another user's: run as that user, or root)"
    # Yama: 1 lets gdb try (the process may have allowed it with
    # PR_SET_PTRACER), 2 is for root only, 3 for nobody.
    scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
    if [ "$scope" = 3 ] || { [ "$scope" = 2 ] && [ "$(id -u)" != 0 ]; }; then
        die 1 "$1: not permitted to trace process $pid: kernel.yama.ptrace_scope is $scope (attaching needs 0 or 1, or root for 2)"
    fi
    loaded=$(printf '%s\n' "$maps" | awk '$6 ~ /\/libmemtrace[^\/]*\.so$/ { print $6; exit }')
    if [ "$1" = attach ]; then
        if [ -n "$loaded" ] && tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null |
            grep -q '^LD_PRELOAD=.*libmemtrace'; then
            die 1 "attach: process $pid is traced by memtrace already ($(basename "$loaded") is preloaded)"
        fi
        if [ -n "$3" ]; then
            lib=$libdir/libmemtrace-profiler.so
        else
            lib=${MEMTRACE_LIB:-$libdir/libmemtrace.so}
        fi
        if [ -n "$loaded" ] && [ "$(basename "$loaded")" != "$(basename "$lib")" ]; then
            die 1 "attach: process $pid has $(basename "$loaded") loaded (an earlier attach); attach it again with that library"
        fi
        [ -z "$loaded" ] || lib=$loaded
        check_lib "$lib"
        if ! printf '%s\n' "$maps" | grep -q '/libc\.so'; then
            die 1 "attach: process $pid is statically linked (no libc.so to load memtrace with): memtrace cannot attach to it"
        fi
    else
        [ -n "$loaded" ] || die 1 "detach: memtrace is not attached to process $pid"
        lib=$loaded
    fi
    check_gdb
    [ -f "$attacher" ] || die 1 "cannot find memtrace attach's program (looked for $attacher)"
    [ -x "$symbolize" ] || die 1 "cannot find memtrace-symbolize (looked for $symbolize)"
    waiting=$("$symbolize" --wait-syscalls) || die 1 "$1: $symbolize --wait-syscalls failed"
    out_file=$(mktemp "${TMPDIR:-/tmp}/memtrace-attach.XXXXXX")
    trap 'rm -f "$out_file"' EXIT
    MT_ATTACH_CMD=$1 MT_ATTACH_PID=$pid MT_ATTACH_LIB=$lib MT_ATTACH_WAITING=$waiting \
        ${GDB:-gdb} -q -nx -batch -ex "source $attacher" </dev/null >"$out_file" 2>&1 || :
    out=$(sed -n 's/^@@ //p' "$out_file" | tail -1)
    case $out in
    ok*) echo "memtrace:${out#ok}" >&2 ;;
    '') die 1 "$1: gdb could not attach to process $pid: $(grep -v '^$' "$out_file" | tail -1)" ;;
    *) die 1 "$out" ;;
    esac
}

[ $# -ge 1 ] || usage_error "no command given"
cmd=$1
shift
case $cmd in
--help | -h | help)
    usage
    exit 0
    ;;
run | gdb | core | attach | detach | export | view | top | symbolize)
    # COMMAND --help: the same usage, wherever it would be an option of
    # COMMAND (for gdb, the first word: later ones are gdb's own).
    case ${1-} in --help | -h) usage; exit 0 ;; esac
    ;;
esac
case $cmd in
--version | -V)
    echo "memtrace $version"
    exit 0
    ;;
run)
    profile=
    output=
    set_output=
    while [ $# -gt 0 ]; do
        case $1 in
        --help | -h) usage; exit 0 ;;
        --profile) profile=1 ;;
        --leak-check) export MEMTRACE_LEAK_CHECK=1 ;;
        --no-children) export MEMTRACE_CHILDREN=0 ;;
        --record) export MEMTRACE_RECORD=memtrace.%e.%p.rec ;;
        --record=*)
            [ -n "${1#--record=}" ] || usage_error "run: --record= needs a PATH"
            export MEMTRACE_RECORD="${1#--record=}"
            ;;
        --check)
            # What a debugging run wants; the user's own settings win.
            export MEMTRACE_GUARD_SAMPLE=${MEMTRACE_GUARD_SAMPLE:-1}
            export MEMTRACE_QUARANTINE=${MEMTRACE_QUARANTINE:-67108864}
            export MEMTRACE_ON_ERROR=${MEMTRACE_ON_ERROR:-abort}
            ;;
        --output)
            [ $# -ge 2 ] || usage_error "run: --output needs a FILE"
            output=$2
            set_output=1
            shift
            ;;
        --output=*)
            output=${1#--output=}
            set_output=1
            ;;
        --) shift; break ;;
        -*) usage_error "run: unknown option '$1'" ;;
        *) break ;;
        esac
        shift
    done
    [ $# -ge 1 ] || usage_error "run: no program given"
    if [ -n "$set_output" ]; then
        [ -n "$profile" ] || usage_error "run: --output is where the profiler's reports go; add --profile"
        [ -n "$output" ] || usage_error "run: --output needs a FILE"
        export MEMTRACE_OUTPUT="$output"
    fi
    if [ -n "$profile" ]; then
        lib=$libdir/libmemtrace-profiler.so
    else
        lib=${MEMTRACE_LIB:-$libdir/libmemtrace.so}
    fi
    check_lib "$lib"
    check_prog "$1"
    refuse_setid "$1"
    preload_for "$lib"
    LD_PRELOAD=$preload${LD_PRELOAD:+:$LD_PRELOAD} exec "$@"
    ;;
top)
    [ -x "$libexecdir/memtrace-top" ] || die 1 "top: $libexecdir/memtrace-top is missing"
    exec "$libexecdir/memtrace-top" "$@"
    ;;
export)
    [ -x "$libexecdir/memtrace-export" ] || die 1 "export: $libexecdir/memtrace-export is missing"
    exec "$libexecdir/memtrace-export" "$@"
    ;;
gdb)
    # [GDB-OPTION...] -- PROG [ARGS...] becomes [GDB-OPTION...] --args PROG
    # [ARGS...] (each word rotated to the end once, the first -- renamed);
    # without --, PROG [ARGS...] becomes --args PROG [ARGS...].
    dd=
    for a in "$@"; do
        [ "$a" != -- ] || { dd=1; break; }
    done
    if [ -z "$dd" ]; then
        case ${1-} in -*) usage_error "gdb: put gdb's options before -- and the program after it" ;; esac
        set -- -- "$@"
    fi
    n=$#
    dd=
    while [ "$n" -gt 0 ]; do
        a=$1
        shift
        n=$((n - 1))
        if [ -z "$dd" ] && [ "$a" = -- ]; then
            a=--args
            dd=1
        fi
        set -- "$@" "$a"
    done
    lib=${MEMTRACE_LIB:-$libdir/libmemtrace.so}
    check_lib "$lib"
    [ -f "$helper" ] || die 1 "cannot find the gdb helper (looked for $helper)"
    # "$@" is now [GDB-OPTION...] --args PROG [ARGS...]
    n=0
    prog=
    for a in "$@"; do
        if [ "$n" = 1 ]; then
            prog=$a
            break
        fi
        [ "$a" = --args ] && n=1
    done
    [ -n "$prog" ] || usage_error "gdb: no program given"
    check_prog "$prog"
    refuse_script "$prog"
    check_gdb
    preload_for "$lib"
    # gdb applies the environment to the program it starts, not to itself.
    exec ${GDB:-gdb} -q -ex "source $helper" \
        -ex "set environment LD_PRELOAD=$preload${LD_PRELOAD:+:$LD_PRELOAD}" "$@"
    ;;
core)
    # [GDB-OPTION...] [--] PROG CORE: with --, exactly PROG and CORE follow
    # the first --; without, they are the last two words, and the words
    # before them go to gdb (an option's argument need not start with -).
    n=0
    dd=
    for a in "$@"; do
        n=$((n + 1))
        [ -z "$dd" ] && [ "$a" = -- ] && dd=$n
    done
    if [ -n "$dd" ]; then
        [ $((n - dd)) = 2 ] || usage_error "core: give PROG and CORE after --"
    else
        [ "$n" -ge 2 ] || usage_error "core: give PROG and CORE"
    fi
    # Rotate: the gdb options stay in order at the front of "$@", the --
    # goes, PROG and CORE land in prog and core_file.
    i=0
    for a in "$@"; do
        i=$((i + 1))
        shift
        if [ -n "$dd" ] && [ "$i" = "$dd" ]; then
            continue
        elif [ "$i" = $((n - 1)) ]; then
            prog=$a
        elif [ "$i" = "$n" ]; then
            core_file=$a
        else
            set -- "$@" "$a"
        fi
    done
    [ -f "$helper" ] || die 1 "cannot find the gdb helper (looked for $helper)"
    [ -e "$prog" ] || die 127 "$prog: no such program"
    [ -f "$core_file" ] || die 1 "$core_file: no such core file"
    check_gdb
    # The helper checks the core (cut short, another program's, without
    # libmemtrace) even when gdb cannot load it.
    MT_CORE_FILE=$core_file exec ${GDB:-gdb} -q -ex "source $helper" "$@" -- "$prog" "$core_file"
    ;;
attach | detach)
    profile=
    while [ $# -gt 0 ]; do
        case $1 in
        --profile)
            [ "$cmd" = attach ] || usage_error "detach: unknown option '$1'"
            profile=1
            ;;
        --) shift; break ;;
        -*) usage_error "$cmd: unknown option '$1'" ;;
        *) break ;;
        esac
        shift
    done
    [ $# = 1 ] || usage_error "$cmd: give one PID"
    attach_pid "$cmd" "$1" "$profile"
    ;;
symbolize)
    [ -x "$symbolize" ] || die 1 "cannot find memtrace-symbolize (looked for $symbolize)"
    exec "$symbolize" --text "$@"
    ;;
view)
    [ -f "$viewer" ] || die 1 "cannot find memtrace view's program (looked for $viewer)"
    command -v python3 >/dev/null 2>&1 || die 1 "view: cannot find python3; install it"
    # The viewer runs `memtrace export` through this launcher for a timeline.
    MEMTRACE_LAUNCHER=$self exec python3 "$viewer" "$@"
    ;;
*)
    usage_error "unknown command '$cmd'"
    ;;
esac
