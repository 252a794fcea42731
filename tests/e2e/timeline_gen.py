# SPDX-License-Identifier: LGPL-2.1-or-later
"""A timeline JSON (the contract of `memtrace export --json`, doc/design.adoc's
"The timeline JSON") computed from a made-up run, event by event, for
memtrace view's tests and bench before a real recording is there.

  timeline_gen.py phases OUT      the four known phases below, 8,000 events
  timeline_gen.py big N S OUT     N events over S sites with 6-30 frames (bench)

Phases (one thread, 1 us per event): grow (site grow, 1,000 x 64 bytes
kept), churn (site churn: 2,000 blocks of 32 bytes each freed right after
its allocation: temporary), spike (site spike, 1,000 x 1,024 bytes then
all freed: the peak is at its last allocation), leak (site leak, 500 x 16
bytes never freed); then grow's blocks are freed. Every number is counted
here from the events, as the exporter must: series at the sample times,
peak, totals, per-site numbers, temporary (heaptrack's rule, as
src/store/temporary.h: a free whose block has the size and site of the
latest allocation, with no other allocation or free in between)."""
import json
import random
import sys

SAMPLES = 2000


def run(events, nsites, frames_of, command):
    """EVENTS: (time_ns, 'a'|'f', site, size, block) in order."""
    end = events[-1][0] if events else 0
    times = [end * (i + 1) // SAMPLES for i in range(SAMPLES)] if end else []
    live = {}
    site_live = [0] * nsites
    site = [dict(allocations=0, allocated_bytes=0, peak_bytes=0, leaked_bytes=0,
                 leaked_blocks=0, temporary=0) for _ in range(nsites)]
    total = blocks = 0
    peak = dict(time_ns=0, bytes=0, blocks=0)
    peak_split = [0] * nsites
    last_alloc = None
    allocs = frees = allocated = temporary = 0

    def sweep(series_sites):
        nonlocal total, blocks, last_alloc, allocs, frees, allocated, temporary, peak_split
        live.clear()
        for k in range(nsites):
            site_live[k] = 0
        total = blocks = allocs = frees = allocated = temporary = 0
        last_alloc = None
        out = {"bytes": [], "blocks": [], "allocations": [], "series": {k: [] for k in series_sites}}
        since = 0
        si = 0
        for t, op, s, size, b in events:
            while si < len(times) and times[si] < t:
                out["bytes"].append(total)
                out["blocks"].append(blocks)
                out["allocations"].append(since)
                for k in series_sites:
                    out["series"][k].append(site_live[k])
                since = 0
                si += 1
            if op == "a":
                live[b] = (s, size)
                site_live[s] += size
                total += size
                blocks += 1
                allocs += 1
                allocated += size
                since += 1
                site[s]["allocations"] += 1
                site[s]["allocated_bytes"] += size
                last_alloc = (s, size)
                if total > peak["bytes"]:
                    peak.update(time_ns=t, bytes=total, blocks=blocks)
                    peak_split = list(site_live)
            else:
                s2, size2 = live.pop(b)
                site_live[s2] -= size2
                total -= size2
                blocks -= 1
                frees += 1
                if last_alloc == (s2, size2):
                    temporary += 1
                    site[s2]["temporary"] += 1
                last_alloc = None
        while si < len(times):
            out["bytes"].append(total)
            out["blocks"].append(blocks)
            out["allocations"].append(since)
            for k in series_sites:
                out["series"][k].append(site_live[k])
            since = 0
            si += 1
        return out

    sweep([])
    for k in range(nsites):  # the first sweep counted once, keep it
        site[k]["peak_bytes"] = peak_split[k]
    order = sorted(range(nsites), key=lambda k: -peak_split[k])
    top = [k for k in order[:20]]
    for k in range(nsites):
        for f in ("allocations", "allocated_bytes", "temporary"):
            site[k][f] = 0
    out = sweep(top)
    for b, (s, size) in live.items():
        site[s]["leaked_bytes"] += size
        site[s]["leaked_blocks"] += 1
    sites = []
    for k in order:
        d = dict(id=k + 1, frames=frames_of(k), **site[k])
        if k in out["series"]:
            d["bytes"] = out["series"][k]
        if d["allocations"]:
            sites.append(d)
    return {
        "memtrace_timeline": 1, "command": command, "pid": 4242, "start_unix_ns": 0,
        "duration_ns": end, "truncated": False, "times_ns": times,
        "total": {"bytes": out["bytes"], "blocks": out["blocks"],
                  "allocations": out["allocations"]},
        "peak": peak,
        "totals": dict(allocations=allocs, frees=frees, allocated_bytes=allocated,
                       leaked_bytes=total, leaked_blocks=blocks, temporary=temporary),
        "sites": sites}


def phases():
    ev, t, b = [], 0, 0
    names = ["grow", "churn", "spike", "leak"]

    def a(s, size):
        nonlocal t, b
        t += 1000
        b += 1
        ev.append((t, "a", s, size, b))
        return b

    def f(blk):
        nonlocal t
        t += 1000
        ev.append((t, "f", None, None, blk))
    grown = [a(0, 64) for _ in range(1000)]
    for _ in range(2000):
        f(a(1, 32))
    spike = [a(2, 1024) for _ in range(1000)]
    for blk in spike:
        f(blk)
    for _ in range(500):
        a(3, 16)
    for blk in grown:
        f(blk)

    def frames(k):
        return [{"address": "0x%x" % (0x401000 + 16 * k), "function": "alloc_" + names[k],
                 "file": "phases.c", "line": 10 + k, "module": "/usr/bin/phases"},
                {"address": "0x401200", "function": "main", "file": "phases.c", "line": 40,
                 "module": "/usr/bin/phases"}]
    return run(ev, 4, frames, "./phases")


def big(n, nsites):
    rnd = random.Random(1)
    ev, live, t, b = [], [], 0, 0
    weights = [1.0 / (k + 1) for k in range(nsites)]
    site_of = rnd.choices(range(nsites), weights, k=n)
    for i in range(n):
        t += rnd.randint(200, 2000)
        if live and (rnd.random() < 0.48 or len(live) > 200000):
            j = rnd.randrange(len(live))
            live[j], live[-1] = live[-1], live[j]
            ev.append((t, "f", None, None, live.pop()))
        else:
            b += 1
            ev.append((t, "a", site_of[i], rnd.choice((16, 32, 48, 64, 128, 256, 4096)), b))
            live.append(b)
    fnames = ["fn_%d" % k for k in range(400)]

    def frames(k):
        r = random.Random(k)
        return [{"address": "0x%x" % r.randrange(1 << 40), "function": r.choice(fnames),
                 "file": "src/f%d.cc" % r.randrange(50), "line": r.randrange(1, 2000),
                 "module": "/usr/lib/cc1plus"} for _ in range(r.randint(6, 30))]
    return run(ev, nsites, frames, "./big")


if __name__ == "__main__":
    if sys.argv[1] == "phases":
        doc, out = phases(), sys.argv[2]
    else:
        doc, out = big(int(sys.argv[2]), int(sys.argv[3])), sys.argv[4]
    with open(out, "w") as f:
        json.dump(doc, f)
