# memtrace's gdb helper: the `memtrace` command.
#
#   (gdb) source gdb/memtrace.py      (or auto-loaded with libmemtrace.so)
#   (gdb) memtrace EXPR               where the block at an address came from
#   (gdb) memtrace top [N]            call sites holding the most live bytes
#   (gdb) memtrace stats              totals
#   (gdb) memtrace leaks [N]          lost blocks (the leak check's report)
#   (gdb) memtrace refs EXPR          who holds a pointer into a block
#   (gdb) memtrace pprof FILE         the in-use profile in pprof's format
#   (gdb) memtrace version            the traced library's version
#
# It never calls into the process: it reads memtrace's tables from the
# inferior's memory through the `memtrace_state` descriptor (src/runtime/descriptor.h),
# so it works the same on a running process stopped anywhere (even with a
# thread inside malloc or inside memtrace) and on a core file. Frames are
# resolved by memtrace-symbolize, a program built from the library's own
# symbolizer (src/symbolize/symbolize.c), so the lines are print_trace's lines.
# The answers' text is written by the library's formatter (src/report/format.c),
# through memtrace-symbolize: this file decodes tables, it does not word
# print_trace's answers.

import array
import bisect
import collections
import itertools
import os
import re
import select
import shlex
import shutil
import struct
import subprocess
import tempfile

import gdb

# Replaced by `make install` with the directory holding memtrace-symbolize.
_INSTALLED_LIBEXEC = "@MEMTRACE_LIBEXECDIR@"

# gdb defines __file__ only while it reads this file.
try:
    _HERE = os.path.dirname(os.path.abspath(__file__))
except NameError:
    _HERE = os.getcwd()

_STATE_VERSION = 1
# The 64-bit words of struct memtrace_state (version 1) after its 16-byte
# header, in order.
_STATE_FIELDS = """
    live_shards live_shard_count live_shard_bits live_shard_size
    live_lock_offset live_count_offset live_slots_offset
    live_log2cap_offset live_entries_offset live_hash_shift live_hash_multiplier
    entry_size entry_ptr entry_size_field entry_seq entry_stack entry_thread
    stack_chunks stack_max_chunks stack_chunk_bits stack_frames_offset
    stack_depth_mask stack_present_bit stack_count
    freed_ring freed_capacity freed_record_size freed_stamp freed_ptr freed_size
    freed_alloc_seq freed_free_seq freed_alloc_stack freed_free_stack
    freed_alloc_thread freed_free_thread
    threads threads_max threads_entry_size threads_tid threads_name
    threads_name_size threads_highest seq_counter
""".split()
# Words added at the end of version 1 later; a smaller descriptor (an older
# library) lacks them, and they read as 0.
_STATE_FIELDS_ADDED = ["freed_pushed", "unwind_fallbacks", "entry_thread_bits",
                       "version_string", "recording"]

_M64 = (1 << 64) - 1
_UNLOCKED_SHARD = ("a table shard was read without its lock: a stopped thread was "
                   "changing it")


# Bounds on what memtrace_state and the tables may say (doc/design.adoc, trap 15:
# a damaged core is the normal case). Far above what the library publishes
# (src/runtime/descriptor.c), and low enough that no damaged value makes gdb read or hold
# more than a few MiB at once, or loop for long.
_MAX_STATE_SIZE = 4096     # bytes of memtrace_state
_MAX_SHARD_BITS = 12
_MAX_SHARD_SIZE = 1024     # bytes of a shard header
_MAX_HEADER = 4096         # offset of a field in a shard or slots header
_MAX_RECORD = 256          # bytes of a live entry or a freed-history record
_MAX_LOG2CAP = 40          # a shard's capacity
_MAX_CHUNK_BITS = 30
_MAX_FRAMES_OFFSET = 64    # words
_MAX_DEPTH_BITS = 16
_MAX_DEPTH = 256           # MT_MAX_DEPTH: print_trace shows no deeper stack
_REC_ATTACHED = 2          # a bit of the recording words' ever_off (src/runtime/recording.h)
_MAX_FREED = 1 << 26       # MEMTRACE_FREED's maximum (src/base/config.c)
_MAX_THREADS = 1 << 20
_MAX_THREAD_ENTRY = 4096
_MAX_NAME = 256
_READ_CHUNK = 1 << 21      # bytes read at once from a large table


def _fail(message):
    raise gdb.GdbError("memtrace: " + message)


def _corrupt(what):
    _fail("memtrace_state looks corrupted (%s)" % what)


# ---------------------------------------------------------------- target

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


# ---------------------------------------------------------------- symbolizer

def _symbolizer_path():
    here = _HERE
    candidates = [os.environ.get("MEMTRACE_SYMBOLIZE", "")]
    if not _INSTALLED_LIBEXEC.startswith("@"):
        candidates.append(os.path.join(_INSTALLED_LIBEXEC, "memtrace-symbolize"))
    candidates += [os.path.join(here, "memtrace-symbolize"),
                   os.path.join(here, "..", "build", "memtrace-symbolize"),
                   shutil.which("memtrace-symbolize") or ""]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    _fail("cannot find memtrace-symbolize (build it with `make`, or set "
          "MEMTRACE_SYMBOLIZE to its path)")


class _Symbolizer:
    """One memtrace-symbolize process per target, kept between commands."""

    TIMEOUT = 60.0

    def __init__(self, target):
        self.key = target.key
        if target.core:
            args = ["--core", target.core]
            if target.exe:
                args += ["--exe", target.exe]
        else:
            args = ["--pid", str(target.inferior.pid)]
        # `memtrace leaks` and `refs` read a live process's memory through
        # /proc/PID/mem, opened here: gdb traces the process, so the kernel
        # lets gdb open it where memtrace-symbolize (not the process's
        # ancestor) would be refused under Yama's ptrace_scope=1.
        self.mem_error = None
        fds = ()
        if not target.core:
            # Once main has called pthread_exit, /proc/PID is a zombie's,
            # without memory: then a live thread's /proc/PID/task/TID/mem.
            pid = target.inferior.pid
            paths = ["/proc/%d/mem" % pid]
            try:
                paths += ["/proc/%d/task/%d/mem" % (pid, t.ptid[1])
                          for t in target.inferior.threads() if t.ptid[1] not in (0, pid)]
            except gdb.error:
                pass
            for path in paths:
                try:
                    fds = (os.open(path, os.O_RDONLY | os.O_CLOEXEC),)
                    args += ["--mem", str(fds[0])]
                    break
                except OSError as e:
                    if self.mem_error is None:
                        self.mem_error = "cannot open %s: %s" % (path, e.strerror)
            if fds:
                self.mem_error = None
        try:
            self.proc = subprocess.Popen([_symbolizer_path()] + args, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         pass_fds=fds)
        except OSError as e:
            _fail("cannot start memtrace-symbolize: %s" % e)
        finally:
            for fd in fds:
                os.close(fd)
        self.buf = b""
        self.bounds = None

    def close(self):
        try:
            self.proc.kill()
            self.proc.wait()
        except OSError:
            pass

    def _died(self):
        err = b""
        try:
            self.proc.kill()
            err = self.proc.stderr.read() or b""
        except OSError:
            pass
        text = err.decode("utf-8", "replace").strip().splitlines()
        _fail(text[-1] if text else "memtrace-symbolize stopped")

    def request(self, text):
        """Sends TEXT (one request, see tools/memtrace-symbolize.c) and returns
        (answer text, ok): ok is False when the answer is an error.

        The request is written while the answer is read: memtrace-symbolize
        answers as it reads, and a request larger than the pipes (thousands
        of freed records) would otherwise leave both sides blocked writing.
        Anything that stops a request halfway (an error, Ctrl-C) ends the
        process, so that no later request reads the rest of this answer."""
        try:
            return self._exchange(text.encode())
        except BaseException:
            self.close()
            raise

    def _exchange(self, data):
        fd_in, fd_out = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        sent = 0
        # The end marker starts with a NUL byte, which no frame text or
        # thread name can hold (a name may hold a newline and "@@").
        while True:
            end = self.buf.find(b"\0@@")
            if end >= 0 and b"\n" in self.buf[end:]:
                break
            wanted = [fd_in] if sent < len(data) else []
            readable, writable, _ = select.select([fd_out], wanted, [], self.TIMEOUT)
            if not readable and not writable:
                _fail("memtrace-symbolize did not answer within %d s" % self.TIMEOUT)
            if writable:
                try:
                    # At most PIPE_BUF bytes: a pipe select() calls writable
                    # takes that many without blocking.
                    sent += os.write(fd_in, data[sent:sent + 4096])
                except OSError:
                    self._died()
            if readable:
                chunk = os.read(fd_out, 65536)
                if not chunk:
                    self._died()
                self.buf += chunk
        nl = self.buf.index(b"\n", end)
        marker, text, self.buf = self.buf[end + 1:nl], self.buf[:end], self.buf[nl + 1:]
        return text.decode("utf-8", "replace"), marker == b"@@"

    def near_bounds(self):
        """(bytes, records): how near a block must lie to be shown, and how
        many freed ones at most, as the formatter has them (format.h)."""
        if self.bounds is None:
            text, _ = self.request("near-bounds\n")
            try:
                b, m = (int(x, 16) for x in text.split())
            except ValueError:
                _fail("memtrace-symbolize answered near-bounds with %r" % text[:80])
            self.bounds = (b, m)
        return self.bounds

    def stack(self, frames):
        """The lines print_trace writes for a stack (return addresses;
        None or empty: none was recorded)."""
        return self.request(_stack_line(frames) + "\n")[0]


# ---------------------------------------------------------------- tables

def _check_layout(d):
    """Fails with one line unless descriptor D (a dict of its words) is
    plausible: every size and count within the bounds above and consistent
    with the others, every field inside its record and aligned."""
    def at_most(name, top, low=0):
        if d[name] > top:
            _corrupt("%s %d, more than %d" % (name, d[name], top))
        if d[name] < low:
            _corrupt("%s %d, less than %d" % (name, d[name], low))

    def record_size(name):
        at_most(name, _MAX_RECORD, 8)
        if d[name] % 8:
            _corrupt("%s %d, not a multiple of 8" % (name, d[name]))

    def field(name, width, size_name):
        if d[name] % width or d[name] + width > d[size_name]:
            _corrupt("%s %d, not %s %d-byte field inside %s %d"
                     % (name, d[name], "an" if width == 8 else "a", width, size_name,
                        d[size_name]))

    def address(name, what):
        if d[name] == 0:
            _corrupt("%s at 0x0" % what)

    at_most("live_shard_bits", _MAX_SHARD_BITS)
    if d["live_shard_count"] != 1 << d["live_shard_bits"]:
        _corrupt("live_shard_count %d, not 1 << live_shard_bits" % d["live_shard_count"])
    address("live_shards", "live shards")
    at_most("live_shard_size", _MAX_SHARD_SIZE, 8)
    field("live_lock_offset", 4, "live_shard_size")
    field("live_count_offset", 8, "live_shard_size")
    field("live_slots_offset", 8, "live_shard_size")
    at_most("live_log2cap_offset", _MAX_HEADER)
    at_most("live_entries_offset", _MAX_HEADER)
    at_most("live_hash_shift", 63)
    record_size("entry_size")
    for name in ("entry_ptr", "entry_size_field", "entry_seq"):
        field(name, 8, "entry_size")
    for name in ("entry_stack", "entry_thread"):
        field(name, 4, "entry_size")
    at_most("entry_thread_bits", 32)

    address("stack_chunks", "stack chunk table")
    at_most("stack_chunk_bits", _MAX_CHUNK_BITS, 1)
    # Stack ids are 32-bit: chunk << chunk_bits | word.
    at_most("stack_max_chunks", 1 << (32 - d["stack_chunk_bits"]), 1)
    at_most("stack_frames_offset", _MAX_FRAMES_OFFSET)
    mask = d["stack_depth_mask"]
    if mask == 0 or mask & (mask + 1) or mask >> _MAX_DEPTH_BITS:
        _corrupt("stack_depth_mask %#x, not a mask of 1 to %d bits" % (mask, _MAX_DEPTH_BITS))
    bit = d["stack_present_bit"]
    if bit == 0 or bit & (bit - 1) or bit & mask:
        _corrupt("stack_present_bit %#x, not one bit above stack_depth_mask" % bit)
    address("stack_count", "stack count")

    at_most("freed_capacity", _MAX_FREED)
    if d["freed_capacity"]:
        address("freed_ring", "freed history")
    record_size("freed_record_size")
    for name in ("freed_stamp", "freed_ptr", "freed_size", "freed_alloc_seq", "freed_free_seq"):
        field(name, 8, "freed_record_size")
    for name in ("freed_alloc_stack", "freed_free_stack", "freed_alloc_thread",
                 "freed_free_thread"):
        field(name, 4, "freed_record_size")

    at_most("threads_max", _MAX_THREADS)
    at_most("threads_entry_size", _MAX_THREAD_ENTRY, 4)
    at_most("threads_name_size", _MAX_NAME, 1)
    field("threads_tid", 4, "threads_entry_size")
    if d["threads_name"] + d["threads_name_size"] > d["threads_entry_size"]:
        _corrupt("threads_name %d, not a %d-byte field inside threads_entry_size %d"
                 % (d["threads_name"], d["threads_name_size"], d["threads_entry_size"]))
    address("threads_highest", "thread count")
    address("seq_counter", "allocation counter")


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


def _gap(addr, start, size):
    """How far ADDR lies outside the block of SIZE bytes at START, or None
    when the block holds it: mt_block_gap (src/base/common.h)."""
    if addr < start:
        return start - addr
    if addr - start < size or addr == start:
        return None
    return addr - start - size


class _Tables:
    """memtrace's tables in one target, read through memtrace_state. Table
    contents read once are kept until the target runs again."""

    def __init__(self, target):
        self.t = target
        if target.core:
            problem = _core_problem(target.core, target.exe)
            if problem:
                _fail(problem)
        addr = _state_address(target.core)
        head = target.read(addr, 16)
        if head is None:
            _corrupt("unreadable at %#x" % addr)
        magic, version, size = struct.unpack("<8sII", head)
        if magic == b"\0" * 8:
            _fail("memtrace has not started in this process yet (no allocation so far)")
        if magic != b"MEMTRACE":
            _corrupt('magic "%s", not "MEMTRACE"'
                     % "".join(chr(c) if 32 <= c < 127 and c not in b'"\\' else "\\x%02x" % c
                               for c in magic))
        if version != _STATE_VERSION:
            _fail("memtrace_state has version %d; this helper reads version %d"
                  % (version, _STATE_VERSION))
        need = 16 + 8 * len(_STATE_FIELDS)
        if size < need:
            _corrupt("size %d, less than %d" % (size, need))
        if size > _MAX_STATE_SIZE:
            _corrupt("size %d, more than %d" % (size, _MAX_STATE_SIZE))
        names = (_STATE_FIELDS + _STATE_FIELDS_ADDED)[:(size - 16) // 8]
        raw = target.read(addr + 16, 8 * len(names))
        if raw is None:
            _corrupt("unreadable at %#x" % addr)
        self.d = dict.fromkeys(_STATE_FIELDS_ADDED, 0)
        self.d.update(zip(names, struct.unpack("<%dQ" % len(names), raw)))
        _check_layout(self.d)
        # The thread word's low bits are the thread number, the rest how the
        # block was allocated (0: an older library, the word is the thread).
        bits = self.d["entry_thread_bits"] or 32
        self.thread_mask = (1 << bits) - 1
        self.shards = None     # [(locked, slots)]
        self.slots = {}        # shard -> (address of its first entry, log2cap) or None
        self.entries = {}      # shard -> columns (ptrs, sizes, seqs, stacks, threads)
        self.sorted_ptrs = None  # the start of every live record, ascending
        self.ring = None       # (stamps, ptrs, sizes) of the trusted records, newest first
        self.chunks = {}
        self.stacks = {}

    # -- live table
    def _shards(self):
        """[(locked, slots address)] of every shard."""
        if self.shards is None:
            d = self.d
            n, sz = d["live_shard_count"], d["live_shard_size"]
            raw = self.t.read(d["live_shards"], n * sz)
            if raw is None:
                _corrupt("live shards at %#x unreadable" % d["live_shards"])
            self.shards = []
            for i in range(n):
                b = i * sz
                lock = struct.unpack_from("<I", raw, b + d["live_lock_offset"])[0]
                slots = struct.unpack_from("<Q", raw, b + d["live_slots_offset"])[0]
                self.shards.append((lock != 0, slots))
        return self.shards

    def _hash(self, addr):
        d = self.d
        return ((addr >> d["live_hash_shift"]) * d["live_hash_multiplier"]) & _M64

    def _entry(self, raw, off):
        d = self.d
        ptr = struct.unpack_from("<Q", raw, off + d["entry_ptr"])[0]
        size = struct.unpack_from("<Q", raw, off + d["entry_size_field"])[0]
        seq = struct.unpack_from("<Q", raw, off + d["entry_seq"])[0]
        stack = struct.unpack_from("<I", raw, off + d["entry_stack"])[0]
        thread = struct.unpack_from("<I", raw, off + d["entry_thread"])[0]
        return (ptr, size, seq, stack, thread & self.thread_mask)

    def _slots(self, n):
        """(address of shard N's first entry, log2 capacity), or None for a
        shard with no slots mapping yet. The mapping is published whole
        (src/store/live_table.c), so even a locked shard's must be readable."""
        if n not in self.slots:
            _, slots = self._shards()[n]
            result = None
            if slots:
                d = self.d
                log2cap = self.t.u64(slots + d["live_log2cap_offset"])
                if log2cap is None:
                    _corrupt("live shard %d: slots at %#x unreadable" % (n, slots))
                if log2cap > _MAX_LOG2CAP:
                    _corrupt("live shard %d: log2 capacity %d, more than %d"
                             % (n, log2cap, _MAX_LOG2CAP))
                base = slots + d["live_entries_offset"]
                if self.t.read(base + (d["entry_size"] << log2cap) - 8, 8) is None:
                    _corrupt("live shard %d: %d slots at %#x not all readable"
                             % (n, 1 << log2cap, base))
                result = (base, log2cap)
            self.slots[n] = result
        return self.slots[n]

    def _read_slots(self, n, base, first, count):
        raw = self.t.read(base + first * self.d["entry_size"], count * self.d["entry_size"])
        if raw is None:
            _corrupt("live shard %d: slots at %#x unreadable" % (n, base))
        return raw

    def _columns(self, n):
        """Shard N as columns over all its slots (ptr 0: empty):
        (ptrs, sizes, seqs, stacks, threads)."""
        if n in self.entries:
            return self.entries[n]
        d = self.d
        result = ([], [], [], [], [])
        slots = self._slots(n)
        if slots:
            base, log2cap = slots
            es = d["entry_size"]
            per_read = max(1, _READ_CHUNK // es)
            for first in range(0, 1 << log2cap, per_read):
                raw = self._read_slots(n, base, first, min(per_read, (1 << log2cap) - first))
                # Strided views of the slot array decode a shard at C speed.
                q, i = memoryview(raw).cast("Q"), memoryview(raw).cast("I")
                wq, wi = es // 8, es // 4
                result[0].extend(q[d["entry_ptr"] // 8::wq].tolist())
                result[1].extend(q[d["entry_size_field"] // 8::wq].tolist())
                result[2].extend(q[d["entry_seq"] // 8::wq].tolist())
                result[3].extend(i[d["entry_stack"] // 4::wi].tolist())
                mask = self.thread_mask
                result[4].extend(t & mask for t in i[d["entry_thread"] // 4::wi].tolist())
        self.entries[n] = result
        return result

    def find_exact(self, addr):
        """(entry or None, unlocked) for a block starting at ADDR; an entry
        is (ptr, size, seq, stack, thread)."""
        d = self.d
        h = self._hash(addr)
        n = h >> (64 - d["live_shard_bits"])
        locked, _ = self._shards()[n]
        if n in self.entries:
            cols = self.entries[n]
            try:
                k = cols[0].index(addr)
            except ValueError:
                return None, locked
            return tuple(c[k] for c in cols), locked
        slots = self._slots(n)
        if not slots:
            return None, locked
        base, log2cap = slots
        cap = 1 << log2cap
        i = ((h << d["live_shard_bits"]) & _M64) >> (64 - log2cap)
        es = d["entry_size"]
        probed = 0
        while probed < cap:
            batch = min(64, cap - i, cap - probed)
            raw = self._read_slots(n, base, i, batch)
            for k in range(batch):
                p = struct.unpack_from("<Q", raw, k * es + d["entry_ptr"])[0]
                if p == addr:
                    return self._entry(raw, k * es), locked
                if p == 0:
                    return None, locked
            probed += batch
            i = (i + batch) & (cap - 1)
        return None, locked

    def around(self, addr):
        """(below, above, inside, unlocked): the live records with the
        greatest start <= ADDR and the least start > ADDR (entries as
        find_exact's, or None), INSIDE when BELOW holds ADDR: the rule of
        mt_live_find_around, so both name the same blocks. Every shard is
        read; unlocked if one was locked."""
        if self.sorted_ptrs is None:
            # Sorted once per stop (about 0.5 s for a million blocks); each
            # question is then two bisections and two hash probes.
            self.sorted_ptrs = sorted(filter(None, itertools.chain.from_iterable(
                self._columns(n)[0] for n in range(len(self._shards())))))
        ptrs = self.sorted_ptrs
        unlocked = any(locked for locked, _ in self._shards())
        k = bisect.bisect_right(ptrs, addr)
        below = self.find_exact(ptrs[k - 1])[0] if k > 0 else None
        above = self.find_exact(ptrs[k])[0] if k < len(ptrs) else None
        inside = below is not None and _gap(addr, below[0], below[1]) is None
        return below, above, inside, unlocked

    def live_block(self, addr):
        """(start, size) of the live block that starts at or contains ADDR,
        or None."""
        e = self.find_exact(addr)[0]
        if e is None:
            below, _, inside, _ = self.around(addr)
            e = below if inside else None
        return None if e is None else (e[0], e[1])

    def site_totals(self):
        """({stack: [bytes, blocks]}, live blocks, live bytes, unsure): unsure
        if some shard was locked."""
        sites, blocks, total, unsure = {}, 0, 0, False
        for n, (locked, _) in enumerate(self._shards()):
            cols = self._columns(n)
            unsure = unsure or locked
            for p, size, sid in zip(cols[0], cols[1], cols[3]):
                if p:
                    s = sites.get(sid)
                    if s is None:
                        sites[sid] = [size, 1]
                    else:
                        s[0] += size
                        s[1] += 1
                    blocks += 1
                    total += size
        return sites, blocks, total, unsure

    # -- freed history
    def _ring_pieces(self, begin, end):
        """Reads the slots of pushes BEGIN to END - 1, newest first, in
        pieces of one read each: yields (first push, stamps, ptrs, sizes)."""
        d = self.d
        cap, rs = d["freed_capacity"], d["freed_record_size"]
        per_read = max(1, _READ_CHUNK // rs)
        hi = end
        while hi > begin:
            # Pushes lo..hi-1 lie in consecutive slots: one lap of the ring.
            lo = max(begin, hi - per_read, (hi - 1) - (hi - 1) % cap)
            raw = self.t.read(d["freed_ring"] + (lo % cap) * rs, (hi - lo) * rs)
            if raw is None:
                _corrupt("freed history at %#x unreadable" % d["freed_ring"])
            q, w = memoryview(raw).cast("Q"), rs // 8
            yield (lo, q[d["freed_stamp"] // 8::w].tolist(), q[d["freed_ptr"] // 8::w].tolist(),
                   q[d["freed_size"] // 8::w].tolist())
            hi = lo

    def _ring(self):
        if self.ring is None:
            d = self.d
            cap = d["freed_capacity"]
            stamps, ptrs, sizes = array.array("Q"), array.array("Q"), array.array("Q")
            if d["freed_ring"] and cap:
                if d["freed_pushed"]:
                    pushed = self._counter("freed_pushed", 8, "freed-history push count")
                else:
                    # An older library does not say how many were pushed:
                    # the newest stamp in the whole ring does.
                    pushed = 0
                    for first, st, _, _ in self._ring_pieces(0, cap):
                        for j, s in enumerate(st):
                            if s > pushed and (s - 1) % cap == (first + j) % cap:
                                pushed = s
                for first, st, pt, sz in self._ring_pieces(max(0, pushed - cap), pushed):
                    for j in range(len(st) - 1, -1, -1):
                        # A slot is trusted only with the stamp of the push
                        # that finished there (see freed_history.c).
                        if st[j] == first + j + 1:
                            stamps.append(st[j])
                            ptrs.append(pt[j])
                            sizes.append(sz[j])
            self.ring = (stamps, ptrs, sizes)
        return self.ring

    def freed_around(self, addr, near_bytes, near_max):
        """(covering, near): the freed-history records covering ADDR, and
        the newest NEAR_MAX of those within NEAR_BYTES of it (_gap), each
        newest first, as dicts: mt_freed_find_around's rule."""
        d = self.d
        cap, rs = d["freed_capacity"], d["freed_record_size"]
        covering, near = [], []
        for stamp, ptr, size in zip(*self._ring()):
            gap = _gap(addr, ptr, size)
            if gap is None:
                out = covering
            elif len(near) < near_max and gap <= near_bytes:
                out = near
            else:
                continue
            raw = self.t.read(d["freed_ring"] + (stamp - 1) % cap * rs, rs)
            if raw is None:
                _corrupt("freed history at %#x unreadable" % d["freed_ring"])

            def u(field, fmt, raw=raw):
                return struct.unpack_from(fmt, raw, d[field])[0]
            out.append(dict(ptr=ptr, size=size,
                            alloc_seq=u("freed_alloc_seq", "<Q"),
                            free_seq=u("freed_free_seq", "<Q"),
                            alloc_stack=u("freed_alloc_stack", "<I"),
                            free_stack=u("freed_free_stack", "<I"),
                            alloc_thread=u("freed_alloc_thread", "<I"),
                            free_thread=u("freed_free_thread", "<I")))
        return covering, near

    def freed_count(self):
        return len(self._ring()[0])

    # -- stacks
    def stack(self, sid):
        """The return addresses of stack SID, or None where mt_stack_get
        finds none (so a torn freed-history record prints as print_trace
        prints it)."""
        if sid in self.stacks:
            return self.stacks[sid]
        d = self.d
        result = None
        bits = d["stack_chunk_bits"]
        c, w = sid >> bits, sid & ((1 << bits) - 1)
        if sid and c < d["stack_max_chunks"]:
            if c not in self.chunks:
                self.chunks[c] = self.t.u64(d["stack_chunks"] + 8 * c)
                if self.chunks[c] is None:
                    _corrupt("stack chunk table at %#x unreadable" % d["stack_chunks"])
            chunk = self.chunks[c]
            header = self.t.u64(chunk + 8 * w) if chunk else None
            if chunk and header is None:
                _corrupt("stack chunk %d at %#x unreadable" % (c, chunk))
            if header is not None and header & d["stack_present_bit"]:
                depth = header & d["stack_depth_mask"]
                if depth <= _MAX_DEPTH and w + d["stack_frames_offset"] + depth <= 1 << bits:
                    raw = self.t.read(chunk + 8 * (w + d["stack_frames_offset"]), 8 * depth)
                    if raw is None:
                        _corrupt("stack chunk %d at %#x unreadable" % (c, chunk))
                    result = list(struct.unpack("<%dQ" % depth, raw))
        self.stacks[sid] = result
        return result

    def _counter(self, name, size, what):
        b = self.t.read(self.d[name], size)
        if b is None:
            _corrupt("%s at %#x unreadable" % (what, self.d[name]))
        return struct.unpack("<I" if size == 4 else "<Q", b)[0]

    def stack_count(self):
        return self._counter("stack_count", 4, "stack count")

    # -- threads
    def thread_name(self, n):
        """Thread N's name as the request field memtrace-symbolize reads:
        its bytes in hex, or "-" when it has none."""
        d = self.d
        if d["threads"] and 0 < n <= d["threads_max"]:
            raw = self.t.read(d["threads"] + (n - 1) * d["threads_entry_size"]
                              + d["threads_name"], d["threads_name_size"])
            if raw is None:
                _corrupt("thread registry at %#x unreadable" % d["threads"])
            name = raw.split(b"\0", 1)[0]
            if name:
                return name.hex()
        return "-"

    def thread_count(self):
        return self._counter("threads_highest", 4, "thread count")

    def unwind_fallbacks(self):
        """Captures the cfi unwinder handed to libunwind; None from a
        memtrace that does not count them."""
        if not self.d["unwind_fallbacks"]:
            return None
        return self._counter("unwind_fallbacks", 8, "unwind fallback count")

    def allocations(self):
        v = self._counter("seq_counter", 8, "allocation counter")
        return v - 1 if v else 0

    def recording(self):
        """The recording words (src/runtime/recording.h): on, ever_off, seq, sec;
        None from a memtrace that cannot turn recording off."""
        if not self.d["recording"]:
            return None
        b = self.t.read(self.d["recording"], 32)
        if b is None:
            _corrupt("recording state at %#x unreadable" % self.d["recording"])
        return struct.unpack("<4Q", b)

    def version(self):
        """The library's version string; None from a memtrace older than
        the field."""
        if not self.d["version_string"]:
            return None
        b = self.t.read(self.d["version_string"], 64)
        if b is None or b"\0" not in b:
            _corrupt("version string at %#x unreadable" % self.d["version_string"])
        return b.split(b"\0", 1)[0].decode("ascii", "replace")


# ---------------------------------------------------------------- session

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
        if self.tables is None or self.tables.t.key != target.key:
            self.tables = _Tables(target)
        if self.symbolizer is None or self.symbolizer.key != target.key or \
                self.symbolizer.proc.poll() is not None:
            if self.symbolizer:
                self.symbolizer.close()
            self.symbolizer = _Symbolizer(target)
        return self.tables, self.symbolizer


_session = _Session()
# The tables are stale after anything that lets the program run or writes its
# memory: resuming, `set var`, and inferior calls (`call free(p)`, `print
# malloc(77)`), which run the program without a "cont" event.
for _event, _fn in (("cont", _session.invalidate_tables),
                    ("memory_changed", _session.invalidate_tables),
                    ("inferior_call", _session.invalidate_tables),
                    ("exited", _session.invalidate_all),
                    ("new_objfile", _session.invalidate_all),
                    ("clear_objfiles", _session.invalidate_all)):
    _registry = getattr(gdb.events, _event, None)
    if _registry is not None:
        _registry.connect(_fn)


# ---------------------------------------------------------------- reports

def _stack_line(frames):
    """A "stack" request line for FRAMES (None or empty: none recorded)."""
    return "stack %s" % " ".join("%x" % f for f in frames or [])


def _freed_lines(word, r, st):
    """The request lines of freed record R: WORD's line and two stacks."""
    return ["%s %x %x %x %x %x %s %x %s"
            % (word, r["ptr"], r["size"], r["alloc_seq"], r["free_seq"],
               r["free_thread"], st.thread_name(r["free_thread"]),
               r["alloc_thread"], st.thread_name(r["alloc_thread"])),
            _stack_line(st.stack(r["free_stack"])),
            _stack_line(st.stack(r["alloc_stack"]))]


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
    """print_trace's answer for ADDR: the records are read from memory here,
    the text is written by the library's own formatter (src/report/format.c) in
    memtrace-symbolize, so the two entry points cannot drift apart. HISTORY:
    a live block's freed records shown at most."""
    st, sym = _session.get(target)
    req = ["answer %x %x" % (addr, history)]
    if addr:
        below = above = None
        e, unlocked = st.find_exact(addr)
        if e is None:
            below, above, inside, more = st.around(addr)
            unlocked = unlocked or more
            if inside:
                e, below, above = below, None, None
        if e is not None:
            ptr, size, seq, sid, thread = e
            req.append("live %x %x %x %x %s %x"
                       % (ptr, size, seq, thread, st.thread_name(thread), int(unlocked)))
            req.append(_stack_line(st.stack(sid)))
        else:
            req.append("lookup %x" % int(unlocked))
        near_bytes, near_max = sym.near_bounds()
        covering, near = st.freed_around(addr, near_bytes, near_max)
        for i, r in enumerate(covering):
            if e is not None and i >= history:
                # Counted, not shown: its stacks are not worth reading.
                r = dict(r, free_stack=0, alloc_stack=0)
            req += _freed_lines("freed", r, st)
        for word, n in (("below", below), ("above", above)):
            # The formatter shows only those within the bound: the others'
            # stacks are not worth reading.
            if n is not None and (_gap(addr, n[0], n[1]) or 0) <= near_bytes:
                ptr, size, seq, sid, thread = n
                req.append("%s %x %x %x %x %s" % (word, ptr, size, seq, thread, st.thread_name(thread)))
                req.append(_stack_line(st.stack(sid)))
        for r in near:
            req += _freed_lines("near-freed", r, st)
    req.append("end\n")
    text, ok = sym.request("\n".join(req))
    text += _recording_line(st, sym)
    if not ok:
        raise gdb.GdbError(text.rstrip("\n"))
    return text


def _recording_line(st, sym):
    """The line that ends every answer once recording was ever off (src/report/format.c's
    mt_fmt_recording, through memtrace-symbolize); "" otherwise."""
    r = st.recording()
    if r is None or not r[1]:
        return ""
    return sym.request("recording %x %x %x %x\n" % r)[0]


def _blocks(n):
    return "block" if n == 1 else "blocks"


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
    st, sym = _session.get()
    sites, blocks, total, unsure = st.site_totals()
    order = sorted(sites.items(), key=lambda kv: (-kv[1][0], -kv[1][1], kv[0]))[:n]
    out = ["memtrace: top %d of %d call sites by live bytes (%d bytes in %d live %s "
           "in all)\n" % (len(order), len(sites), total, blocks, _blocks(blocks))]
    if unsure:
        out.append("  (%s; totals may be off)\n" % _UNLOCKED_SHARD)
    for i, (sid, (nbytes, nblocks)) in enumerate(order, 1):
        out.append("memtrace: site %d: %d bytes in %d %s allocated at:\n"
                   % (i, nbytes, nblocks, _blocks(nblocks)))
        out.append(sym.stack(st.stack(sid)))
    out.append(_recording_line(st, sym))
    return "".join(out)


def stats():
    st, sym = _session.get()
    sites, blocks, total, unsure = st.site_totals()
    out = ["memtrace: %d live blocks, %d live bytes, %d call sites with live blocks\n"
           % (blocks, total, len(sites)),
           "memtrace: %d distinct stacks, %d allocations recorded, %d threads seen\n"
           % (st.stack_count(), st.allocations(), st.thread_count()),
           "memtrace: %d freed-history records (capacity %d%s)\n"
           % (st.freed_count(), st.d["freed_capacity"],
              ", MEMTRACE_FREED=0: off" if not st.d["freed_capacity"] else "")]
    fallbacks = st.unwind_fallbacks()
    if fallbacks is not None:
        out.append("memtrace: %d stack captures unwound by libunwind instead of cfi\n"
                   % fallbacks)
    if unsure:
        out.append("  (%s; totals may be off)\n" % _UNLOCKED_SHARD)
    out.append(_recording_line(st, sym))
    return "".join(out)


# ---------------------------------------------------------------- leaks

# Threads whose frames `memtrace refs` lists at most, per thread.
_MAX_FRAMES = 256


def _register_names(frame):
    """The general registers of FRAME's architecture (gdb 12 and later say
    which they are; an older gdb gets x86-64's)."""
    try:
        return [r.name for r in frame.architecture().registers("general")]
    except (AttributeError, ValueError, gdb.error):
        return ["rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10",
                "r11", "r12", "r13", "r14", "r15", "rip", "fs_base", "gs_base"]


def _register(frame, name):
    try:
        return int(frame.read_register(name)) & _M64
    except (gdb.error, ValueError, OverflowError, TypeError):
        return None


def _thread_lines(with_frames):
    """The request lines of every thread of the inferior (memtrace-
    symbolize.c): its registers, as gdb has them for a stopped process or
    from a core's notes, and with WITH_FRAMES its frames' stack pointers
    and functions. The selected thread and frame are put back."""
    inf = gdb.selected_inferior()
    old_thread = gdb.selected_thread()
    try:
        old_frame = gdb.selected_frame()
    except gdb.error:
        old_frame = None
    lines = []
    try:
        for th in sorted(inf.threads(), key=lambda t: t.num):
            if not th.is_valid():
                continue
            th.switch()
            tid = th.ptid[1] or th.ptid[0]
            try:
                f = gdb.newest_frame()
                sp = _register(f, "sp")
            except gdb.error:  # a thread running in non-stop mode
                sp = None
            if sp is None:
                lines.append("thread %x %x 0 0" % (tid, th.num))
                continue
            tp = _register(f, "fs_base")
            if tp is None:
                tp = _register(f, "tpidr") or 0
            lines.append("thread %x %x %x %x" % (tid, th.num, sp, tp))
            for name in _register_names(f):
                v = _register(f, name)
                if v is not None:
                    lines.append("reg %s %x" % (name, v))
            # A stack gdb cannot unwind further ends the list there. RET:
            # the frame's pc as a return address, and OUTER: how many
            # inlined frames lie between it and its real frame (0 for that
            # one): memtrace-symbolize names row n - 1 - OUTER of RET's
            # inline chain, as every other answer names it (gdb's names
            # differ for Rust and C++).
            frames = []
            try:
                newer_normal = False
                while with_frames and f is not None and f.level() < _MAX_FRAMES:
                    fsp = _register(f, "sp")
                    if fsp is not None:
                        ret = (f.pc() + (0 if newer_normal else 1)) & _M64
                        frames.append([f.level(), fsp, f.name() or "??", ret,
                                       f.type() == gdb.INLINE_FRAME])
                    if f.type() != gdb.INLINE_FRAME:
                        newer_normal = f.type() == gdb.NORMAL_FRAME
                    f = f.older()
            except gdb.error:
                pass
            outer = 0
            for fr in reversed(frames):
                outer = outer + 1 if fr[4] else 0
                fr[4] = outer
            for level, fsp, name, ret, outer in frames:
                lines.append("frame %x %x %s %x %x" % (level, fsp,
                                                       name.encode("utf-8", "replace").hex(),
                                                       ret, outer))
    finally:
        if old_thread is not None and old_thread.is_valid():
            old_thread.switch()
            try:
                if old_frame is not None and old_frame.is_valid():
                    old_frame.select()
            except gdb.error:
                pass
    return lines


def _tcb_size():
    """glibc's struct pthread size, which it publishes for libthread_db;
    None when it cannot be read (memtrace-symbolize then assumes glibc
    2.3x's)."""
    try:
        with _Language("c"):
            return int(gdb.parse_and_eval("*(unsigned int *)&_thread_db_sizeof_pthread"))
    except (gdb.error, RuntimeError):
        return None


def _leak_request(word, arg, with_frames):
    """Sends a "leaks" or "refs" request (memtrace-symbolize.c) for the
    current target and returns its answer's text. The live table is not
    decoded here: its slot arrays' addresses and the layout, as
    memtrace_state says and _check_layout checked, go to memtrace-symbolize,
    which reads the blocks itself (a million of them in well under a
    second, where Python would take seconds)."""
    target = _Target()
    st, sym = _session.get(target)
    if sym.mem_error:
        _fail("%s: %s" % (word, sym.mem_error))
    d = st.d
    req = ["%s %x %x" % (word, arg, target.inferior.pid),
           "layout %x %x %x %x" % (d["entry_size"], d["entry_ptr"], d["entry_size_field"],
                                   d["entry_stack"]),
           "stacks %x %x %x %x %x %x" % (d["stack_chunks"], d["stack_max_chunks"],
                                         d["stack_chunk_bits"], d["stack_frames_offset"],
                                         d["stack_depth_mask"], d["stack_present_bit"]),
           "self %x" % _state_address()]
    for n, (locked, _) in enumerate(st._shards()):
        slots = st._slots(n)
        if slots:
            req.append("shard %x %x %x" % (slots[0], 1 << slots[1], int(locked)))
    tcb = _tcb_size()
    if tcb:
        req.append("tcb %x" % tcb)
    rec = st.recording()
    if rec and rec[1] & _REC_ATTACHED:
        req.append("attached")  # the allocator's heap is a root (leak_roots.h)
    req += _thread_lines(with_frames)
    path = os.environ.get("MEMTRACE_SUPPRESSIONS")
    if path and word == "leaks":
        req.append("suppressions %s" % os.fsencode(path).hex())
    req.append("end\n")
    text, ok = sym.request("\n".join(req))
    if not ok:
        raise gdb.GdbError(text.rstrip("\n"))
    return text


def leaks(arg):
    """`memtrace leaks [N]`: the report of MEMTRACE_LEAK_CHECK=1 at exit,
    for the stopped process or the core file, N sites at most."""
    n = _count("leaks", arg)
    # Blocks allocated while recording was off are unknown to the scan: the
    # report says so first, as at exit, and its summary line stays last.
    st, sym = _session.get()
    return _recording_line(st, sym) + _leak_request("leaks", n, False)


def refs_expr(expr):
    """`memtrace refs EXPR`: who points into the live block at EXPR."""
    target = _Target()
    addr, note = _address(expr, target)
    text = note + _leak_request("refs", addr, True)
    st, sym = _session.get()
    return text + _recording_line(st, sym)


def version():
    st, _ = _session.get()
    v = st.version()
    return "memtrace: library version %s\n" % (v if v is not None else "unknown (older than 0.1.0)")


# ---------------------------------------------------------------- pprof

def pprof(arg):
    """`memtrace pprof FILE`: the in-use profile (live blocks grouped by
    allocation stack and thread) in pprof's format, written by the library's
    own writer (src/report/pprof.c) in memtrace-symbolize; its total is stats'."""
    path = os.path.expanduser(arg)
    if not path:
        _fail("usage: memtrace pprof FILE")
    st, sym = _session.get()
    groups, unsure = {}, False
    for n, (locked, _) in enumerate(st._shards()):
        cols = st._columns(n)
        unsure = unsure or locked
        for p, size, sid, thread in zip(cols[0], cols[1], cols[3], cols[4]):
            if p:
                g = groups.get((sid, thread))
                if g is None:
                    groups[(sid, thread)] = [size, 1]
                else:
                    g[0] += size
                    g[1] += 1
    # One line per group, not per block: the request stays small.
    # The entry point (relocated, in a process or a core) lies in the main
    # executable, whose Mapping memtrace-symbolize puts first.
    entry = re.search(rb"Entry point: (0x[0-9a-f]+)", _info_target())
    req = ["pprof %s%s" % (os.fsencode(path).hex(), " %x" % int(entry.group(1), 16) if entry else "")]
    names, total, blocks = {}, 0, 0
    for (sid, thread), (nbytes, nblocks) in groups.items():
        if thread not in names:
            names[thread] = st.thread_name(thread)
        req.append("sample %x %s %x %x %s" % (thread, names[thread], nbytes, nblocks,
                                              " ".join("%x" % f for f in st.stack(sid) or [])))
        total += nbytes
        blocks += nblocks
    req.append("end\n")
    text, ok = sym.request("\n".join(req))
    if not ok:
        raise gdb.GdbError(text.rstrip("\n"))
    sites = len({sid for sid, _ in groups})
    out = ["memtrace: pprof profile: %s: %d live bytes in %d %s at %d call sites\n"
           % (path, total, blocks, _blocks(blocks), sites)]
    if unsure:
        out.append("  (%s; totals may be off)\n" % _UNLOCKED_SHARD)
    return "".join(out)


# ---------------------------------------------------------------- commands

class _NoInferiorCalls:
    """While active, gdb refuses to call functions in the program. The
    command reads memory only: an expression must neither run the program
    (`memtrace malloc(5)`) nor make gdb copy a literal into it (gdb calls
    malloc there for `"abc" + 1`), which would change the tables being
    asked about and can hang with scheduler-locking on."""

    def __enter__(self):
        try:
            self.old = gdb.parameter("may-call-functions")
        except RuntimeError:  # a gdb older than 9 has no such setting
            self.old = None
        if self.old:
            gdb.execute("set may-call-functions off", to_string=True)
        return self

    def __exit__(self, *_):
        if self.old:
            gdb.execute("set may-call-functions on", to_string=True)


def _evaluate(expr):
    with _NoInferiorCalls():
        return gdb.parse_and_eval(expr)


def _eval_error(expr, e):
    _fail("cannot evaluate '%s': %s" % (expr, str(e).splitlines()[0] if str(e) else e))


def _address_in_memory(v, expr):
    """The address of V, which must be in the program's memory already."""
    try:
        # An array that is not in memory (a string literal, an array in a
        # convenience variable) has no address, and asking gdb for one makes
        # it copy the array into the program; its first element has an
        # address exactly when the array is in memory.
        while v.type.strip_typedefs().code == gdb.TYPE_CODE_ARRAY:
            v = v[0]
        a = v.address
    except gdb.error:
        a = None
    if a is None:
        _fail("%s is not a pointer or an address" % expr)
    return int(a) & _M64


def _address(expr, target):
    """(address, note) for EXPR: a pointer's or integer's value, an array's
    or function's or referenced object's address, or the heap pointer inside
    a handle (see _handle_address), computed without calling into the
    program. EXPR is parsed in the frame's language; NOTE is the "using"
    line for a handle, or ""."""
    with _NoInferiorCalls():
        try:
            v = gdb.parse_and_eval(expr)
            code = v.type.strip_typedefs().code
            # A C++ reference to a handle stands for the handle. gdb 13 shows
            # a Rust reference as a raw pointer, as it does a Box: `memtrace r`
            # asks about the address in it, `memtrace *r` about the handle.
            if code in (gdb.TYPE_CODE_REF, gdb.TYPE_CODE_RVALUE_REF):
                r = v.referenced_value()
                if _handle_kind(r.type) is not None:
                    return _handle_address(r, expr, target)
                return _address_in_memory(r, expr), ""
            if code in (gdb.TYPE_CODE_ARRAY, gdb.TYPE_CODE_FUNC):
                return _address_in_memory(v, expr), ""
            if code in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION):
                return _handle_address(v, expr, target)
            if code not in (gdb.TYPE_CODE_PTR, gdb.TYPE_CODE_INT, gdb.TYPE_CODE_ENUM,
                            gdb.TYPE_CODE_BOOL, gdb.TYPE_CODE_CHAR):
                _fail("'%s' is a %s, not an address" % (expr, v.type))
            return int(v) & _M64, ""
        except gdb.GdbError:
            raise
        except (gdb.error, RuntimeError, ValueError, OverflowError) as e:
            _eval_error(expr, e)


# ---------------------------------------------------------------- handles

# Types that own a heap block through a pointer inside them. `memtrace v` on
# one asks about that block. Each kind: a pattern for the type's name without
# its generic or template arguments; what the pointer is, for the "using"
# line; field paths to try first (gdb finds inherited and anonymous members
# by name); what one without a block is called; where its control block is,
# for a shared pointer. Where no path fits (another version of the Rust or
# C++ library), the first pointer in the value, depth first, is used: for
# each kind below that is the one.
_Handle = collections.namedtuple("_Handle", "pattern what paths empty control")
_HANDLES = [
    _Handle(r"alloc::vec::Vec", "the Vec's buffer",
            ["buf.ptr.pointer.pointer", "buf.ptr.pointer", "buf.inner.ptr.pointer.pointer"],
            "an empty Vec", None),
    _Handle(r"alloc::string::String", "the String's buffer",
            ["vec.buf.ptr.pointer.pointer", "vec.buf.ptr.pointer",
             "vec.buf.inner.ptr.pointer.pointer"], "an empty String", None),
    _Handle(r"alloc::collections::vec_deque::VecDeque", "the VecDeque's buffer",
            ["buf.ptr.pointer.pointer", "buf.ptr.pointer"], "an empty VecDeque", None),
    # A Box of a sized value is a plain pointer to gdb; a Box of a slice or
    # a trait object is a pointer and a length or vtable.
    _Handle(r"alloc::boxed::Box", "the Box's allocation", ["data_ptr", "pointer"],
            "a Box of a zero-sized value", None),
    _Handle(r"alloc::rc::Rc", "the Rc's allocation: its counts and value", ["ptr.pointer"],
            None, None),
    _Handle(r"alloc::rc::Weak", "the Weak's allocation: its counts and value",
            ["ptr.pointer"], "a Weak made by Weak::new", None),
    _Handle(r"alloc::sync::Arc", "the Arc's allocation: its counts and value", ["ptr.pointer"],
            None, None),
    _Handle(r"alloc::sync::Weak", "the Weak's allocation: its counts and value",
            ["ptr.pointer"], "a Weak made by Weak::new", None),
    _Handle(r"std::(__\w+::)*vector", "the vector's buffer", ["_M_impl._M_start"],
            "an empty vector", None),
    _Handle(r"std::(__\w+::)*basic_string", "the string's characters", ["_M_dataplus._M_p"],
            None, None),
    # Its pointer sits in a tuple's base class: no path names it without
    # ambiguity, the search finds it.
    _Handle(r"std::(__\w+::)*unique_ptr", "the unique_ptr's object", [],
            "an empty unique_ptr", None),
    _Handle(r"std::(__\w+::)*(__)?shared_ptr", "the shared_ptr's object", ["_M_ptr"],
            "an empty shared_ptr", "_M_refcount._M_pi"),
    _Handle(r"std::(__\w+::)*(__)?weak_ptr", "the weak_ptr's object", ["_M_ptr"],
            "an empty weak_ptr", "_M_refcount._M_pi"),
]
# Bounds on the search for pointers inside a value: a unique_ptr's pointer
# is 6 levels down; a large struct is not walked whole.
_MAX_FIELD_DEPTH = 8
_MAX_FIELDS_SEEN = 256
_MAX_LISTED = 8
# Below this a pointer cannot hold a heap block: null, or the dangling,
# aligned pointer of an empty Rust Vec. All ones is Rust's Weak::new.
_FIRST_PAGE = 4096


def _type_name(t):
    t = t.strip_typedefs()
    name = t.tag or t.name or str(t)
    return name.split("<", 1)[0].strip()


def _handle_kind(t):
    name = _type_name(t)
    for kind in _HANDLES:
        if re.fullmatch(kind.pattern, name):
            return kind
    return None


def _is_rust_enum(t):
    """gdb gives a Rust enum a nameless field, its discriminant, that is not
    an anonymous struct or union as in C and C++. Its variants overlap and
    only gdb's printer knows which one is live: no pointer is read there."""
    return any(f.name is None and not f.is_base_class and f.type is not None
               and f.type.strip_typedefs().code not in (gdb.TYPE_CODE_STRUCT,
                                                        gdb.TYPE_CODE_UNION)
               for f in t.fields())


def _field_name(name):
    # Rust's tuple fields are __0, __1 in the debug information, .0 in code.
    return name[2:] if re.fullmatch(r"__\d+", name) else name


def _follow(v, path):
    """The pointer at PATH ("a.b.c") in V, or None if V has no such field
    or it is not a pointer."""
    try:
        for name in path.split("."):
            v = v[name]
    except (gdb.error, KeyError, TypeError):
        return None
    return v if v.type.strip_typedefs().code == gdb.TYPE_CODE_PTR else None


def _pointer_fields(v):
    """[(path, pointer)] of the data pointers inside struct or union V, depth
    first in declaration order, base classes included (they add nothing to
    the path, as C++ names inherited members directly); vtable and function
    pointers left out. Bounded by _MAX_FIELD_DEPTH and _MAX_FIELDS_SEEN."""
    found = []
    seen = 0

    def walk(val, path, depth):
        nonlocal seen
        t = val.type.strip_typedefs()
        if depth > _MAX_FIELD_DEPTH or _is_rust_enum(t):
            return
        for f in t.fields():
            seen += 1
            if seen > _MAX_FIELDS_SEEN:
                return
            if not hasattr(f, "bitpos") or f.type is None:  # a static member
                continue
            ft = f.type.strip_typedefs()
            sub = path if f.is_base_class or not f.name else path + [_field_name(f.name)]
            if ft.code == gdb.TYPE_CODE_PTR:
                if (f.name or "").startswith("_vptr") or \
                        ft.target().strip_typedefs().code == gdb.TYPE_CODE_FUNC:
                    continue
                found.append((".".join(sub), val[f]))
            elif ft.code in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION):
                walk(val[f], sub, depth + 1)

    walk(v, [], 0)
    return found


def _shown(expr, path):
    """How a user writes field PATH of EXPR."""
    if not re.fullmatch(r"[A-Za-z_$][\w$]*((::|\.|->)[A-Za-z_$][\w$]*|\[\d+\])*", expr):
        expr = "(%s)" % expr
    return "%s.%s" % (expr, path) if path else expr


def _handle_address(v, expr, target):
    """(address, note) for a struct, union or class value V: the heap pointer
    inside a known handle (a Vec, a std::vector, ...); otherwise its only
    pointer field into a live heap block. Anything else fails with the list
    of its pointer fields to choose from."""
    kind = _handle_kind(v.type)
    if kind is None:
        return _pointer_field_address(v, expr, target)
    what, empty = kind.what, kind.empty
    path = ptr = None
    for p in kind.paths:
        ptr = _follow(v, p)
        if ptr is not None:
            path = p
            break
    else:
        fields = _pointer_fields(v)
        if not fields:
            _fail("'%s' is a %s, but memtrace finds no pointer in it" % (expr, v.type))
        path, ptr = fields[0]
    shown = _shown(expr, path)
    addr = int(ptr) & _M64
    if addr < _FIRST_PAGE or addr == _M64:
        if empty:
            _fail("%s is %s: %s is %#x, not a heap block" % (expr, empty, shown, addr))
        _fail("%s (%s) is %#x, not a heap block" % (shown, what, addr))
    # Only a string points into itself: at its characters, when they are
    # few enough to be kept in the object (short-string optimisation).
    start = v.address
    if start is not None and 0 <= addr - (int(start) & _M64) < v.type.sizeof:
        _fail("%s: %s are inside the object (short-string optimisation), not on the "
              "heap: %s is %#x" % (expr, what, shown, addr))
    note = "memtrace: using %s (%s)" % (shown, what)
    control = _follow(v, kind.control) if kind.control else None
    if control is not None and int(control):
        # make_shared puts the object and the control block in one block.
        block, cb = _session.get(target)[0].live_block(addr), int(control) & _M64
        if block is None or not 0 <= cb - block[0] < max(block[1], 1):
            note += "; its control block %s at %#x is another block" % (
                _shown(expr, kind.control), cb)
        else:
            note += ", in one block with its control block"
    return addr, note + "\n"


def _pointer_field_address(v, expr, target):
    fields = _pointer_fields(v)
    if not fields:
        _fail("'%s' is a %s with no pointer fields, not an address" % (expr, v.type))
    st = _session.get(target)[0]
    live = [(path, int(p) & _M64) for path, p in fields if st.live_block(int(p) & _M64)]
    if len(live) == 1:
        path, addr = live[0]
        return addr, ("memtrace: using %s (the only pointer field of '%s' into a live heap "
                      "block)\n" % (_shown(expr, path), expr))
    lines = ["memtrace: '%s' is a %s, not an address; its pointer fields (ask about one, "
             "e.g. `memtrace %s`):" % (expr, v.type, _shown(expr, (live or fields)[0][0]))]
    for path, p in fields[:_MAX_LISTED]:
        addr = int(p) & _M64
        lines.append("  %s = %#x%s" % (_shown(expr, path), addr,
                                       " (in a live heap block)" if st.live_block(addr) else ""))
    if len(fields) > _MAX_LISTED:
        lines.append("  ... and %d more" % (len(fields) - _MAX_LISTED))
    raise gdb.GdbError("\n".join(lines))


def _guard(fn, *args):
    """Runs FN; anything but a gdb error becomes one line, never a traceback."""
    try:
        gdb.write(fn(*args))
    except gdb.GdbError:
        raise
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
like a subcommand (top, stats, leaks, refs, pprof, version), write `memtrace (top)'.

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
                  "memtrace leaks [N] | memtrace refs EXPR | memtrace pprof FILE | memtrace version "
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
        elif word == "leaks":
            _guard(leaks, rest.strip())
        elif word == "refs":
            if not rest.strip():
                _fail("usage: memtrace refs EXPR")
            _guard(refs_expr, rest.strip())
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


MemtraceCommand()


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


_check_launcher_core()
