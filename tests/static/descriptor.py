#!/usr/bin/env python3
"""One source for the state descriptor: struct memtrace_state in
src/runtime/descriptor.h is the layout. The gdb helper's field list (gdb/memtrace_gdb/tables.py,
_STATE_FIELDS then _STATE_FIELDS_ADDED) must name the same 64-bit words in
the same order, its _STATE_VERSION must be MT_STATE_VERSION, and
src/runtime/descriptor.c must fill in every word. Fails with one line per difference.

Usage: descriptor.py [ROOT]"""
import ast
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


def python_fields(text):
    values = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in ("_STATE_FIELDS", "_STATE_FIELDS_ADDED", "_STATE_VERSION"):
                v = node.value
                if isinstance(v, ast.Call):  # """...""".split()
                    values[name] = v.func.value.value.split()
                else:
                    values[name] = ast.literal_eval(v)
    return values


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..")
    read = lambda p: open(os.path.join(root, p)).read()
    state_h, state_c, helper = read("src/runtime/descriptor.h"), read("src/runtime/descriptor.c"), read("gdb/memtrace_gdb/tables.py")
    errors = []
    c_fields = header_fields(state_h)
    py = python_fields(helper)
    py_fields = py["_STATE_FIELDS"] + py["_STATE_FIELDS_ADDED"]
    for i in range(max(len(c_fields), len(py_fields))):
        c = c_fields[i] if i < len(c_fields) else "(none)"
        p = py_fields[i] if i < len(py_fields) else "(none)"
        if c != p:
            errors.append("word %d: src/runtime/descriptor.h has %s, gdb/memtrace_gdb/tables.py has %s" % (i, c, p))
    version = int(re.search(r"#define MT_STATE_VERSION (\d+)", state_h).group(1))
    if py["_STATE_VERSION"] != version:
        errors.append("version: src/runtime/descriptor.h %d, gdb/memtrace_gdb/tables.py %d" % (version, py["_STATE_VERSION"]))
    for f in c_fields:
        if not re.search(r"\bs->%s = " % re.escape(f), state_c):
            errors.append("src/runtime/descriptor.c does not fill in %s" % f)
    for e in errors:
        print("descriptor: " + e)
    print("descriptor: %d words in src/runtime/descriptor.h, %d in gdb/memtrace_gdb/tables.py, %d problems"
          % (len(c_fields), len(py_fields), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
