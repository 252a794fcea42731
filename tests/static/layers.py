#!/usr/bin/env python3
"""The include graph of src/ points one way (doc/design.adoc, "Layers").

Every file of src/ belongs to a module (foo.c and foo.h are module foo) and
every module to a layer. A file may include headers of its own layer and of
the layers below it, never above: the hot path and the stores never include
a slow-path header. The module graph must also be free of cycles (within a
layer too). Fails with one line per back-edge or cycle, and on a file that
has no layer yet (give it one here and in doc/design.adoc).

Usage: layers.py [SRC_DIR]   (default: src next to this script's tests/)"""
import os
import re
import sys

LAYERS = [
    ("base", "common atomic lock os output config reentry"),
    ("stores", "live_table stack_store freed_history internal_heap threads modules site cfi stack_bounds leak_scan leak_roots"),
    ("hot path", "capture capture_cfi capture_fp capture_libunwind real tracer"),
    ("slow path", "startup bad_free descriptor symbolize format pprof pprof_out describe profiler profiler_off api preload leak_check suppressions leak_report recording children attach"),
]
LAYER_OF = {m: i for i, (_, mods) in enumerate(LAYERS) for m in mods.split()}


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "src")
    edges = {}
    errors = []
    for name in sorted(os.listdir(src)):
        if not name.endswith((".c", ".h")):
            continue
        mod = name[:-2]
        if mod not in LAYER_OF:
            errors.append("%s: no layer assigned (tests/static/layers.py)" % name)
            continue
        with open(os.path.join(src, name)) as f:
            for n, line in enumerate(f, 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m or "/" in m.group(1):
                    continue
                dep = m.group(1)[:-2]
                if dep == mod:
                    continue
                if dep not in LAYER_OF:
                    errors.append("%s:%d: includes %s, which has no layer" % (name, n, m.group(1)))
                    continue
                edges.setdefault(mod, set()).add(dep)
                if LAYER_OF[dep] > LAYER_OF[mod]:
                    errors.append("%s:%d: back-edge: %s (%s) includes %s (%s)"
                                  % (name, n, name, LAYERS[LAYER_OF[mod]][0], m.group(1),
                                     LAYERS[LAYER_OF[dep]][0]))
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
    for e in errors:
        print("layers: " + e)
    print("layers: %d modules in %d layers, %d include edges, %d problems"
          % (len(LAYER_OF), len(LAYERS), sum(len(v) for v in edges.values()), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
