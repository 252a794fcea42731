# SPDX-License-Identifier: LGPL-2.1-or-later
# memtrace's tables in one target: where memtrace_state is (gdb's symbol
# lookup) and the request that has memtrace-symbolize read and check it
# (tools/tables.c, the one reader of the tables out of process); the
# tables are decoded there, not here.

import gdb

from .common import _M64, _Language, _corrupt, _fail
from .target import _core_problem


def _state_address(core=None):
    """The address of memtrace_state, found whatever the current frame's
    language is (a C expression does not parse in a Rust frame). CORE: the
    core file looked at, if any (where libmemtrace is mapped: checked)."""
    for lookup in (gdb.lookup_global_symbol, gdb.lookup_static_symbol):
        try:
            sym = lookup("memtrace_state")
            if sym is not None:
                return int(sym.value().address) & _M64
        except (gdb.error, RuntimeError) as e:
            _corrupt("cannot locate it: %s" % str(e).splitlines()[0])
    # A library without debug information has only the ELF symbol, which
    # no Python lookup finds; C's parser does.
    try:
        with _Language("c"):
            return int(gdb.parse_and_eval("&memtrace_state")) & _M64
    except gdb.error as e:
        if 'No symbol "memtrace_state"' in str(e) and core:
            _fail("libmemtrace is among the libraries of the core file %s, but gdb has not "
                  "loaded its symbols (see `info sharedlibrary`; `set sysroot` or `set "
                  "solib-search-path` to where it is)" % core)
        if 'No symbol "memtrace_state"' in str(e):
            _fail("this program does not run under memtrace (no memtrace_state symbol); "
                  "start it with `memtrace gdb PROG` or LD_PRELOAD=libmemtrace.so")
        _corrupt("cannot locate it: %s" % str(e).splitlines()[0])


class _Tables:
    """memtrace's tables in one target, as memtrace-symbolize reads them
    (tools/tables.c) through memtrace_state, which it checks: told once per
    stop, kept there until the target runs again."""

    def __init__(self, target, sym):
        self.t = target
        self.sym = sym
        if target.core:
            problem = _core_problem(target.core, target.exe)
            if problem:
                _fail(problem)
        addr = _state_address(target.core)
        if sym.mem_error:
            _fail(sym.mem_error)
        text = sym.answer("tables %x\n" % addr)
        try:
            self.version_string = int(text, 16)
        except ValueError:
            _fail("memtrace-symbolize answered tables with %r" % text[:80])

    def live_block(self, addr):
        """(start, size) of the live block that starts at or contains ADDR,
        or None."""
        text = self.sym.answer("live-block %x\n" % addr).split()
        return (int(text[0], 16), int(text[1], 16)) if text else None

    def version(self):
        """The library's version string, read through gdb (a core file
        leaves the library's read-only data out; gdb has the file); None
        from a memtrace older than the field."""
        if not self.version_string:
            return None
        b = self.t.read(self.version_string, 64)
        if b is None or b"\0" not in b:
            _corrupt("version string at %#x unreadable" % self.version_string)
        return b.split(b"\0", 1)[0].decode("ascii", "replace")
