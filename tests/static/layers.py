#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The include graph of src/ points one way (doc/design.adoc, "Layers").

A file's layer is its folder's: src/FOLDER/x.c is in FOLDER's layer (the
table below; a folder is in exactly one layer), and foo.c and foo.h are
module foo. A file may include headers of its own layer and of the layers
below it, never above: the hot path and the stores never include a
slow-path header. An include of a src/ header names its folder
("base/os.h", compiled with -Isrc). The module graph must also be free of
cycles (within a layer too). Fails with one line per back-edge or cycle,
and on a folder that has no layer yet (give it one here and in
doc/design.adoc).

The same rule holds for calls, which includes do not show: given the
build directory, every object build/{tracer,profiler}/FOLDER/x.o is read
with nm, and a symbol an object refers to (undefined, U, or its own weak
default, W, that a strong definition overrides) and that an object of a
higher layer defines is an upward call. Each must be declared in
src/base/upcalls.h, with why; any other fails, and so does a declaration
there that is no upward call.

Within a folder, calls go one way too: two objects of one folder that
each use a symbol the other defines (in either build) fail, with the
symbols named; split the shared part out into a module both use, or fold
the two into one.

The folders themselves are drawn as a graph too: an arrow from folder A to
folder B when a file of A includes a header of B or an object of A uses a
symbol of memtrace's (mt_*, memtrace_*; not the libc names it interposes)
that an object of B defines. That graph must have no cycle either, the
declared upward calls aside (each closes a cycle by nature: start-up calls
the hot path, the hot path calls mt_start); a folder cycle fails with one
line naming a file for each of its arrows. --dot FILE writes the drawing
there (Graphviz's DOT: the folders in their layers, the base at the
bottom; include arrows solid, call-only arrows dashed, the declared upward
calls red; `make test-static` renders it as build/layers.svg).

doc/design.adoc's Layers table (next to SRC_DIR) must say the same: one
row per folder, in its layer here; each row names every module of its
folder, and every name a row quotes in backquotes is a module (of any
folder), memtrace's own (mt_*, memtrace_*), or one of PROSE, a few C
names the prose quotes.

Usage: layers.py [--dot FILE] [SRC_DIR [BUILD_DIR]]   (default: src next to
this script's tests/, no object check; `make test-static` gives both)"""
import glob
import os
import re
import subprocess
import sys

# Bottom-up; each folder of src/ is in one layer.
LAYERS = [
    ("base", "base"),
    ("stores", "store scan timeline tags"),
    ("hot path", "capture"),
    ("slow path", "symbolize report leak profile runtime"),
]
LAYER_OF = {f: i for i, (_, folders) in enumerate(LAYERS) for f in folders.split()}


# Names in backquotes in the Layers table's rows that are no module.
PROSE = {"backtrace_state", "sigaction", "signal", "unshare", "setns"}


def layer_name(folder):
    return LAYERS[LAYER_OF[folder]][0]


def sources(src):
    """(folder, name) of every .c and .h of src/, and the problems of the tree's shape."""
    files, errors = [], []
    for folder in sorted(os.listdir(src)):
        path = os.path.join(src, folder)
        if not os.path.isdir(path):
            if folder.endswith((".c", ".h")):
                errors.append("src/%s: not in a layer's folder (src/FOLDER/%s)" % (folder, folder))
            continue
        if folder not in LAYER_OF:
            errors.append("src/%s/: folder has no layer (tests/static/layers.py)" % folder)
            continue
        for name in sorted(os.listdir(path)):
            if name.endswith((".c", ".h")):
                files.append((folder, name))
    return files, errors


def check_includes(src):
    """The include rule and the module cycles; returns (modules, edges,
    folder edges, errors): a folder edge (A, B) maps to where A first
    includes B."""
    files, errors = sources(src)
    fedges = {}
    folder_of = {}
    for folder, name in files:
        folder_of.setdefault(name[:-2], folder)
    edges = {}
    for folder, name in files:
        mod = name[:-2]
        where = "src/%s/%s" % (folder, name)
        with open(os.path.join(src, folder, name)) as f:
            for n, line in enumerate(f, 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m or m.group(1).startswith("../"):
                    continue  # ../../include/memtrace.h: the public header
                inc = m.group(1)
                parts = inc.split("/")
                if len(parts) != 2:
                    errors.append('%s:%d: #include "%s": name the folder ("FOLDER/x.h")' % (where, n, inc))
                    continue
                dfolder, dname = parts
                if not os.path.exists(os.path.join(src, dfolder, dname)):
                    errors.append("%s:%d: includes %s, which is not in src/" % (where, n, inc))
                    continue
                if dfolder not in LAYER_OF:
                    errors.append("%s:%d: includes %s, whose folder has no layer" % (where, n, inc))
                    continue
                dep = os.path.splitext(dname)[0]
                if dep == mod:
                    continue
                if dfolder != folder:
                    fedges.setdefault((folder, dfolder), "%s:%d includes %s" % (where, n, inc))
                edges.setdefault(mod, set()).add(dep)
                if LAYER_OF[dfolder] > LAYER_OF[folder]:
                    errors.append("%s:%d: back-edge: %s (%s) includes %s (%s)"
                                  % (where, n, name, layer_name(folder), inc, layer_name(dfolder)))
    # Cycles: depth-first search over modules.
    state = {}

    def visit(m, path):
        state[m] = 1
        for d in sorted(edges.get(m, ())):
            if state.get(d) == 1:
                errors.append("cycle: " + " -> ".join(path[path.index(d):] + [d]))
            elif d not in state:
                visit(d, path + [d])
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m, [m])
    return folder_of, edges, fedges, errors


def folder_cycles(fedges):
    """One line per cycle of the folder graph FEDGES ({(A, B): why}), each
    arrow with its why."""
    succ, errors, state = {}, [], {}
    for a, b in fedges:
        succ.setdefault(a, set()).add(b)

    def visit(f, path):
        state[f] = 1
        for d in sorted(succ.get(f, ())):
            if state.get(d) == 1:
                cycle = path[path.index(d):] + [d]
                errors.append("folder cycle: %s (%s)" % (" -> ".join(cycle), "; ".join(
                    fedges[(a, b)] for a, b in zip(cycle, cycle[1:]))))
            elif d not in state:
                visit(d, path + [d])
        state[f] = 2

    for f in sorted(succ):
        if f not in state:
            visit(f, [f])
    return errors


UPCALLS = "base/upcalls.h"

def check_pairs(pairs_seen):
    """Errors for PAIRS_SEEN ({(a, b): why}, a < b): no two objects of one
    folder call each other."""
    errors = []
    for pair in sorted(pairs_seen):
        errors.append("same-folder pair: %s <-> %s call each other (%s); "
                      "split the shared part out or fold them" % (pair[0], pair[1], pairs_seen[pair]))
    return errors


def declared_upcalls(src):
    """The functions src/base/upcalls.h declares."""
    with open(os.path.join(src, UPCALLS)) as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    return set(re.findall(r"^[a-z][\w \t*]*?\b(mt_\w+)\s*\(", text, flags=re.M))


def check_calls(src, build):
    """Upward references between the built objects; returns (objects,
    upcalls seen, call edges, errors): a call edge (A, B) maps to (an
    object of folder A using a symbol an object of folder B defines, the
    symbols, and whether every one is a declared upward call)."""
    errors = []
    calls = {}
    pairs = {}
    allowed = declared_upcalls(src)
    seen = set()
    nobj = 0
    for flavour in ("tracer", "profiler"):
        # The objects of today's sources only: a moved file's old object may linger.
        objs = sorted(o for o in glob.glob(os.path.join(build, flavour, "*", "*.o"))
                      if os.path.exists(os.path.join(src, os.path.relpath(o, os.path.join(build, flavour))[:-2] + ".c")))
        if not objs:
            if flavour == "tracer":
                errors.append("no objects in %s/tracer/*/ (build them first: make test-static)" % build)
            continue
        nobj += len(objs)
        strong, refs = {}, {}
        for o in objs:
            folder = os.path.basename(os.path.dirname(o))
            if folder not in LAYER_OF:
                errors.append("%s: folder has no layer (tests/static/layers.py)" % o)
                continue
            out = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                parts = line.split()
                if len(parts) == 2 and parts[0] == "U":
                    refs.setdefault(o, set()).add(parts[1])
                elif len(parts) == 3 and parts[1] in "WV":
                    refs.setdefault(o, set()).add(parts[2])
                elif len(parts) == 3 and parts[1].isupper():
                    strong.setdefault(parts[2], []).append(o)
        # Same-folder pairs that use each other's symbols.
        used = {}
        for o in refs:
            for sym in refs[o]:
                for d in strong.get(sym, ()):
                    if d != o and os.path.dirname(d) == os.path.dirname(o):
                        used.setdefault((o, d), sym)
        for (o, d), sym in used.items():
            back = used.get((d, o))
            if back and o < d:
                key = tuple(os.path.relpath(x, os.path.join(build, flavour))[:-2] for x in (o, d))
                pairs.setdefault(key, "%s uses %s, %s uses %s" % (key[0], sym, key[1], back))
        for o in sorted(refs):
            folder = os.path.basename(os.path.dirname(o))
            lo = LAYER_OF[folder]
            for sym in sorted(refs[o]):
                for d in strong.get(sym, ()):
                    dfolder = os.path.basename(os.path.dirname(d))
                    # memtrace's own names only: the libc names capture/interpose.c
                    # interposes (calloc, execve) are the program's, not a layer's.
                    if dfolder != folder and sym.startswith(("mt_", "memtrace_")):
                        why, syms, upcall = calls.get((folder, dfolder), (None, set(), True))
                        up = sym in allowed and LAYER_OF[dfolder] > lo
                        if why is None or (upcall and not up):
                            why = "%s uses %s (%s)" % (os.path.relpath(o, build), sym,
                                                       os.path.relpath(d, build))
                        calls[(folder, dfolder)] = (why, syms | {sym}, upcall and up)
                    # Nor is a call of one an upward call: stop_world's
                    # sigaction is libc's, which the preloaded library stands in for.
                    if LAYER_OF[dfolder] <= lo or not sym.startswith(("mt_", "memtrace_")):
                        continue
                    seen.add(sym)
                    if sym not in allowed:
                        errors.append("upward call: %s (%s) uses %s, defined in %s (%s); "
                                      "declare it in src/%s with why, or move it"
                                      % (os.path.relpath(o, build), LAYERS[lo][0], sym,
                                         os.path.relpath(d, build), layer_name(dfolder), UPCALLS))
    if nobj:
        errors += check_pairs(pairs)
    for sym in sorted(allowed - seen):
        errors.append("src/%s: %s is declared but no lower layer calls it in a higher one"
                      % (UPCALLS, sym))
    return nobj, seen, calls, errors


def dot(fedges, calls):
    """The folder graph in Graphviz's DOT: a cluster per layer, the base at
    the bottom; an arrow per folder pair, solid for includes (and calls),
    dashed for calls alone, red and named for declared upward calls (left
    out of the ranking, so that the layers stay in order)."""
    lines = ["digraph memtrace_layers {", "  node [shape=box];"]
    for i, (name, folders) in enumerate(LAYERS):
        lines.append('  subgraph cluster_%d { label="%s"; %s }'
                     % (i, name, " ".join('"%s";' % f for f in folders.split())))
    for a, b in sorted(set(fedges) | set(calls)):
        why, syms, upcall = calls.get((a, b), (None, (), False))
        if upcall and (a, b) not in fedges:
            style = ' [color=red, constraint=false, label="%s"]' % "\\n".join(sorted(syms))
        elif (a, b) in fedges:
            style = ""
        else:
            style = " [style=dashed]"
        lines.append('  "%s" -> "%s"%s;' % (a, b, style))
    lines.append("}")
    return "\n".join(lines) + "\n"


def check_table(src):
    """doc/design.adoc's Layers table against the folders and modules of SRC."""
    path = os.path.join(src, "..", "doc", "design.adoc")
    if not os.path.exists(path):
        return []
    text = open(path).read()
    start = text.find("\n== Layers\n")
    top = text.find("\n|===\n", start)
    end = text.find("\n|===\n", top + 1)
    if start < 0 or top < 0 or end < 0:
        return ["doc/design.adoc: no Layers table (== Layers, then |=== ... |===)"]
    table = text[top:end]
    modules_of, every = {}, set()
    for folder in LAYER_OF:
        names = set()
        if os.path.isdir(os.path.join(src, folder)):
            for name in os.listdir(os.path.join(src, folder)):
                if name.endswith((".c", ".h", ".def")):
                    names.add(name.rsplit(".", 1)[0])
        modules_of[folder], every = names, every | names
    errors, rows = [], {}
    for row in re.split(r"\n(?=\| `src/)", table)[1:]:
        head = re.match(r"\| `src/([a-z_]+)/`\n\| ([a-z ]+)\n", row)
        if not head:
            errors.append("doc/design.adoc: Layers: a row that does not start | `src/FOLDER/` | LAYER")
            continue
        folder, layer = head.group(1), head.group(2).strip()
        rows[folder] = rows.get(folder, 0) + 1
        if folder not in LAYER_OF:
            errors.append("doc/design.adoc: Layers: src/%s/ is no folder with a layer" % folder)
            continue
        if layer != layer_name(folder):
            errors.append("doc/design.adoc: Layers: src/%s/ is in layer %s, not %s"
                          % (folder, layer_name(folder), layer))
        job = row[head.end():].split("\n| ")[0]
        named = set()
        for name in re.findall(r"`([a-z][a-z0-9_]*)(?:\.(?:c|h|def))?`", job):
            named.add(name)
            if name not in every and name not in PROSE and not name.startswith(("mt_", "memtrace_")):
                errors.append("doc/design.adoc: Layers: src/%s/'s row names `%s`, which is no module"
                              % (folder, name))
        for name in sorted(modules_of[folder] - named):
            errors.append("doc/design.adoc: Layers: src/%s/'s row does not name its module %s"
                          % (folder, name))
    for folder in sorted(LAYER_OF):
        if os.path.isdir(os.path.join(src, folder)) and rows.get(folder, 0) != 1:
            errors.append("doc/design.adoc: Layers: src/%s/ has %d rows, not one"
                          % (folder, rows.get(folder, 0)))
    return errors


def main():
    args = sys.argv[1:]
    drawing = None
    if args[:1] == ["--dot"] and len(args) > 1:
        drawing, args = args[1], args[2:]
    src = args[0] if args else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "src")
    modules, edges, fedges, errors = check_includes(src)
    summary = ("layers: %d modules in %d folders, %d layers, %d include edges"
               % (len(modules), len(LAYER_OF), len(LAYERS), sum(len(v) for v in edges.values())))
    calls = {}
    if len(args) > 1:
        nobj, seen, calls, call_errors = check_calls(src, args[1])
        errors += call_errors
        summary += ", %d objects, %d upward calls" % (nobj, len(seen))
    # The folder graph: every include and call arrow but the declared upward calls.
    graph = dict(fedges)
    for pair, (why, _, upcall) in calls.items():
        if not upcall:
            graph.setdefault(pair, why)
    errors += folder_cycles(graph)
    summary += ", %d folder arrows" % len(graph)
    errors += check_table(src)
    if drawing:
        with open(drawing, "w") as f:
            f.write(dot(fedges, calls))
    for e in errors:
        print("layers: " + e)
    print("%s, %d problems" % (summary, len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
