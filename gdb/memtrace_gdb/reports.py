# The answers read from the tables: `memtrace EXPR` (print_trace's), top,
# stats, version and pprof. Their text is written by the library's
# formatter (src/report/format.c) in memtrace-symbolize, or, for top,
# stats and pprof's summary, here.

import os
import re

import gdb

from .common import _fail
from .expressions import _address, _evaluate
from .session import _session
from .symbolizer import _stack_line
from .tables import _gap
from .target import _Target, _info_target


_UNLOCKED_SHARD = ("a table shard was read without its lock: a stopped thread was "
                   "changing it")


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
