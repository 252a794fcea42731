# SPDX-License-Identifier: LGPL-2.1-or-later
# The answers read from the tables: `memtrace EXPR` (print_trace's), top,
# stats, version and pprof. memtrace-symbolize gathers them from the tables
# (tools/tables.c) and writes their text with the library's formatter
# (src/report/format.c); this module forwards, and reads what needs gdb
# (the expression, MEMTRACE_HISTORY from gdb's environment, the entry
# point, the version string).

import os
import re

import gdb

from .common import _fail
from .expressions import _address, _evaluate
from .session import _session
from .target import _Target, _info_target


# A live block's earlier lives shown (src/report/format.h, mt_answer.history):
# MEMTRACE_HISTORY from gdb's own environment, as print_trace reads it from
# the program's (`memtrace gdb` gives both the same), or all with --all.
_HISTORY_ALL = 0xffffffff
_HISTORY_DEFAULT = 3
_history_warned = False


def _history_setting():
    global _history_warned
    s = os.environ.get("MEMTRACE_HISTORY")
    if s is None:
        return _HISTORY_DEFAULT, ""
    if s == "all":
        return _HISTORY_ALL, ""
    if re.fullmatch(r"[+-]?[0-9]+", s) and 0 <= int(s) <= 1 << 26:
        return int(s), ""
    if _history_warned:
        return _HISTORY_DEFAULT, ""
    _history_warned = True
    return _HISTORY_DEFAULT, ("memtrace: MEMTRACE_HISTORY=\"%s\" is not all or a whole number "
                              "from 0 to %d; using %d\n" % (s, 1 << 26, _HISTORY_DEFAULT))


def describe_expr(expr, history=None):
    # Without a process or core file, that is the answer, whatever EXPR is.
    target = _Target()
    warning = ""
    if history is None:
        history, warning = _history_setting()
    addr, note = _address(expr, target)
    return warning + note + describe(addr, target, history)


def describe(addr, target=None, history=_HISTORY_DEFAULT):
    """print_trace's answer for ADDR, gathered from the tables and written
    by the library's own formatter (src/report/format.c) in
    memtrace-symbolize, so the two entry points cannot drift apart.
    HISTORY: a live block's freed records shown at most."""
    _, sym = _session.get(target)
    text, ok = sym.request("describe %x %x\n" % (addr, history))
    if not ok:
        # No heap block: what the address is instead (a symbol's bytes, a
        # thread's frame or TLS, a mapping), the line after the first, as
        # print_trace writes it; still an error for the command.
        first, _, rest = text.partition("\n")
        if first.endswith("not a live heap block known to memtrace"):
            from .leaks import _leak_request  # leaks imports this module
            try:
                where = _leak_request("where", addr, True)
            except gdb.GdbError:
                where = ""
            text = first + "\n" + where + rest
        raise gdb.GdbError(text.rstrip("\n"))
    return text


def _recording_line(sym):
    """The line that ends every answer once recording was ever off (src/report/format.c's
    mt_fmt_recording, through memtrace-symbolize); "" otherwise."""
    return sym.answer("recording\n")


def _count(word, arg):
    """The N of `memtrace WORD [N]`: ARG evaluated, 10 without one."""
    try:
        n = int(_evaluate(arg)) if arg else 10
    except gdb.error as e:
        _fail("%s: bad count '%s': %s" % (word, arg, e))
    if n <= 0:
        _fail("%s: the count must be at least 1" % word)
    return n


def top(arg):
    n = _count("top", arg)
    _, sym = _session.get()
    return sym.answer("top %x\n" % n)


def stats():
    _, sym = _session.get()
    return sym.answer("stats\n")


def tags(arg):
    """`memtrace tags [text|json|dot]`: the tag scopes' per-thread and
    merged trees, read from the tables (live or on a core)."""
    fmt = arg or "text"
    if fmt not in ("text", "json", "dot"):
        _fail("usage: memtrace tags [text|json|dot]")
    _, sym = _session.get()
    pid = gdb.selected_inferior().pid or 0
    return sym.answer("tags %s %x\n" % (fmt, pid))


def version():
    st, _ = _session.get()
    v = st.version()
    return "memtrace: library version %s\n" % (v if v is not None else "unknown (older than 0.1.0)")


# ---------------------------------------------------------------- pprof

def pprof(arg):
    """`memtrace pprof FILE`: the in-use profile (live blocks grouped by
    allocation stack and thread) in pprof's format, written by the library's
    own writer (src/report/pprof.c) in memtrace-symbolize, which gathers the
    blocks from the tables; its total is stats'."""
    path = os.path.expanduser(arg)
    if not path:
        _fail("usage: memtrace pprof FILE")
    _, sym = _session.get()
    # The entry point (relocated, in a process or a core) lies in the main
    # executable, whose Mapping memtrace-symbolize puts first.
    entry = re.search(rb"Entry point: (0x[0-9a-f]+)", _info_target())
    return sym.answer("pprof %s%s\n" % (os.fsencode(path).hex(),
                                        " %x" % int(entry.group(1), 16) if entry else ""))
