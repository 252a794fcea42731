# SPDX-License-Identifier: LGPL-2.1-or-later
# memtrace's gdb helper as a package: the `memtrace` command. gdb loads it
# through the stub gdb/memtrace.py (sourced, or auto-loaded as LIB-gdb.py),
# which calls start(). Modules, each with one job, bottom up:
#   common       one-line errors, a gdb setting changed for a while
#   target       the process or core file looked at; the core file checks
#   symbolizer   the memtrace-symbolize process and its requests
#   tables       memtrace_state found, and read by memtrace-symbolize
#   session      the tables and symbolizer kept between commands
#   handles      the heap pointer inside a Vec, a std::vector, a struct
#   expressions  EXPR to an address, never calling into the program
#   reports      memtrace EXPR, top, stats, version, pprof, tags
#   leaks        memtrace leaks and refs
#   heap         memtrace check and break-on-error
#   commands     the gdb command and its subcommands

from . import commands, session, symbolizer


def start(here, installed_libexec):
    """Defines the `memtrace` command. HERE: the stub's directory, and
    INSTALLED_LIBEXEC: where `make install` put memtrace-symbolize ("@..."
    when not installed); both are where memtrace-symbolize is looked for."""
    symbolizer.set_paths(here, installed_libexec)
    session.connect_events()
    commands.register()
