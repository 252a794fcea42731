# What every module of the helper uses: its one-line errors and a gdb
# setting changed for a while.

import gdb

# An address or a register: 64 bits.
_M64 = (1 << 64) - 1


def _fail(message):
    raise gdb.GdbError("memtrace: " + message)


def _corrupt(what):
    _fail("memtrace_state looks corrupted (%s)" % what)


class _Language:
    """While active, gdb parses expressions as LANGUAGE; the setting the
    user had (`auto` included) comes back afterwards, even on an error."""

    def __init__(self, language):
        self.language = language

    def __enter__(self):
        self.old = gdb.parameter("language")
        if self.old != self.language:
            gdb.execute("set language %s" % self.language, to_string=True)
        return self

    def __exit__(self, *_):
        if self.old != self.language:
            gdb.execute("set language %s" % self.old, to_string=True)
