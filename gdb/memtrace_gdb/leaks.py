# SPDX-License-Identifier: LGPL-2.1-or-later
# `memtrace leaks` and `memtrace refs`: the threads' registers and frames,
# as gdb has them, sent with the live table's layout to memtrace-symbolize,
# which scans the memory and writes the report.

import os

import gdb

from .common import _M64, _Language, _fail
from .expressions import _address
from .reports import _count, _recording_line
from .session import _session
from .target import _Target


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


def _leak_request(word, arg, with_frames, since=0):
    """Sends a "leaks" or "refs" request (memtrace-symbolize.c) for the
    current target and returns its answer's text. The live blocks are read
    by memtrace-symbolize from the tables (a million of them in well under
    a second, where Python would take seconds); this sends what only gdb
    knows: the threads, their registers and frames."""
    target = _Target()
    _, sym = _session.get(target)
    req = ["%s %x %x" % (word, arg, target.inferior.pid)]
    tcb = _tcb_size()
    if tcb:
        req.append("tcb %x" % tcb)
    if since:
        req.append("since %x" % since)
    req += _thread_lines(with_frames)
    path = os.environ.get("MEMTRACE_SUPPRESSIONS")
    if path and word == "leaks":
        req.append("suppressions %s" % os.fsencode(path).hex())
    req.append("end\n")
    return sym.answer("\n".join(req))


def leaks(arg):
    """`memtrace leaks [new] [N]`: the report of MEMTRACE_LEAK_CHECK=1 at
    exit, for the stopped process or the core file, N sites at most; with
    `new`, only the lost blocks allocated since the last `memtrace leaks`
    (valgrind's `leak_check full increased`). Each run in a process marks
    where the next `new` starts (growth.py's LEAKS_MARK)."""
    from .growth import LEAKS_MARK, leaks_mark, mark
    words = arg.split()
    new = bool(words) and words[0] == "new"
    if new:
        words = words[1:]
    n = _count("leaks", " ".join(words))
    target = _Target()
    since = 0
    if new:
        since = leaks_mark()
        if not since:
            _fail("leaks new: no `memtrace leaks` ran in this process yet")
    # Blocks allocated while recording was off are unknown to the scan: the
    # report says so first, as at exit, and its summary line stays last.
    _, sym = _session.get(target)
    head = _recording_line(sym)
    if new:
        head += ("memtrace: leaks new: only the blocks allocated since the last `memtrace "
                 "leaks` (allocation #%d on)\n" % since)
    text = head + _leak_request("leaks", n, False, since)
    if not target.core:
        mark(LEAKS_MARK, target)
    return text


def refs_expr(expr):
    """`memtrace refs EXPR`: who points into the live block at EXPR."""
    target = _Target()
    addr, note = _address(expr, target)
    text = note + _leak_request("refs", addr, True)
    _, sym = _session.get()
    return text + _recording_line(sym)
