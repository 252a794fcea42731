# SPDX-License-Identifier: LGPL-2.1-or-later
"""The names the page gives its sites, the groups of sites that share a
name, and the diff of two runs (memtrace view NEW --base OLD).

A site is one distinct full stack. Named by its innermost frame, three
callers of one wrapper all read "xmalloc at wrap.c:3"; so a site is named
by the first frame, from the innermost out, that tells it from the sites
that share its innermost frame (the frames all of them share are skipped,
as pprof trims allocation wrappers), followed by the innermost function:
"caller_a at wrap.c:12 → xmalloc". A frame with no symbol reads as its
module and the offset in it (the same in every run, where the address
moves with ASLR): "libsqlite3.so.0.8.6+0x4a504 → sqlite3Malloc".

Sites whose names are the same are one group (heaptrack's views merge by
function likewise): the legend, the tables and the diff show groups, each
with its stacks one click away. Every number of a group is the sum of its
sites'. Contract with page.js: model.data gains "texts" (each frame's text),
each site a "name", "groups" ({name, sites: [site index], NUM_FIELDS
sums}), the timeline's series become the top bands by group
({group, bytes, sites: [site id], peak_bytes: those sites' bytes at the
peak}), and with a base "diff" (see diff() below)."""
ARROW = " \u2192 "
SKIP = " \u2192 \u2026 \u2192 "  # frames in between left out
NUM_FIELDS = ("allocations", "allocated_bytes", "peak_bytes", "leaked_bytes",
              "leaked_blocks", "temporary")


def base(p):
    return p[p.rfind("/") + 1:] if p else p


def frame_text(f):
    """F: [function, file, line, module, address, offset]. "function at
    file:line"; with no function, "module+offset" (or the address)."""
    function, file, line, module, address, offset = (list(f) + [None] * 6)[:6]
    name = function
    if not name:
        if module and offset:
            name = base(module) + "+" + offset
        elif module:
            name = base(module) + (" " + address if address else "")
        else:
            name = address or "??"
    if file:
        name += " at " + file + (":%d" % line if line else "")
    return name


def function_key(f):
    """The frame's function, as the caller/callee view and a name's
    innermost part show it: module+offset when there is no symbol."""
    return f[0] or frame_text(f)


class Trie:
    """The sites' stacks as texts, innermost first, merged from the
    innermost frame out; a stack's end is the key None."""

    def __init__(self):
        self.root = {}

    def add(self, path):
        node = self.root
        for t in path:
            node = node.setdefault(t, {})
        node.setdefault(None, {})

    def name(self, path, innermost):
        """PATH: a stack's texts; INNERMOST: its innermost frame."""
        if not path:
            return "(no stack)"
        node, k = self.root[path[0]], 0
        # frames every site below shares, up to the first fork
        while k + 1 < len(path) and len(node) == 1:
            k += 1
            node = node[path[k]]
        d = k + 1
        if d >= len(path):
            return path[0]  # no stack parts from this one (or none but its twins)
        return path[d] + (ARROW if k == 0 else SKIP) + function_key(innermost)


def paths(model):
    texts = model.data["texts"] = [frame_text(f) for f in model.frames]
    return [[texts[i] for i in s["stack"]] for s in model.sites]


def name_sites(models):
    """Names for the sites of every model in MODELS, told apart from the
    sites of all of them (the two runs of a diff share their names)."""
    trie, all_paths = Trie(), []
    for m in models:
        ps = paths(m)
        all_paths.append(ps)
        for p in ps:
            trie.add(p)
    for m, ps in zip(models, all_paths):
        for s, p in zip(m.sites, ps):
            s["name"] = trie.name(p, m.frames[s["stack"][0]] if s["stack"] else None)


def group(model, top_series):
    """The groups of MODEL's sites by name, and the timeline's series as the
    TOP_SERIES groups with the most bytes at the peak among the sites that
    have a series (a recording's export gives them to its first sites by
    peak: a group's band is the sum of those of its sites)."""
    d = model.data
    by_name, groups = {}, []
    for i, s in enumerate(model.sites):
        g = by_name.get(s["name"])
        if g is None:
            g = by_name[s["name"]] = {"name": s["name"], "sites": []}
            for k in NUM_FIELDS:
                g[k] = 0
            groups.append(g)
        g["sites"].append(i)
        for k in NUM_FIELDS:
            g[k] += s.get(k, 0)
    d["groups"] = groups
    tl = d.get("timeline")
    if not tl:
        return
    gi = {id(g): i for i, g in enumerate(groups)}
    bands = {}
    for ser in tl["series"]:
        s = model.sites[ser["site"]]
        g = by_name[s["name"]]
        b = bands.get(id(g))
        if b is None:
            b = bands[id(g)] = {"group": gi[id(g)], "bytes": [0] * len(ser["bytes"]),
                                "sites": [], "peak_bytes": 0}
        b["bytes"] = [x + y for x, y in zip(b["bytes"], ser["bytes"])]
        b["sites"].append(s["id"])
        b["peak_bytes"] += s.get("peak_bytes", 0)
    tl["series"] = sorted(bands.values(), key=lambda b: (-b["peak_bytes"], b["group"]))[:top_series]


def program(model):
    """The program of a run, as its command's first word says; None when
    the input does not say (a pprof profile, a folded file)."""
    c = model.data.get("command")
    if not c:
        return None
    return base(c.split()[0])


DIFF_FIELDS = ("peak_bytes", "leaked_bytes", "allocations", "allocated_bytes", "temporary")


def diff(new, old):
    """NEW's data gains "diff": {"base": OLD's file, "peak": [old, new] of
    the whole, "rows": one per name in either run, [name, {field: [old,
    new]}], sorted by growth (peak bytes, then live bytes at exit, then
    allocations, most first)}. The sites must be named by name_sites on
    both, so that one name is one group in both runs."""
    rows = {}
    for which, m in ((0, old), (1, new)):
        for g in m.data["groups"]:
            r = rows.setdefault(g["name"], {k: [0, 0] for k in DIFF_FIELDS})
            for k in DIFF_FIELDS:
                r[k][which] += g.get(k, 0)

    def growth(item):
        r = item[1]
        return tuple(-(r[k][1] - r[k][0]) for k in ("peak_bytes", "leaked_bytes", "allocations")) \
            + (item[0],)
    out = sorted(rows.items(), key=growth)

    def peak(m):
        tl = m.data.get("timeline")
        return tl["peak"]["bytes"] if tl else sum(g["peak_bytes"] for g in m.data["groups"])
    have = {k: bool(new.data["have"].get(k) and old.data["have"].get(k))
            for k in ("peak", "leaked", "allocated", "temporary")}
    new.data["diff"] = {"base": old.data["file"], "base_command": old.data.get("command"),
                        "peak": [peak(old), peak(new)], "have": have,
                        "rows": [[n, r] for n, r in out]}


def same_program(new, old, new_path, old_path):
    """None, or why OLD is no base for NEW (runs of different programs)."""
    a, b = program(new), program(old)
    if a and b and a != b:
        return ("--base %s is a run of %s, %s one of %s: a diff is of two runs of one program"
                % (old_path, b, new_path, a))
    return None

