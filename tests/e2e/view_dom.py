# SPDX-License-Identifier: LGPL-2.1-or-later
"""The checks of tests/e2e/view.sh on a page as Chromium rendered it (its
--dump-dom after the page's script ran): what the charts, tables and flame
graphs draw against the data they were drawn from. Prints one
"PASS NAME" or "FAIL NAME: WHY" line per check.

  view_dom.py timeline DOM JSON     against the timeline JSON the page was made of
  view_dom.py profile DOM EXIT PEAK against the folded files (MEMTRACE_FOLDED's
                                    PATH and PATH.peak) of the run whose pprof
                                    profile (or those files) the page was made of;
                                    PEAK may be - (no peak file)
"""
import json
import re
import sys
from html.parser import HTMLParser

VOID = {"meta", "link", "br", "img", "input", "hr", "col", "area", "base", "source", "wbr"}


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.kids, self.text = tag, dict(attrs), parent, [], ""

    def all(self):
        yield self
        for k in self.kids:
            yield from k.all()

    def find(self, tag=None, **attrs):
        for n in self.all():
            if (tag is None or n.tag == tag) and all(
                    v in (n.attrs.get("class") or "").split() if k == "class_"
                    else n.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items()):
                yield n

    def one(self, tag=None, **attrs):
        return next(self.find(tag, **attrs), None)

    def alltext(self):
        return self.text + "".join(k.alltext() for k in self.kids)


class Tree(HTMLParser):
    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.root = self.cur = Node("#root", {}, None)
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs, self.cur)
        self.cur.kids.append(n)
        if tag not in VOID:
            self.cur = n

    def handle_startendtag(self, tag, attrs):
        self.cur.kids.append(Node(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not None and n.tag != tag:
            n = n.parent
        if n is not None and n.parent is not None:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.text += data


failed = 0


def check(name, ok, why=""):
    global failed
    if ok:
        print("PASS " + name)
    else:
        failed += 1
        print("FAIL %s: %s" % (name, why))


def nums(s):
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", s or "")]


def ints(s):
    return [int(x) for x in (s or "").split()]


class Scale:
    """A chart's scale as its <svg> states it."""

    def __init__(self, svg):
        a = {k: float(svg.attrs["data-" + k]) for k in ("t0", "t1", "x0", "x1", "y0", "y1", "vmax")}
        self.__dict__.update(a)

    def x(self, t):
        return self.x0 + (t - self.t0) / (self.t1 - self.t0) * (self.x1 - self.x0)

    def y(self, v):
        return self.y0 - v / self.vmax * (self.y0 - self.y1)


def same_points(sc, pts, ts, vs):
    """PTS (x, y pairs as drawn) are (TS[i], VS[i]) in SC, to the 0.01 px the
    page rounds to: the first sample that is not, or None."""
    if len(pts) != 2 * len(ts):
        return "%d points for %d samples" % (len(pts) // 2, len(ts))
    for i, (t, v) in enumerate(zip(ts, vs)):
        x, y = pts[2 * i], pts[2 * i + 1]
        if abs(x - sc.x(t)) > 0.0051 or abs(y - sc.y(v)) > 0.0051:
            return "sample %d (t=%d ns, %d): drawn at (%s, %s), should be (%.3f, %.3f)" % (
                i, t, v, x, y, sc.x(t), sc.y(v))
    return None


def body_of(path):
    tree = Tree(open(path, encoding="utf-8").read()).root
    body = tree.one("body")
    check("the page's script ran to its end (<body data-rendered=yes>)",
          body is not None and body.attrs.get("data-rendered") == "yes",
          "no data-rendered on <body>")
    return tree


def timeline(dom, doc):
    tree = body_of(dom)
    times, total = doc["times_ns"], doc["total"]
    svg = tree.one("svg", id="memory")
    if svg is None:
        return check("the memory chart is drawn", False, "no <svg id=memory>")
    sc = Scale(svg)
    span = max(doc["duration_ns"], times[-1])
    check("the chart's time axis spans the run", sc.t0 == 0 and sc.t1 == (span or 1),
          "t0 %s, t1 %s" % (sc.t0, sc.t1))
    check("the chart's bytes axis holds the peak", sc.vmax >= doc["peak"]["bytes"],
          "vmax %s < peak %s" % (sc.vmax, doc["peak"]["bytes"]))
    line = svg.one("polyline", class_="total")
    check("total: data-times are the JSON's times_ns", ints(line.attrs.get("data-times")) == times)
    check("total: data-values are the JSON's total.bytes",
          ints(line.attrs.get("data-values")) == total["bytes"])
    err = same_points(sc, nums(line.attrs.get("points")), times, total["bytes"])
    check("total: the line is drawn at total.bytes at each of the %d times" % len(times),
          err is None, err)
    # Bands: groups of the sites with a series (the sites of one name, as
    # the band's data-sites says), by the sum of their peak_bytes, at most
    # ten, stacked from the bottom; then "other" up to the total. Each site
    # with a series is in at most one band; the bands leave out only groups
    # of less than the tenth's bytes.
    by_id = {s["id"]: s for s in doc["sites"]}
    bands = list(svg.find("path", class_="band"))
    groups = [[by_id.get(int(x)) for x in b.attrs.get("data-sites", "").split()]
              for b in bands[:-1]]
    members = [x for g in groups for x in g]
    with_series = [s for s in doc["sites"] if "bytes" in s]
    check("bands: of sites with a series, each in one band, at most ten and other",
          None not in members and all("bytes" in x for x in members) and
          len(set(id(x) for x in members)) == len(members) and 0 < len(bands) <= 11 and
          (len(with_series) == 0) == (len(bands) == 1),
          "bands of %s" % [[x and x["id"] for x in g] for g in groups])
    peaks = [sum(x["peak_bytes"] for x in g) for g in groups]
    check("bands: by their sites' bytes at the peak, most first", peaks == sorted(peaks, reverse=True),
          str(peaks))
    check("bands: ten unless every site with a series is in one",
          len(groups) == 10 or len(members) == len(with_series),
          "%d bands of %d sites, %d with a series" % (len(groups), len(members), len(with_series)))
    cum = [0] * len(times)
    for g, b in zip(groups + [None], bands):
        vals = ([sum(col) for col in zip(*[x["bytes"] for x in g])] if g else
                [max(0, v - c) for v, c in zip(total["bytes"], cum)])
        name = "band of sites %s" % ([x["id"] for x in g] if g else "other")
        check(name + ": data-values are the sum of the JSON's bytes of its sites",
              ints(b.attrs.get("data-values")) == vals)
        for i, v in enumerate(vals):
            cum[i] += v
        pts = nums(b.attrs.get("d"))
        err = same_points(sc, pts[:2 * len(times)], times, cum)
        check(name + ": its top edge is drawn at the sum of the bands up to it, at each time",
              err is None, err)
    pk = svg.one("circle", class_="peak")
    p = doc["peak"]
    check("peak marker: data-time and data-bytes are the JSON's peak",
          pk is not None and (int(pk.attrs["data-time"]), int(pk.attrs["data-bytes"])) ==
          (p["time_ns"], p["bytes"]))
    check("peak marker: drawn at the peak's time and bytes",
          pk is not None and abs(float(pk.attrs["cx"]) - sc.x(p["time_ns"])) <= 0.0051 and
          abs(float(pk.attrs["cy"]) - sc.y(p["bytes"])) <= 0.0051,
          pk and "(%s, %s)" % (pk.attrs["cx"], pk.attrs["cy"]))
    lbl = svg.one("text", class_="peak-label")
    check("peak label: its bytes and blocks", lbl is not None and
          ("(%s blocks)" % format(p["blocks"], ",")) in lbl.alltext(), lbl and lbl.alltext())
    rs = tree.one("svg", id="rate")
    rate = []
    for i, a in enumerate(total["allocations"]):
        dt = times[i] - (times[i - 1] if i else 0)
        rate.append(int(a * 1e9 / dt + 0.5) if dt > 0 else 0)
    rl = rs.one("polyline", class_="rate") if rs else None
    check("allocations per second: allocations / the interval, at each time",
          rl is not None and ints(rl.attrs.get("data-values")) == rate)
    err = rl and same_points(Scale(rs), nums(rl.attrs.get("points")), times, rate)
    check("allocations per second: drawn at those values", rl is not None and err is None, err)
    tables(tree, doc["sites"])
    for fid, key in (("flame-peak", "peak_bytes"), ("flame-leaks", "leaked_bytes")):
        stacks = {}
        for s in doc["sites"]:
            st = tuple(frame_text(f) for f in reversed(s["frames"]))
            stacks[st] = stacks.get(st, 0) + s[key]
        flame(tree, fid, stacks)


def frame_text(f):
    """A frame as the page writes it (view/sites.py's frame_text)."""
    name = f.get("function")
    if not name:
        mod = f.get("module")
        name = (mod.rsplit("/", 1)[-1] + ("+" + f["offset"] if f.get("offset") else
                                         " " + f["address"] if f.get("address") else "")
                if mod else f.get("address") or "??")
    if f.get("file"):
        name += " at " + f["file"] + (":%d" % f["line"] if f.get("line") else "")
    return name


def tables(tree, sites):
    """A row is a name's sites (its data-sites): its values their sums, the
    rows by them, most first, names distinct, the largest site's stack
    first under the name. (Which sites share a name: answers_page.sh.)"""
    by_id = {s["id"]: s for s in sites}
    for tid, key in (("by-peak", "peak_bytes"), ("by-leaked", "leaked_bytes"),
                     ("by-allocated", "allocated_bytes"), ("by-temporary", "temporary")):
        sec = tree.one("section", id=tid)
        rows = [r for r in sec.find("tr") if "data-sites" in r.attrs] if sec else []
        got, bad = [], []
        for r in rows:
            ms = [by_id.get(int(x)) for x in r.attrs["data-sites"].split()]
            if None in ms:
                bad.append(r.attrs["data-sites"])
                continue
            got.append((sum(m[key] for m in ms), int(r.one("td", data_key=key).attrs["data-value"]),
                        r.one("summary").alltext(), ms))
        n = len([s for s in sites if s[key] > 0])
        check("table %s: rows of the JSON's sites, the %s their sums, most first" % (tid, key),
              not bad and all(a == b for a, b, _, _ in got) and
              [b for _, b, _, _ in got] == sorted((b for _, b, _, _ in got), reverse=True) and
              (len(rows) == 20 or sum(len(ms) for _, _, _, ms in got) == n),
              "bad %s; got %s" % (bad, [(a, b, nm) for a, b, nm, _ in got]))
        names = [nm for _, _, nm, _ in got]
        check("table %s: one row per name" % tid, len(set(names)) == len(names), str(names))
        if got:
            ms = sorted(got[0][3], key=lambda m: -m[key])
            stack = [li.alltext() for li in rows[0].one("ol").find("li")]
            fr = [frame_text(f) for f in ms[0]["frames"]]
            check("table %s: the first row's largest stack, innermost first" % tid, stack == fr,
                  "%s, want %s" % (stack, fr))


def flame(tree, fid, stacks, name=lambda n: n):
    """STACKS: (outermost frame, ..., innermost) -> bytes; the cells as drawn
    must be their sums: each path's cell the bytes of the stacks below it."""
    sec = tree.one("section", id=fid)
    svg = sec.one("svg") if sec else None
    total = sum(stacks.values())
    if not total:
        return check(fid + ": nothing to draw, and it says so", svg is None and sec is not None)
    check(fid + ": its total is the stacks' sum (%d bytes)" % total,
          svg is not None and svg.attrs.get("data-total") == str(total),
          svg and svg.attrs.get("data-total"))
    want = {}
    for st, v in stacks.items():
        for d in range(1, len(st) + 1):
            want[st[:d]] = want.get(st[:d], 0) + v
    got, path = {}, []
    for g in svg.find("g", class_="cell") if svg else []:
        d = int(g.attrs["data-depth"])
        del path[d:]
        path.append(name(g.attrs["data-name"]))
        if d:
            got[tuple(path[1:])] = got.get(tuple(path[1:]), 0) + int(g.attrs["data-value"])
    # Cells narrower than half a pixel of the 1000-wide graph are not drawn.
    want = {k: v for k, v in want.items() if v > 0 and v * 1000 / total >= 0.5}
    check(fid + ": one cell per stack prefix, of the bytes below it (%d cells)" % len(want),
          got == want, "got %s; want %s" % (sorted(got.items()), sorted(want.items())))


def folded(path):
    out = {}
    for line in open(path):
        if line.strip():
            st, v = line.rsplit(" ", 1)
            out[tuple(st.split(";"))] = out.get(tuple(st.split(";")), 0) + int(v)
    return out


def profile(dom, exit_file, peak_file):
    """Against MEMTRACE_FOLDED's files, another writer of the same numbers:
    the cells' names are the functions only there, so compare the flame
    graphs by function (the page's "NAME at FILE:LINE" cut at " at ")."""
    tree = body_of(dom)
    nt = tree.one("p", id="no-timeline")
    check("no timeline: the page says so", nt is not None and "No timeline" in nt.alltext())
    check("no timeline: no memory chart", tree.one("svg", id="memory") is None)
    for fid, path in (("flame-leaks", exit_file), ("flame-peak", peak_file)):
        if path == "-":
            continue
        want = folded(path)
        flame(tree, fid, want, lambda name: name.split(" at ")[0])


if __name__ == "__main__":
    if sys.argv[1] == "timeline":
        timeline(sys.argv[2], json.load(open(sys.argv[3])))
    else:
        profile(sys.argv[2], sys.argv[3], sys.argv[4])
    sys.exit(1 if failed else 0)
