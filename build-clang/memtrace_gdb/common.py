# SPDX-License-Identifier: LGPL-2.1-or-later
# What every module of the helper uses: its one-line errors and a gdb
# setting changed for a while.

import re

import gdb

# An address or a register: 64 bits.
_M64 = (1 << 64) - 1

# What a terminal could act on, as the library's reports escape it
# (src/base/output.h, mt_text_escape): C0 controls but the newline that
# ends a line, DEL, C1 controls, and bytes that were not UTF-8 (decoded
# as surrogate escapes).
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\udc80-\udcff]")


def _escape_one(m):
    c = ord(m.group())
    if 0x80 <= c <= 0x9f:  # in UTF-8, two bytes: 0xc2 and C
        return "\\xc2\\x%02x" % c
    return "\\x%02x" % (c & 0xff)


def _text(s):
    """S with every control character but the newline as \\xHH: the
    helper's own lines hold names from the program and its debug
    information (types, fields), which must not act on the terminal.
    Text from memtrace-symbolize is already escaped and passes as it is."""
    return _CONTROL.sub(_escape_one, s)


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
