# SPDX-License-Identifier: LGPL-2.1-or-later
# Heap errors from gdb: `memtrace check` (every live block's redzone and
# every quarantined block, and glibc's chunk headers around them, checked
# by memtrace-symbolize from the tables: tools/heap_check.c) and
# `memtrace break-on-error` (a breakpoint on memtrace_on_error, which the
# library calls after each heap error report).

import gdb

from .common import _fail
from .session import _session


def check():
    """The damaged blocks, in the heap errors' report, and a summary line."""
    _, sym = _session.get()
    return sym.answer("check\n")


def last_error():
    """The last error report the program made, from the library's record."""
    _, sym = _session.get()
    return sym.answer("last-error\n")


def break_on_error():
    """A breakpoint on memtrace_on_error (pending until the library is
    loaded): the program stops right after each report, in the thread that
    found the error, its stack below."""
    for b in gdb.breakpoints() or ():
        if b.location == "memtrace_on_error" and b.is_valid():
            return ("memtrace: breakpoint %d already stops at each heap error report "
                    "(memtrace_on_error)\n" % b.number)
    try:
        with_pending = gdb.parameter("breakpoint pending")
        gdb.execute("set breakpoint pending on", to_string=True)
        try:
            b = gdb.Breakpoint("memtrace_on_error", internal=False)
        finally:
            gdb.execute("set breakpoint pending %s" % {True: "on", False: "off", None: "auto"}
                        .get(with_pending, "auto"), to_string=True)
    except gdb.error as e:
        _fail("cannot set a breakpoint on memtrace_on_error: %s" % str(e).splitlines()[0])
    return ("memtrace: breakpoint %d stops at each heap error report (memtrace_on_error); "
            "`up` shows where it was found\n" % b.number)
