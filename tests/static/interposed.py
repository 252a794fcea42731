#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The libraries export exactly the names src/capture/interposed.def lists,
and the public API.

interposed.def is the one list of the names memtrace interposes: the
definitions (capture/interpose.c), what `memtrace attach` redirects
(runtime/attach.c), the next allocator's members and the lazily looked-up
next definitions (capture/state.h, runtime/startup.c) are all expanded
from it. What can still go wrong is what the linker makes of it: a row
whose definition is not exported (visibility), a name exported that the
list does not carry (attach would not redirect it), an API function
that leaks out unlisted. So each of build/libmemtrace.so and
build/libmemtrace-profiler.so is read with `nm -D --defined-only`: its
exported functions must be the list's names plus memtrace_* and
print_trace (include/memtrace.h), no more, no fewer. Also fails on a
row that does not parse, a name listed twice, a CLASS that is not
ALLOC/FREE/OTHER/EXEC or a NEXT that is not NEXT_REAL, NEXT_NONE or
NEXT_EXT(E). Fails
with one line per difference.

Usage: interposed.py BUILD"""
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
LIST = os.path.join(ROOT, "src", "capture", "interposed.def")
CLASSES = {"ALLOC", "FREE", "OTHER", "EXEC"}
ROW = re.compile(r"^MT_INTERPOSE\((\w+), (NEXT_REAL|NEXT_NONE|NEXT_EXT\(\w+\)), ([^,]+), (\w+), \(")


def listed(errors):
    text = re.sub(r"/\*.*?\*/", "", open(LIST).read(), flags=re.S)
    names = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = ROW.match(line)
        if not m:
            errors.append("interposed.def:%d: not a row MT_INTERPOSE(CLASS, NEXT, RET, NAME, (PARAMS), BODY)" % n)
            continue
        if m.group(1) not in CLASSES:
            errors.append("interposed.def:%d: %s has class %s, not one of %s"
                          % (n, m.group(4), m.group(1), sorted(CLASSES)))
        names.append(m.group(4))
    for n in sorted({n for n in names if names.count(n) > 1}):
        errors.append("interposed.def: %s is listed %d times" % (n, names.count(n)))
    return set(names)


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True,
                         check=True).stdout
    return {f[2] for f in (line.split() for line in out.splitlines())
            if len(f) == 3 and f[1] in "TWi"}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    errors = []
    names = listed(errors)
    for lib in ("libmemtrace.so", "libmemtrace-profiler.so"):
        path = os.path.join(sys.argv[1], lib)
        if not os.path.exists(path):
            errors.append("%s: not built (make first)" % path)
            continue
        got = {s for s in exported(path) if not s.startswith("memtrace_") and s != "print_trace"}
        for n in sorted(got - names):
            errors.append("%s exports %s, which interposed.def does not list" % (lib, n))
        for n in sorted(names - got):
            errors.append("%s does not export %s, which interposed.def lists" % (lib, n))
    for e in errors:
        print("interposed: " + e)
    if errors:
        sys.exit(1)
    print("interposed: both libraries export the %d names interposed.def lists, and the API" % len(names))


main()
