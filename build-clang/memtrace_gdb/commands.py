# SPDX-License-Identifier: LGPL-2.1-or-later
# The gdb command `memtrace` and its subcommands, each answer written in
# one piece or one `memtrace:` error line; and the core check at start
# under `memtrace core`.

import os
import struct

import gdb

from .common import _fail, _text
from .heap import break_on_error, check
from .leaks import leaks, refs_expr
from .reports import _HISTORY_ALL, describe_expr, pprof, stats, tags, top, version
from .target import _core_problem


def _guard(fn, *args):
    """Runs FN; anything but a gdb error becomes one line, never a traceback.
    What it writes, and a gdb error's message, has its control characters
    escaped (_text)."""
    try:
        gdb.write(_text(fn(*args)))
    except gdb.GdbError as e:
        raise gdb.GdbError(_text(str(e)))
    except KeyboardInterrupt:
        raise gdb.GdbError("memtrace: interrupted")
    except (gdb.MemoryError, struct.error) as e:
        # Reads of the tables check what they get; this is the last resort
        # for a damaged value that got past those checks.
        raise gdb.GdbError("memtrace: memtrace_state looks corrupted (%s)" % e)
    except Exception as e:  # a bug here must still answer in one line
        raise gdb.GdbError("memtrace: internal error: %s: %s" % (type(e).__name__, e))


class MemtraceCommand(gdb.Command):
    """Where a heap block came from, from memtrace's records.

Usage: memtrace EXPR
       memtrace --all EXPR
       memtrace top [N]
       memtrace stats
       memtrace leaks [N]
       memtrace refs EXPR
       memtrace pprof FILE
       memtrace check
       memtrace tags [text|json|dot]
       memtrace break-on-error
       memtrace version

memtrace EXPR evaluates EXPR (any expression that yields an address: a
pointer, an integer, an array in memory; never calling a function in the
program, so not a string literal) and prints what memtrace knows about that
address, in print_trace's format: the live block that starts at it or
contains it (its size, the offset, the allocating thread and allocation
number, the allocation stack with file:line and inlined frames), then every
freed block in the freed history that covered it, newest first, with the
stacks and threads that freed and allocated it; for a live block, the
newest 3 of those (MEMTRACE_HISTORY=N or all, read from gdb's own
environment) and a line counting the others; memtrace --all EXPR shows
them all.  An address neither live nor
in the history, or a null one, is an error.  To ask about a variable named
like a subcommand (top, stats, leaks, refs, pprof, check, tags, version), write `memtrace (top)'.

memtrace tags prints the tag scopes' trees (memtrace_tag_push): each
thread's, then all threads' merged by path, with every scope's live bytes
and blocks and its allocations and frees, self and total; `json' and `dot'
print the same trees as MEMTRACE_TAGS's files (doc/tags.adoc).

EXPR is parsed in the current frame's language.  A value that owns a heap
block through a pointer inside it is asked about through that pointer, and
the first line says which: a Rust Vec, String, VecDeque, Box, Rc, Arc or
Weak; a C++ std::vector, std::string, std::unique_ptr, std::shared_ptr or
std::weak_ptr (a C++ reference to one too; for a Rust reference r, which
gdb shows as a pointer, write *r).  For any other struct, union or
class, its one pointer field into a live heap block is used; without
exactly one, its pointer fields are listed to choose from.

memtrace top [N] groups the live blocks by allocation stack and prints the N
call sites holding the most live bytes (10 by default), largest first: live
bytes, block count and the stack.  memtrace stats prints totals: live blocks
and bytes, call sites with live blocks, distinct stacks stored, allocations
recorded since start, threads seen, and freed-history records.  memtrace
version prints the traced library's version.  Once recording was ever off
(MEMTRACE_START=0, MEMTRACE_TOGGLE_SIGNAL, memtrace_set_recording), every
answer ends with a line saying since when memtrace records.

memtrace leaks [N] prints the report MEMTRACE_LEAK_CHECK=1 prints at exit,
for the stopped process or the core file: a conservative scan from the
roots (the modules' writable segments, every thread's stack from its stack
pointer, its registers and TLS) marks every block a word points into, as
valgrind's memcheck does; the lost blocks, grouped by allocation stack, N
groups at most (10 by default): first "T (D direct, I indirect) bytes in K
blocks are definitely lost (with M indirectly lost blocks)" (no root and no
other lost block points at it; I is what it holds), largest total first,
then "B bytes in K blocks are indirectly lost" (only lost blocks point at
it) and "possibly lost" (reached only through an interior pointer), with
their frames; then the summary line "memtrace: leaks: D bytes definitely
lost in N blocks, I bytes indirectly lost in M blocks, P bytes possibly
lost in K blocks, R bytes still reachable in S blocks".
MEMTRACE_SUPPRESSIONS, read from gdb's own environment, names a
LeakSanitizer suppressions file (leak:PATTERN lines) as at exit; the report
ends with what each suppression took.

memtrace refs EXPR evaluates EXPR as memtrace EXPR does and lists every
place holding a pointer into the live block at that address, like
valgrind's who_points_at: a global (symbol and module), a thread's stack
slot (thread, LWP, frame number and function), a register, thread-local
storage, or another heap block (its address, the offset in it, its
allocation stack), each with the offset it points to.

memtrace check checks every live block's redzone and every block held in
the quarantine, as memtrace_check() does in the program, and lists the
damaged ones in the heap errors' report: "memtrace: heap-buffer-overflow:
N bytes past the end of a S-byte block at START" or "memtrace:
write-after-free: N bytes at offset O of a freed S-byte block at START",
with the block's allocation (and free) stacks; then "memtrace: check: K
damaged blocks; L live blocks and Q quarantined blocks checked".  On
glibc's heap it also reads the chunk header after each block: on the core
of glibc's abort for a damaged header ("free(): invalid next size",
"malloc(): corrupted top size") it names the block that wrote past its end
and where it was allocated, even one glibc has back (from the freed
history).  memtrace break-on-error sets a breakpoint on memtrace_on_error,
which the library calls after each heap error report: the program stops
right there, the detecting frame one `up` away.

memtrace pprof FILE writes the live blocks, grouped by allocation stack
and thread, to FILE as a gzipped pprof profile (inuse_objects, inuse_space)
for `go tool pprof' and the tools that read its format; its total is the
one memtrace stats prints.

The tables are read from the inferior's memory, never by calling into it,
so this works on a core file and while a thread is stopped inside malloc.
The program must run under libmemtrace.so (see `memtrace gdb PROG').  Where
the tables look damaged (a core file of a crash), the command says what it
found implausible instead of reading further."""

    def __init__(self):
        # Not a prefix command with `top` and `stats` as gdb subcommands:
        # gdb takes any unique prefix of a subcommand for it, so `memtrace s`
        # (a String named s) or `memtrace t` would run stats or top.
        super().__init__("memtrace", gdb.COMMAND_DATA, gdb.COMPLETE_EXPRESSION)

    def invoke(self, arg, from_tty):
        arg = arg.strip()
        if not arg:
            _fail("usage: memtrace [--all] EXPR | memtrace top [N] | memtrace stats | "
                  "memtrace leaks [N] | memtrace refs EXPR | memtrace pprof FILE | memtrace check | "
                  "memtrace tags [text|json|dot] | "
                  "memtrace break-on-error | memtrace version "
                  "(see `help memtrace')")
        word, rest = (arg.split(None, 1) + [""])[:2]
        if word == "top":
            _guard(top, rest.strip())
        elif word == "pprof":
            _guard(pprof, rest.strip())
        elif word == "stats":
            if rest.strip():
                _fail("stats takes no argument")
            _guard(stats)
        elif word == "tags":
            _guard(tags, rest.strip())
        elif word == "leaks":
            _guard(leaks, rest.strip())
        elif word == "refs":
            if not rest.strip():
                _fail("usage: memtrace refs EXPR")
            _guard(refs_expr, rest.strip())
        elif word in ("check", "break-on-error"):
            if rest.strip():
                _fail("%s takes no argument" % word)
            _guard(check if word == "check" else break_on_error)
        elif word == "version":
            if rest.strip():
                _fail("version takes no argument")
            _guard(version)
        elif word == "--all":
            if not rest.strip():
                _fail("usage: memtrace --all EXPR")
            _guard(describe_expr, rest.strip(), _HISTORY_ALL)
        else:
            _guard(describe_expr, arg)


def _check_launcher_core():
    """Under `memtrace core PROG CORE` (the launcher names CORE in
    MT_CORE_FILE): what is wrong with the core, said once at start, before
    any command is typed."""
    core = os.environ.get("MT_CORE_FILE")
    if not core:
        return
    try:
        exe = gdb.current_progspace().filename
    except (AttributeError, UnicodeDecodeError):
        exe = None
    problem = _core_problem(core, exe)
    if problem:
        gdb.write("memtrace: %s\n" % problem, gdb.STDERR)


def register():
    """Defines the command (replacing one an earlier load defined) and
    checks the core `memtrace core` names."""
    MemtraceCommand()
    _check_launcher_core()
