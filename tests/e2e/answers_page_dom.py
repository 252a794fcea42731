# SPDX-License-Identifier: LGPL-2.1-or-later
"""What a page of memtrace view shows, as Chromium left its DOM (its
--dump-dom after the page's script ran), written out as plain lines for
tests/e2e/answers_page.sh to compare with the exact lines it expects.

  answers_page_dom.py legend DOM         NAME|SITES|LAST per band (LAST: its
                                         bytes at the last sample, the exit)
  answers_page_dom.py table DOM ID KEY   NAME|VALUE|SITES per row of #ID
  answers_page_dom.py stacks DOM ID NAME each stack of NAME's row, frames by " | "
  answers_page_dom.py callers DOM        the caller/callee view's function,
                                         then up|FN|PEAK|ALLOCS and down|...
  answers_page_dom.py diff DOM           the diff's peak line, then
                                         NAME|KEY=BASE>NEW(DELTA) ... per row
  answers_page_dom.py share DOM          PEAK BANDS_AT_PEAK BANDS TOTAL: the
                                         peak's bytes and the bands' (not
                                         "other") at the peak; then the bands'
                                         and the whole's at the sample nearest
                                         the peak, as drawn
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from view_dom import Tree  # noqa: E402


def main(what, dom, *args):
    tree = Tree(open(dom, encoding="utf-8").read()).root
    body = tree.one("body")
    if body is None or body.attrs.get("data-rendered") != "yes":
        print("the page's script did not run to its end")
        return
    if what == "legend":
        svg = tree.one("svg", id="memory")
        bands = list(svg.find("path", class_="band")) if svg else []
        items = list(tree.one("ul", class_="legend").find("li")) if bands else []
        for b, li in zip(bands, items):
            v = [int(x) for x in b.attrs.get("data-values", "").split()]
            print("%s|%d|%d" % (li.alltext(), len(b.attrs.get("data-sites", "").split()),
                                v[-1] if v else -1))
    elif what == "table":
        sec = tree.one("section", id=args[0])
        for r in sec.find("tr") if sec else []:
            if "data-sites" in r.attrs:
                print("%s|%s|%d" % (r.one("summary").alltext(),
                                    r.one("td", data_key=args[1]).attrs["data-value"],
                                    len(r.attrs["data-sites"].split())))
    elif what == "stacks":
        sec = tree.one("section", id=args[0])
        for r in sec.find("tr") if sec else []:
            if "data-sites" in r.attrs and r.one("summary").alltext() == args[1]:
                for ol in r.find("ol", class_="stack"):
                    print(" | ".join(li.alltext() for li in ol.find("li")))
    elif what == "callers":
        out = tree.one("div", class_="cc-out")
        if out is None:
            print("no caller/callee view")
            return
        print(out.attrs.get("data-function"))
        for tid, tag in (("cc-callers", "up"), ("cc-callees", "down")):
            for r in out.one("table", id=tid).find("tr"):
                if "data-function" in r.attrs:
                    print("%s|%s|%s|%s" % (tag, r.attrs["data-function"],
                                           r.one("td", data_key="peak_bytes").attrs["data-value"],
                                           r.one("td", data_key="allocations").attrs["data-value"]))
    elif what == "share":
        svg = tree.one("svg", id="memory")
        line = svg.one("polyline", class_="total")
        times = [int(x) for x in line.attrs["data-times"].split()]
        total = [int(x) for x in line.attrs["data-values"].split()]
        t = int(svg.one("circle", class_="peak").attrs["data-time"])
        i = min(range(len(times)), key=lambda k: abs(times[k] - t))
        bands = [b for b in svg.find("path", class_="band") if "other" not in b.attrs["class"].split()]
        peak = svg.one("circle", class_="peak").attrs["data-bytes"]
        print(peak, sum(int(b.attrs["data-peak"]) for b in bands),
              sum(int(b.attrs["data-values"].split()[i]) for b in bands), total[i])
    elif what == "diff":
        sec = tree.one("section", id="diff")
        if sec is None:
            print("no diff")
            return
        print(sec.one("p", id="diff-peak").alltext())
        for r in sec.find("tr"):
            if "data-name" in r.attrs:
                print(r.attrs["data-name"] + "|" + " ".join(
                    "%s=%s>%s(%s)" % (td.attrs["data-key"], td.attrs["data-base"],
                                      td.attrs["data-value"], td.attrs["data-delta"])
                    for td in r.find("td") if "data-key" in td.attrs))


if __name__ == "__main__":
    main(*sys.argv[1:])
