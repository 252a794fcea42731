# SPDX-License-Identifier: LGPL-2.1-or-later
# memtrace's gdb helper: the `memtrace` command.
#
#   (gdb) source gdb/memtrace.py      (or auto-loaded with libmemtrace.so)
#   (gdb) memtrace EXPR               where the block at an address came from
#   (gdb) memtrace top [N]            call sites holding the most live bytes
#   (gdb) memtrace stats              totals
#   (gdb) memtrace leaks [new] [N]    lost blocks (the leak check's report)
#   (gdb) memtrace snapshot [NAME]    mark this moment, in the process itself
#   (gdb) memtrace growth [NAME [N]]  what was allocated since and is still live
#   (gdb) memtrace refs EXPR          who holds a pointer into a block
#   (gdb) memtrace pprof FILE         the in-use profile in pprof's format
#   (gdb) memtrace check              damaged blocks: redzones, quarantine, glibc's headers
#   (gdb) memtrace last-error         the last heap error or bad free report
#   (gdb) memtrace tags [json|dot]    the tag scopes' trees (memtrace_tag_push)
#   (gdb) memtrace break-on-error     stop at each heap error report
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
#
# This file is the stub gdb sources or auto-loads (`make install` copies it
# as LIB-gdb.py next to each library): the helper is the package
# memtrace_gdb, in the directory next to this file, or once installed in
# DATADIR/memtrace, as libstdc++'s pretty printers are installed.

import os
import sys

# Replaced by `make install` with the directory holding memtrace-symbolize.
_INSTALLED_LIBEXEC = "@MEMTRACE_LIBEXECDIR@"
# Replaced by `make install` with the directory holding memtrace_gdb.
_INSTALLED_PYDIR = "@MEMTRACE_PYDIR@"


def _load_memtrace_gdb():
    # gdb defines __file__ only while it reads this file.
    try:
        here = os.path.dirname(os.path.abspath(__file__))
    except NameError:
        here = os.getcwd()
    pydir = here if _INSTALLED_PYDIR.startswith("@") else _INSTALLED_PYDIR
    # Every source loads the package afresh, from this copy's directory, as
    # when the helper was one file: the copy read last defines the command.
    # No __pycache__ is written (make uninstall and dpkg remove only what
    # they installed).
    for name in [n for n in sys.modules if n.split(".")[0] == "memtrace_gdb"]:
        del sys.modules[name]
    sys.path.insert(0, pydir)
    dont_write = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        import memtrace_gdb
    except ImportError as e:
        import gdb
        gdb.write("memtrace: cannot load the helper's package memtrace_gdb from %s: %s\n"
                  % (pydir, e), gdb.STDERR)
        return
    finally:
        sys.dont_write_bytecode = dont_write
        sys.path.remove(pydir)
    memtrace_gdb.start(here, _INSTALLED_LIBEXEC)


_load_memtrace_gdb()
