# SPDX-License-Identifier: LGPL-2.1-or-later
# What the command keeps between invocations, per target: the tables
# until the target runs again, the symbolizer until the target changes.

import gdb

from .symbolizer import _Symbolizer
from .tables import _Tables
from .target import _Target


class _Session:
    """Caches per target: the tables until the target runs again, the
    symbolizer until the target changes or loads a library."""

    def __init__(self):
        self.tables = None
        self.symbolizer = None

    def invalidate_tables(self, *_):
        self.tables = None

    def invalidate_all(self, *_):
        self.tables = None
        if self.symbolizer:
            self.symbolizer.close()
            self.symbolizer = None

    def get(self, target=None):
        target = target or _Target()
        if self.symbolizer is None or self.symbolizer.key != target.key or \
                self.symbolizer.proc.poll() is not None:
            if self.symbolizer:
                self.symbolizer.close()
            self.symbolizer = _Symbolizer(target)
        # The tables are read by the symbolizer: a new one is told again.
        if self.tables is None or self.tables.t.key != target.key or \
                self.tables.sym is not self.symbolizer:
            self.tables = None
            self.tables = _Tables(target, self.symbolizer)
        return self.tables, self.symbolizer


_session = _Session()


def connect_events():
    """The tables are stale after anything that lets the program run or
    writes its memory: resuming, `set var`, and inferior calls (`call
    free(p)`, `print malloc(77)`), which run the program without a "cont"
    event."""
    for event, fn in (("cont", _session.invalidate_tables),
                      ("memory_changed", _session.invalidate_tables),
                      ("inferior_call", _session.invalidate_tables),
                      ("exited", _session.invalidate_all),
                      ("new_objfile", _session.invalidate_all),
                      ("clear_objfiles", _session.invalidate_all)):
        registry = getattr(gdb.events, event, None)
        if registry is not None:
            registry.connect(fn)
