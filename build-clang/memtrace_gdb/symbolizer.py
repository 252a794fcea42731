# SPDX-License-Identifier: LGPL-2.1-or-later
# memtrace-symbolize, the program built from the library's own symbolizer
# and formatter (tools/memtrace-symbolize.c): found, started once per
# target, and asked one request at a time over its pipes.

import os
import select
import shutil
import subprocess

import gdb

from .common import _fail


# Where memtrace-symbolize is looked for besides MEMTRACE_SYMBOLIZE and
# PATH, as the stub that loaded this package says (set_paths): the
# directory `make install` put it in ("@..." in a tree not installed), and
# the stub's own directory.
_INSTALLED_LIBEXEC = "@"
_HERE = os.getcwd()


def set_paths(here, installed_libexec):
    global _HERE, _INSTALLED_LIBEXEC
    _HERE, _INSTALLED_LIBEXEC = here, installed_libexec


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

    def answer(self, text):
        """The answer's text to request TEXT; an error answer fails the
        command with it."""
        text, ok = self.request(text)
        if not ok:
            raise gdb.GdbError(text.rstrip("\n"))
        return text
