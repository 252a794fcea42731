# SPDX-License-Identifier: LGPL-2.1-or-later
# The inferior the command looks at (a live process or a core file) and
# the checks that a core file can be read: cut short, another program's,
# dumped without libmemtrace. Memory is read through gdb, never by calling
# into the program.

import os
import shlex
import struct
import tempfile

import gdb

from .common import _fail


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

def _read_at(f, off, size):
    f.seek(off)
    return f.read(size)


def _build_id(elf_start):
    """The GNU build-id in the first bytes of an ELF file (the notes sit in
    its first page), as hex, or None."""
    at = elf_start.find(b"\x04\x00\x00\x00\x14\x00\x00\x00\x03\x00\x00\x00GNU\x00")
    return elf_start[at + 16:at + 36].hex() if at >= 0 else None


def _core_problem(core, exe):
    """What makes CORE unusable with EXE, in one sentence, or None: cut
    short (its segments reach past its end), dumped by another executable
    (build-id, else path, of the mapping holding AT_PHDR), or by a process
    without libmemtrace among its mapped files. Reads the program headers
    and the notes only."""
    try:
        f = open(core, "rb")
    except OSError:
        return None
    with f:
        head = _read_at(f, 0, 64)
        if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
            return None  # not a 64-bit little-endian ELF: gdb says what it is
        phoff, = struct.unpack_from("<Q", head, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
        if phentsize < 56 or phnum > 1 << 16:
            return None
        raw = _read_at(f, phoff, phentsize * phnum)
        size = os.fstat(f.fileno()).st_size
        need, loads, notes = phoff + len(raw), [], []
        for i in range(len(raw) // phentsize):
            p_type, _, off, vaddr, _, filesz, _, _ = struct.unpack_from(
                "<IIQQQQQQ", raw, i * phentsize)
            need = max(need, off + filesz)
            if p_type == 1:
                loads.append((vaddr, off, filesz))
            elif p_type == 4:
                notes.append((off, filesz))
        if len(raw) < phentsize * phnum or size < need:
            return ("the core file %s is cut short: %d bytes, where its segments need %d "
                    "(a core size limit or a full disk when it was dumped?)" % (core, size, need))
        files, phdr = [], None
        for off, filesz in notes:
            data, at = _read_at(f, off, min(filesz, 1 << 24)), 0
            while at + 12 <= len(data):
                namesz, descsz, kind = struct.unpack_from("<III", data, at)
                desc = at + 12 + ((namesz + 3) & ~3)
                body = data[desc:desc + descsz]
                at = desc + ((descsz + 3) & ~3)
                if kind == 0x46494c45 and len(body) >= 16:  # NT_FILE
                    count, _ = struct.unpack_from("<QQ", body, 0)
                    names = body[16 + 24 * count:].split(b"\0")
                    for k in range(min(count, len(names))):
                        lo, hi, _ = struct.unpack_from("<QQQ", body, 16 + 24 * k)
                        files.append((lo, hi, os.fsdecode(names[k])))
                elif kind == 6:  # NT_AUXV
                    for k in range(0, len(body) - 15, 16):
                        tag, value = struct.unpack_from("<QQ", body, k)
                        if tag == 3:  # AT_PHDR
                            phdr = value
        if not files:
            return None  # no NT_FILE note (an old kernel): nothing more to tell
        dumped_by = next((name for lo, hi, name in files
                          if phdr is not None and lo <= phdr < hi), None)
        if dumped_by and exe:
            start = min(lo for lo, _, name in files if name == dumped_by)
            core_id = next((_build_id(_read_at(f, off, min(filesz, 4096)))
                            for vaddr, off, filesz in loads if vaddr == start and filesz),
                           None)
            try:
                with open(exe, "rb") as e:
                    exe_id = _build_id(e.read(4096))
            except OSError:
                exe_id = None
            if core_id and exe_id:
                if core_id != exe_id:
                    return ("the core file %s was not dumped by %s: its program was %s, "
                            "build-id %s, not %s" % (core, exe, dumped_by, core_id, exe_id))
            elif os.path.basename(dumped_by) != os.path.basename(exe):
                return ("the core file %s was not dumped by %s: its program was %s"
                        % (core, exe, dumped_by))
        if not any(os.path.basename(name).startswith("libmemtrace") for _, _, name in files):
            return ("libmemtrace is not among the libraries of the core file %s: %s did not "
                    "run under memtrace when it dumped (`memtrace run` or `memtrace gdb` "
                    "start it so)" % (core, dumped_by or "the program"))
    return None


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
