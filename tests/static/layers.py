#!/usr/bin/env python3
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

Usage: layers.py [SRC_DIR]   (default: src next to this script's tests/)"""
import os
import re
import sys

# Bottom-up; each folder of src/ is in one layer.
LAYERS = [
    ("base", "base"),
    ("stores", "store scan"),
    ("hot path", "capture"),
    ("slow path", "symbolize report leak profile runtime"),
]
LAYER_OF = {f: i for i, (_, folders) in enumerate(LAYERS) for f in folders.split()}


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
    """The include rule and the module cycles; returns (modules, edges, errors)."""
    files, errors = sources(src)
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
                dep = dname[:-2]
                if dep == mod:
                    continue
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
    return folder_of, edges, errors


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "src")
    modules, edges, errors = check_includes(src)
    for e in errors:
        print("layers: " + e)
    print("layers: %d modules in %d folders, %d layers, %d include edges, %d problems"
          % (len(modules), len(LAYER_OF), len(LAYERS), sum(len(v) for v in edges.values()), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
