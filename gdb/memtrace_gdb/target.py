# SPDX-License-Identifier: LGPL-2.1-or-later
# The inferior the command looks at (a live process or a core file) and
# the checks that a core file can be read: cut short, another program's,
# dumped without libmemtrace. Memory is read through gdb, never by calling
# into the program.

import os
import shlex
import struct
import subprocess
import tempfile

import gdb

from .common import _fail
from .symbolizer import _symbolizer_path


def _info_target():
    """`info target` as bytes. gdb hands Python command output as UTF-8 text
    and fails on a file name that is not UTF-8; then the output goes through
    a file instead."""
    try:
        return gdb.execute("info target", to_string=True).encode("utf-8", "surrogateescape")
    except UnicodeDecodeError:
        pass
    fd, path = tempfile.mkstemp(prefix="memtrace-")
    try:
        os.close(fd)
        gdb.execute("pipe info target | cat >%s" % shlex.quote(path), to_string=True)
        with open(path, "rb") as f:
            return f.read()
    except gdb.error:  # a gdb older than 10 has no pipe command
        return b""
    finally:
        os.unlink(path)


def _loaded_files():
    """(core file, executable) as gdb has them loaded, each None if none, as
    file names for the OS: bytes that are not UTF-8 are kept as they are
    (surrogateescape), whatever they look like on screen."""
    core = exe = None
    section = None
    for line in _info_target().splitlines():
        line = line.strip()
        if line.startswith(b"Local core dump file:"):
            section, core = "core", ""
        elif line.startswith(b"Local exec file:"):
            section = "exe"
        elif section and line.startswith(b"`") and b"', file type" in line:
            name = os.fsdecode(line[1:line.index(b"', file type")])
            if section == "core":
                core = name
            else:
                exe = name
            section = None
    return core, exe


# ---------------------------------------------------------------- core files

def _core_problem(core, exe):
    """What makes CORE unusable with EXE, in one sentence, or None: cut
    short, dumped by another executable, or by a process without
    libmemtrace. memtrace-symbolize --core-check reads the core's program
    headers and notes (tools/core_check.h)."""
    try:
        args = [_symbolizer_path(), "--core-check", core] + ([exe] if exe else [])
        out = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, timeout=60).stdout
    except (gdb.GdbError, OSError, subprocess.SubprocessError):
        return None  # no memtrace-symbolize: gdb's own messages stand
    return os.fsdecode(out).strip() or None


class _Target:
    """The inferior being looked at: a live process or a core file."""

    def __init__(self):
        inf = gdb.selected_inferior()
        self.inferior = inf
        self.core = self.exe = None
        try:
            conn = inf.connection
            is_core = conn is not None and conn.type == "core"
        except AttributeError:
            is_core = None
        if is_core is not False:
            self.core, self.exe = _loaded_files()
            try:
                self.exe = inf.progspace.filename or self.exe
            except UnicodeDecodeError:  # gdb decodes it strictly; info target had it
                pass
        if is_core and self.core is None:
            self.core = ""
        if self.core == "":
            _fail("cannot tell which core file gdb has loaded (see `info target`)")
        if self.core is None and inf.pid == 0 and os.environ.get("MT_CORE_FILE"):
            # `memtrace core PROG CORE`, and gdb did not load CORE.
            core = os.environ["MT_CORE_FILE"]
            _fail(_core_problem(core, self.exe or _loaded_files()[1]) or
                  "gdb could not load the core file %s (its message is above)" % core)
        if self.core is None and inf.pid == 0:
            _fail("no process and no core file: start the program (`run`, "
                  "`memtrace gdb PROG`) or load a core file first")
        self.key = ("core", self.core) if self.core else ("pid", inf.pid)

    def read(self, addr, size):
        """SIZE bytes at ADDR, or None if they are not all readable."""
        if addr < 0 or size < 0 or addr + size > 1 << 64:
            return None
        try:
            return bytes(self.inferior.read_memory(addr, size))
        except gdb.MemoryError:
            return None

    def u64(self, addr):
        b = self.read(addr, 8)
        return None if b is None else struct.unpack("<Q", b)[0]
