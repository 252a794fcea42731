#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""No C function of src/, tools/ or cli/ is longer than 100 lines, the
CFA interpreter (src/store/cfi.c, a switch over DWARF's opcodes that reads
best whole) aside.

A function is what the house style writes it as: its opening brace alone
in column 0, its closing brace alone in column 0; its length counts both.
Fails with one line per function over the ceiling, naming file:line and
the function. LONG_PENDING lists the ones not yet cut, and may only shrink.

Usage: functions.py [ROOT]   (default: the checkout this script is in)"""
import glob
import os
import re
import sys

CEILING = 100
EXEMPT = {("src/store/cfi.c", "run_cfa")}
LONG_PENDING = set()


def functions(path):
    """(line, name, length) of every function of the file at PATH."""
    lines = open(path, errors="replace").read().split("\n")
    start = None
    for i, line in enumerate(lines):
        if line == "{":
            start = i
        elif line == "}" and start is not None:
            head = []
            for prev in reversed(lines[max(0, start - 6):start]):
                if not prev.strip() or prev.rstrip().endswith(("*/", ";", "}")) or prev.startswith(("#", " *", "/*")):
                    break
                head.insert(0, prev)
            head = " ".join(head)
            names = re.findall(r"(\w+)\s*\(", re.sub(r"__attribute__\s*\(\(.*?\)\)", "", head))
            yield start + 1, (names[0] if names else "?"), i - start + 1
            start = None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    errors, count, seen = [], 0, set()
    for pattern in ("src/*/*.c", "tools/**/*.c", "cli/**/*.c"):
        for path in sorted(glob.glob(os.path.join(root, pattern), recursive=True)):
            rel = os.path.relpath(path, root)
            for line, name, length in functions(path):
                count += 1
                if length <= CEILING or (rel, name) in EXEMPT:
                    continue
                seen.add((rel, name))
                if (rel, name) not in LONG_PENDING:
                    errors.append("%s:%d: %s is %d lines (at most %d)" % (rel, line, name, length, CEILING))
    for rel, name in sorted(LONG_PENDING - seen):
        errors.append("%s: %s is no longer over %d lines: drop it from LONG_PENDING" % (rel, name, CEILING))
    for e in errors:
        print("functions: " + e)
    print("functions: %d functions, %d problems" % (count, len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
