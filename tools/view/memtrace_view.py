# SPDX-License-Identifier: LGPL-2.1-or-later
"""memtrace view FILE [-o PAGE]: one self-contained HTML page from a
memtrace timeline (`memtrace export --json`, doc/design.adoc's contract in
"The timeline JSON"), a recording (exported through the launcher), a pprof
profile (MEMTRACE_PPROF) or a folded-stacks file (MEMTRACE_FOLDED).

Run by the launcher (cli/memtrace.sh), which sets MEMTRACE_LAUNCHER to
itself for the export. The page's script and style (page.js, page.css,
beside this file) are put inline: the page reads nothing from the network
or the disk when opened.

Every input becomes one model (the page's data, `model` below): frames
interned once, sites as stacks of frame indexes (innermost first) with the
numbers their input has; a timeline only for a timeline or recording.
Bad input: one `memtrace:` line on stderr, status 1, no page written.

Python's standard library only: protobuf's wire format is decoded here
(about forty lines for the six messages the page needs) rather than
generating code from profile.proto, which would add protoc and
python3-protobuf for a read-only walk."""
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import zlib

import sites as names

HERE = os.path.dirname(os.path.abspath(__file__))
TOP_SERIES = 10  # groups of sites drawn as bands in the chart; the rest is "other"
RECORDING_MAGIC = b"MTREC01\n"  # MEMTRACE_RECORD's files (src/timeline/record_format.h)


class Bad(Exception):
    """Input that cannot be read: the message of the one memtrace: line."""


# ------------------------------------------------------------ the model
class Model:
    def __init__(self, source, name):
        self.frames, self.frame_ix, self.sites = [], {}, []
        self.data = {"source": source, "file": name, "frames": self.frames,
                     "sites": self.sites, "timeline": None, "totals": {},
                     "no_timeline": None, "have": {}}

    def frame(self, function, file=None, line=None, module=None, address=None, offset=None):
        key = (function, file, line, module, address, offset)
        i = self.frame_ix.get(key)
        if i is None:
            i = self.frame_ix[key] = len(self.frames)
            self.frames.append(list(key))
        return i


# ------------------------------------------------------------ timeline JSON
NUM_FIELDS = names.NUM_FIELDS


def ints(v, what, n=None):
    if not isinstance(v, list) or any(type(x) is not int for x in v):
        raise Bad("%s is not a list of integers" % what)
    if n is not None and len(v) != n:
        raise Bad("%s has %d values for %d times" % (what, len(v), n))
    return v


def from_timeline(doc, path):
    """DOC: the parsed JSON of PATH (or of PATH's export)."""
    try:
        return timeline_model(doc, path)
    except Bad as e:
        raise Bad("%s: %s" % (path, e))


def timeline_model(doc, path):
    if doc.get("memtrace_timeline") != 1:
        raise Bad("not a memtrace timeline of version 1 (\"memtrace_timeline\": %s)"
                  % json.dumps(doc.get("memtrace_timeline")))
    m = Model("timeline", os.path.basename(path))
    d = m.data
    for k in ("command", "pid", "start_unix_ns", "duration_ns", "truncated"):
        d[k] = doc.get(k)
    # MEMTRACE_SAMPLE's mean bytes between the blocks recorded; 0 (or
    # absent, as in timelines from before the field) for every allocation
    rate = doc.get("sample_rate", 0)
    if type(rate) is not int or rate < 0:
        raise Bad("sample_rate is not a count of bytes (%s)" % json.dumps(rate))
    d["sample_rate"] = rate
    try:
        times = ints(doc["times_ns"], "times_ns")
        if any(b < a for a, b in zip(times, times[1:])):
            raise Bad("times_ns is not ascending")
        n = len(times)
        total = doc["total"]
        tl = {"times_ns": times, "bytes": ints(total["bytes"], "total.bytes", n),
              "blocks": ints(total["blocks"], "total.blocks", n),
              "allocations": ints(total["allocations"], "total.allocations", n),
              "peak": doc["peak"], "series": []}
        d["totals"] = doc.get("totals") or {}
        # A large run's JSON repeats each frame in every stack that holds it
        # (500 MiB for a g++ compile's 80,000 sites, of 10,000 frames): the
        # frame's values as written are the key of a first cache.
        seen = {}
        for s in doc["sites"]:
            stack = []
            for f in s["frames"]:
                k = tuple(f.values())
                i = seen.get(k)
                if i is None:
                    i = seen[k] = m.frame(f.get("function"), f.get("file"), f.get("line"),
                                          f.get("module"), f.get("address"), f.get("offset"))
                stack.append(i)
            site = {"id": s["id"], "stack": stack}
            for k in NUM_FIELDS:
                site[k] = s.get(k, 0)
            if "bytes" in s:
                tl["series"].append({"site": len(m.sites),
                                     "bytes": ints(s["bytes"], "site %s's bytes" % s["id"], n)})
            m.sites.append(site)
    except (KeyError, TypeError, AttributeError) as e:
        raise Bad("not a memtrace timeline (%s missing or of the wrong type)"
                  % (e.args[0] if e.args else e))
    d["timeline"] = tl  # its series become the top groups' (sites.group)
    d["have"] = dict.fromkeys(("peak", "leaked", "allocated", "temporary"), True)
    return m


# ------------------------------------------------------------ pprof
def varint(buf, i):
    shift = result = 0
    while True:
        if i >= len(buf):
            raise Bad("truncated varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, i
        shift += 7


def fields(buf):
    """(field number, value) of a message: an int, or bytes for wire type 2.
    BUF must be bytes: a field that should hold a message but was written
    with another wire type is an error of the file."""
    if not isinstance(buf, bytes):
        raise Bad("a message field of wire type 0, 1 or 5")
    i, n = 0, len(buf)
    while i < n:
        key, i = varint(buf, i)
        wire = key & 7
        if wire == 0:
            v, i = varint(buf, i)
        elif wire == 2:
            size, i = varint(buf, i)
            if i + size > n:
                raise Bad("truncated field")
            v, i = buf[i:i + size], i + size
        elif wire == 1:
            v, i = int.from_bytes(buf[i:i + 8], "little"), i + 8
        elif wire == 5:
            v, i = int.from_bytes(buf[i:i + 4], "little"), i + 4
        else:
            raise Bad("wire type %d" % wire)
        yield key >> 3, v


def packed(v, signed=False):
    """A repeated integer field's value: one varint, or a packed run."""
    if isinstance(v, int):
        out = [v]
    else:
        out, i = [], 0
        while i < len(v):
            x, i = varint(v, i)
            out.append(x)
    if signed:
        out = [x - (1 << 64) if x >= 1 << 63 else x for x in out]
    return out


def from_pprof(raw, name, m=None, role=None):
    """Profile.proto (pprof's profile.proto field numbers). ROLE: "peak" for
    the profile at the peak (its in-use values are the peak's), else the
    exit's (in use = leaked)."""
    strings, types, samples, locs, funcs, maps = [], [], [], {}, {}, {}
    for f, v in fields(raw):
        if f == 6:
            if not isinstance(v, bytes):
                raise Bad("a string of wire type 0, 1 or 5")
            strings.append(v.decode("utf-8", "replace"))
        elif f == 1:
            t = dict(fields(v))
            types.append(t.get(1, 0))
        elif f == 2:
            s = {1: [], 2: []}
            for g, w in fields(v):
                if g in (1, 2):
                    s[g] += packed(w, g == 2)
            samples.append(s)
        elif f == 4:
            loc = {"lines": []}
            for g, w in fields(v):
                if g == 4:
                    loc["lines"].append(dict(fields(w)))
                elif g in (1, 2, 3):
                    loc[g] = w
            locs[loc.get(1, 0)] = loc
        elif f == 5:
            fn = dict(fields(v))
            funcs[fn.get(1, 0)] = fn
        elif f == 3:
            mp = dict(fields(v))
            maps[mp.get(1, 0)] = mp
    if not strings or strings[0] != "":
        raise Bad("%s: not a pprof profile (no string table)" % name)

    def s(i):
        return strings[i] if isinstance(i, int) and 0 <= i < len(strings) else None

    names = [s(t) for t in types]
    col = {k: names.index(k) for k in ("alloc_objects", "alloc_space", "inuse_objects",
                                       "inuse_space") if k in names}
    if "inuse_space" not in col and "alloc_space" not in col:
        raise Bad("%s: a pprof profile without inuse_space or alloc_space (sample types: %s)"
                  % (name, ", ".join(str(x) for x in names)))
    if m is None:
        m = Model("pprof", name)
    by_stack = {}
    for site in m.sites:
        by_stack[tuple(site["stack"])] = site
    loc_frames = {}
    for sm in samples:
        stack = []
        for lid in sm[1]:
            fr = loc_frames.get(lid)
            if fr is None:
                loc = locs.get(lid, {"lines": []})
                mp = maps.get(loc.get(2), {})
                module = s(mp.get(5))
                addr = "0x%x" % loc[3] if isinstance(loc.get(3), int) else None
                # the mapping's start less its file offset is the load bias
                # when the mapping is the module's first (as the writers do)
                off = None
                if addr and isinstance(mp.get(2), int) and loc[3] >= mp[2]:
                    off = "0x%x" % (loc[3] - mp[2] + (mp.get(4) or 0))
                fr = []
                for ln in loc["lines"]:
                    fn = funcs.get(ln.get(1), {})
                    line = ln.get(2)
                    fr.append(m.frame(s(fn.get(2)) or None, s(fn.get(4)) or None,
                                      line if isinstance(line, int) and line else None,
                                      module or None, addr, off))
                if not fr:
                    fr.append(m.frame(None, None, None, module or None, addr, off))
                loc_frames[lid] = fr
            stack += fr
        key = tuple(stack)
        site = by_stack.get(key)
        if site is None:
            site = by_stack[key] = {"id": len(m.sites), "stack": stack}
            m.sites.append(site)
        v = sm[2]

        def add(k, c):
            if c in col and col[c] < len(v):
                site[k] = site.get(k, 0) + v[col[c]]
        if role == "peak":
            add("peak_bytes", "inuse_space")
        else:
            add("leaked_bytes", "inuse_space")
            add("leaked_blocks", "inuse_objects")
            add("allocations", "alloc_objects")
            add("allocated_bytes", "alloc_space")
    have = m.data["have"]
    if role == "peak":
        have["peak"] = "inuse_space" in col
    else:
        have["leaked"] = "inuse_space" in col
        have["allocated"] = "alloc_space" in col
    return m


# ------------------------------------------------------------ folded
FOLDED = re.compile(r"^(.+) (\d+)$")
MAX_COUNT_DIGITS = 20  # a count is a uint64_t (MEMTRACE_FOLDED's writer)


def from_folded(text, name, m=None, role=None):
    """`outer;...;inner VALUE` lines: the exit's live bytes (leaked), or the
    peak's for ROLE "peak" (MEMTRACE_FOLDED's PATH.peak)."""
    if m is None:
        m = Model("folded", os.path.basename(name))
    by_stack = {tuple(s["stack"]): s for s in m.sites}
    key = "peak_bytes" if role == "peak" else "leaked_bytes"
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        g = FOLDED.match(line)
        if not g:
            raise Bad("%s:%d: not a folded-stacks line (FRAME;FRAME;... COUNT)" % (name, n))
        if len(g.group(2)) > MAX_COUNT_DIGITS:
            raise Bad("%s:%d: a count of %d digits" % (name, n, len(g.group(2))))
        stack = tuple(m.frame(f) for f in reversed(g.group(1).split(";")))
        site = by_stack.get(stack)
        if site is None:
            site = by_stack[stack] = {"id": len(m.sites), "stack": list(stack)}
            m.sites.append(site)
        site[key] = site.get(key, 0) + int(g.group(2))
    m.data["have"]["peak" if role == "peak" else "leaked"] = True
    return m


def is_folded(raw):
    """Text whose first line is a folded-stacks line (a later line that is
    not is an error of the file, said with its number). A byte that is not
    UTF-8 (a function's name is the program's bytes) reads as U+FFFD."""
    first = next((ln for ln in raw[:65536].decode("utf-8", "replace").splitlines()
                  if ln.strip()), "")
    return bool(FOLDED.match(first))


# ------------------------------------------------------------ reading FILE
def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise Bad("%s: %s" % (path, e.strerror))


def load_recording(path):
    """A recording: `memtrace export --json` through the launcher."""
    launcher = os.environ.get("MEMTRACE_LAUNCHER", "memtrace")
    with tempfile.TemporaryDirectory(prefix="memtrace-view.") as tmp:
        out = os.path.join(tmp, "timeline.json")
        r = subprocess.run([launcher, "export", "--json", path, "-o", out],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        err = r.stderr.decode("utf-8", "replace").strip()
        if r.returncode != 0 or not os.path.exists(out):
            raise Bad("%s: a recording that `memtrace export --json` could not read%s"
                      % (path, " (%s)" % err.splitlines()[0] if err else ""))
        if err:  # a readable prefix, say: the export says so, and so do we
            sys.stderr.write(err + "\n")
        try:
            return json.loads(read(out))
        except (ValueError, RecursionError) as e:
            raise Bad("%s: its export is not valid JSON (%s)" % (path, e))


def peak_companion(path):
    """MEMTRACE_FOLDED and MEMTRACE_PPROF write PATH (exit) and PATH.peak:
    the other file of the pair, and which one PATH is."""
    if path.endswith(".peak"):
        return path[:-5], "peak"
    return path + ".peak", "exit"


def load(path):
    raw = read(path)
    name = os.path.basename(path)
    if raw[:len(RECORDING_MAGIC)] == RECORDING_MAGIC:
        return from_timeline(load_recording(path), path)
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise Bad("%s: a damaged gzip file (%s)" % (path, e))
        if raw.lstrip()[:1] != b"{":
            return load_pprof_pair(path, raw, name)
    if raw.lstrip()[:1] == b"{":
        try:
            doc = json.loads(raw)
        except (ValueError, RecursionError) as e:
            raise Bad("%s: not valid JSON (%s)" % (path, e))
        if not isinstance(doc, dict):
            raise Bad("%s: not a memtrace timeline" % path)
        return from_timeline(doc, path)
    if is_folded(raw):
        other, role = peak_companion(path)
        m = from_folded(raw.decode("utf-8", "replace"), path, None, role)
        if os.path.isfile(other):
            from_folded(read(other).decode("utf-8", "replace"), other, m,
                        "exit" if role == "peak" else "peak")
            m.data["file"] = "%s and %s" % (name, os.path.basename(other))
        m.data["no_timeline"] = "a folded-stacks file holds one moment per file"
        return m
    raise Bad("%s: not a memtrace recording, timeline (memtrace export --json), pprof profile "
              "or folded-stacks file" % path)


def load_pprof_pair(path, raw, name):
    other, role = peak_companion(path)
    try:
        m = from_pprof(raw, name, None, role)
        if os.path.isfile(other):
            from_pprof(gzip.decompress(read(other)), os.path.basename(other), m,
                       "exit" if role == "peak" else "peak")
            m.data["file"] = "%s and %s" % (name, os.path.basename(other))
    except (Bad, OSError, EOFError, zlib.error, UnicodeDecodeError) as e:
        raise Bad("%s: not a pprof profile (%s)" % (path, e))
    except (TypeError, AttributeError, ValueError, KeyError, IndexError) as e:
        # a field of an unexpected type the checks above did not foresee
        raise Bad("%s: not a pprof profile (a field of the wrong type: %s)" % (path, e))
    m.data["no_timeline"] = "a pprof profile holds one moment"
    return m


# ------------------------------------------------------------ the page
def page(model):
    with open(os.path.join(HERE, "page.js"), encoding="utf-8") as f:
        js = f.read()
    with open(os.path.join(HERE, "page.css"), encoding="utf-8") as f:
        css = f.read()
    # Inside <script>, "<!--" then "<script" makes the parser look for two
    # "</script>"s ("double escaped" state) and the page's own script is
    # swallowed: no <, > or & of the program's data (names, arguments) may
    # reach the page as such. Outside strings, JSON has none of them.
    data = (json.dumps(model.data, separators=(",", ":")).replace("<", "\\u003c")
            .replace(">", "\\u003e").replace("&", "\\u0026"))
    title = "memtrace: " + model.data["file"]
    esc = title.replace("&", "&amp;").replace("<", "&lt;")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n"
            "<link rel=\"icon\" href=\"data:,\">\n<title>%s</title>\n<style>\n%s</style>\n</head><body>\n"
            "<script type=\"application/json\" id=\"memtrace-data\">%s</script>\n"
            "<script>\n%s</script>\n</body></html>\n" % (esc, css, data, js))


def load_named(path, base_path):
    """The model of PATH, its sites named and grouped; with BASE_PATH, the
    diff of the two runs in it."""
    m = load(path)
    if base_path is None:
        names.name_sites([m])
        names.group(m, TOP_SERIES)
        return m
    try:
        old = load(base_path)
    except Bad as e:
        raise Bad("--base: %s" % e)
    why = names.same_program(m, old, path, base_path)
    if why:
        raise Bad(why)
    names.name_sites([m, old])
    names.group(m, TOP_SERIES)
    names.group(old, TOP_SERIES)
    names.diff(m, old)
    return m


def main(argv):
    usage = "usage: memtrace view FILE [--base OLD] [-o PAGE]"
    args, out, base_path = [], None, None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(usage + "\n\nWrites one HTML page (default FILE.html) from a memtrace "
                  "timeline (memtrace export --json),\na recording, a pprof profile "
                  "(MEMTRACE_PPROF) or a folded-stacks file (MEMTRACE_FOLDED).\n"
                  "--base OLD: the page also shows each site's change from the run OLD\n"
                  "(another input of one of these kinds, of the same program).")
            return 0
        if a in ("-o", "--output"):
            if i + 1 >= len(argv):
                return usage_error("view: %s needs a PAGE" % a)
            out = argv[i + 1]
            i += 1
        elif a.startswith("--output="):
            out = a[len("--output="):]
        elif a == "--base":
            if i + 1 >= len(argv) or argv[i + 1].startswith("-") and argv[i + 1] != "-":
                return usage_error("view: --base needs a FILE (the run to compare with)")
            base_path = argv[i + 1]
            i += 1
        elif a.startswith("--base="):
            base_path = a[len("--base="):]
        elif a.startswith("-") and a != "-":
            return usage_error("view: unknown option '%s'" % a)
        else:
            args.append(a)
        i += 1
    if len(args) != 1:
        return usage_error("view: give one FILE" if args else "view: no FILE given")
    path = args[0]
    out = out or path + ".html"
    try:
        write_page(out, page(load_named(path, base_path)))
    except Bad as e:
        sys.stderr.write("memtrace: %s\n" % e)
        return 1
    sys.stderr.write("memtrace: view: %s written\n" % out)
    return 0


def write_page(out, html):
    """HTML as OUT, whole or not at all: a temporary file of its directory
    (mkstemp: a name no one can plant, mode 0600 as every memtrace output)
    renamed over it. OUT that is a symbolic link is not replaced, as the
    library does not follow one (O_NOFOLLOW): the page shows the program's
    data, and a link planted at a predictable name (FILE.html) in a shared
    directory is not the user's."""
    if os.path.islink(out):
        raise Bad("%s: not written (a symbolic link; not followed)" % out)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(out), suffix=".tmp",
                                   dir=os.path.dirname(out) or ".")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(html)
        os.replace(tmp, out)
    except OSError as e:
        if tmp:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise Bad("%s: not written (%s)" % (out, e.strerror))


def usage_error(msg):
    sys.stderr.write("memtrace: %s; try 'memtrace --help'\n" % msg)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
