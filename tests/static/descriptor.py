#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""One source for the state descriptor: struct memtrace_state in
src/runtime/descriptor.h is the layout. The reader out of process
(tools/tables_layout.c) reads that struct itself, so its word order cannot
differ; what it must know apart is where the words every version 1 library
has end (the words after "Added later in version 1" read as 0 from an older
library): its offsetof(struct memtrace_state, X) must name the first of
them. src/runtime/descriptor.c must fill in every word. Fails with one line
per difference.

Usage: descriptor.py [ROOT]"""
import os
import re
import sys


def header_fields(text):
    body = re.search(r"struct memtrace_state \{(.*?)\n\};", text, re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    fields = []
    for decl in body.split(";"):
        decl = decl.strip()
        if not decl:
            continue
        m = re.match(r"(\w+)\s+(.*)", decl)
        if m.group(1) != "uint64_t":
            continue  # the 16-byte header: magic, version, size
        fields += [f.strip() for f in m.group(2).split(",")]
    return fields


def first_added(text):
    """The first word after the "Added later in version 1" comment."""
    body = re.search(r"struct memtrace_state \{(.*?)\n\};", text, re.S).group(1)
    later = body[body.index("Added later in version 1"):]
    return header_fields(later[later.index("*/") + 2:].join(
        ["struct memtrace_state {", "\n};"]))[0]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..")
    read = lambda p: open(os.path.join(root, p)).read()
    state_h, state_c = read("src/runtime/descriptor.h"), read("src/runtime/descriptor.c")
    reader = read("tools/tables_layout.c")
    errors = []
    c_fields = header_fields(state_h)
    added = first_added(state_h)
    m = re.search(r"offsetof\(struct memtrace_state, (\w+)\)", reader)
    if not m or m.group(1) != added:
        errors.append("tools/tables_layout.c: the words every version 1 library has end at %s, "
                      "not %s (offsetof(struct memtrace_state, %s))"
                      % (m.group(1) if m else "(no offsetof)", added, added))
    for f in c_fields:
        if not re.search(r"\bs->%s = " % re.escape(f), state_c):
            errors.append("src/runtime/descriptor.c does not fill in %s" % f)
    for e in errors:
        print("descriptor: " + e)
    print("descriptor: %d words in src/runtime/descriptor.h, the first added later %s, %d problems"
          % (len(c_fields), added, len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
