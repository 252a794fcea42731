# SPDX-License-Identifier: LGPL-2.1-or-later
# `memtrace snapshot [NAME]` and `memtrace growth [--all] [NAME [N]]`, and
# the mark `memtrace leaks new` counts from. A snapshot is a mark in the
# process's own memory (the library's snapshot slots, src/runtime/
# descriptor.h): the allocation counter's value, which every block
# allocated later exceeds. gdb writes it into the stopped process (so its
# core has it too) and moves the allocation numbers' epoch on, so that
# every thread takes its next numbers above the mark; memtrace-symbolize
# finds the slot and answers growth from the tables (tools/table_answers.c).

import re
import struct

import gdb

from .common import _fail
from .reports import _count
from .session import _session
from .target import _Target

# The slot `memtrace leaks` moves at each run: not a name a user can give.
LEAKS_MARK = "(leaks)"
_NAME = re.compile(r"[A-Za-z0-9_.:+-]{1,39}\Z")


def _hex(name):
    return name.encode("ascii").hex() if name else "-"


def _check_name(word, name):
    if not _NAME.match(name):
        _fail("%s: bad snapshot name '%s': 1 to 39 letters, digits or _.:+-" % (word, name))


def mark(name, target=None):
    """Writes the snapshot NAME (a slot taken anew, or moved) into the
    stopped process; returns its mark (the first allocation number after
    it)."""
    target = target or _Target()
    if target.core:
        _fail("snapshot: a core file cannot take a snapshot; take it in the running process "
              "(its core then has it)")
    _, sym = _session.get(target)
    words = sym.answer("snapshot %s\n" % _hex(name)).split()
    try:
        slot, at, name_off, name_size, epoch_addr, epoch = [int(w, 16) for w in words]
    except ValueError:
        _fail("memtrace-symbolize answered snapshot with %r" % " ".join(words)[:80])
    inf = gdb.selected_inferior()
    raw = name.encode("ascii")[:name_size - 1].ljust(name_size, b"\0")
    try:
        inf.write_memory(slot + name_off, raw)
        inf.write_memory(slot, struct.pack("<Q", at))
        # Every thread gives up its batch of numbers: the blocks allocated
        # from now on get numbers above the mark (src/store/threads.h).
        inf.write_memory(epoch_addr, struct.pack("<I", (epoch + 1) & 0xffffffff))
    except gdb.MemoryError as e:
        _fail("snapshot: cannot write the process's memory: %s" % e)
    _session.invalidate_tables()
    return at


def snapshot(arg):
    name = arg or "default"
    _check_name("snapshot", name)
    at = mark(name)
    return ("memtrace: snapshot \"%s\" taken: the blocks allocated from now on (allocation #%d "
            "on) are its growth\n" % (name, at))


def growth(arg):
    """`memtrace growth [--all] [NAME [N]]`: the live blocks allocated
    since the snapshot NAME (the newest without one), grouped by stack,
    the N call sites holding most bytes first (10 by default)."""
    words = arg.split()
    listed = bool(words) and words[0] == "--all"
    if listed:
        words = words[1:]
    name = ""
    if words and not re.fullmatch(r"[0-9]+|0x[0-9a-fA-F]+", words[0]):
        name = words.pop(0)
        _check_name("growth", name)
    if len(words) > 1:
        _fail("usage: memtrace growth [--all] [NAME [N]]")
    n = _count("growth", words[0] if words else "")
    _, sym = _session.get()
    return sym.answer("growth %s %x %x\n" % (_hex(name), n, 1 if listed else 0))


def leaks_mark():
    """The mark of the last `memtrace leaks` (0: none)."""
    _, sym = _session.get()
    return int(sym.answer("growth %s 0 0\n" % _hex(LEAKS_MARK)).split()[0], 16)
