#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""preload.c defines the names src/runtime/interposed.h lists, no more, no fewer.

interposed.h's MT_INTERPOSED list is what `memtrace attach` redirects
(attach.c takes its names from it); preload.c defines each name by hand.
A name defined in one and not listed in the other would be interposed when
preloaded but not when attached, or the reverse. Compared: the list's
names, the names preload.c defines with MT_EXPORT, and, given the build
directory, the global functions `nm` finds defined in preload.c's objects
(build/tracer and build/profiler). Also fails on a name listed twice or a
class that is not MT_IP_*. Fails with one line per difference.

Usage: interposed.py [BUILD]"""
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
HEADER = os.path.join(ROOT, "src", "runtime", "interposed.h")
PRELOAD = os.path.join(ROOT, "src", "runtime", "preload.c")
CLASSES = {"MT_IP_ALLOC", "MT_IP_FREE", "MT_IP_OTHER", "MT_IP_EXEC"}


def listed(errors):
    text = open(HEADER).read()
    body = text[text.index("#define MT_INTERPOSED(X)"):]
    rows = re.findall(r"\bX\((\w+),\s*(\w+)\)", body)
    names = [n for n, _ in rows]
    for n, c in rows:
        if c not in CLASSES:
            errors.append("interposed.h: %s has class %s, not one of %s" % (n, c, sorted(CLASSES)))
    for n in sorted({n for n in names if names.count(n) > 1}):
        errors.append("interposed.h: %s is listed %d times" % (n, names.count(n)))
    return set(names)


def defined():
    text = re.sub(r"/\*.*?\*/", "", open(PRELOAD).read(), flags=re.S)
    return set(re.findall(r"^MT_EXPORT\s+[\w\s]*?\**\s*(\w+)\s*\(", text, re.M))


def in_object(path):
    out = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True,
                         check=True).stdout
    return {f[2] for f in (line.split() for line in out.splitlines())
            if len(f) == 3 and f[1] == "T"}


def main():
    errors = []
    names = listed(errors)
    sources = [("preload.c's MT_EXPORT definitions", defined())]
    if len(sys.argv) > 1:
        for flavour in ("tracer", "profiler"):
            obj = os.path.join(sys.argv[1], flavour, "runtime", "preload.o")
            if os.path.exists(obj):
                sources.append(("the functions %s defines" % os.path.relpath(obj), in_object(obj)))
    for what, got in sources:
        for n in sorted(got - names):
            errors.append("%s: %s is not in interposed.h's MT_INTERPOSED list" % (what, n))
        for n in sorted(names - got):
            errors.append("interposed.h: %s is not among %s" % (n, what))
    for e in errors:
        print("interposed: " + e)
    if errors:
        sys.exit(1)
    print("interposed: preload.c defines the %d names interposed.h lists" % len(names))


main()
