#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Sampling's estimates against a full run (bench/run.sh).

    sample_accuracy.py [--rate BYTES] FULL_REPORT SAMPLED_REPORT...

Each REPORT is a profiler exit report (stderr of a run with
MEMTRACE_TOP_BY=allocs). The sites are matched by their stack's text. For
the full run's 10 sites that allocated the most bytes, prints the largest
relative error of a sampled run's estimate of their allocated bytes, over
all the SAMPLED_REPORTs (one per seed), and the same for the live total:
the bytes still live at exit, or the peak when under 1 MiB is live at exit
(a program that frees everything). In sample mode the live total and the
peak are counted exactly (live_err 0 expected). With --rate, the error
expected of one site's estimate, 1/sqrt(K) for K = its bytes / BYTES
samples (one standard deviation), of the top 10's smallest (the largest
expected error), as expected_err. One line:
    sites_err=0.043 expected_err=0.031 live_err=0 live_kind=exit sites=10 runs=3"""
import re
import sys

HEAD = re.compile(r"^memtrace: \[\d+\] \d+ bytes live in \d+ blocks; since start: (\d+) bytes in")
EXIT = re.compile(r"^memtrace: exit report, .*: peak (\d+) bytes live at \d+ ms; (\d+) bytes still live")


def parse(path):
    sites, cur, peak, live = {}, None, None, None
    for line in open(path, errors="replace"):
        m = EXIT.match(line)
        if m:
            peak, live = int(m.group(1)), int(m.group(2))
            continue
        m = HEAD.match(line)
        if m:
            cur = [int(m.group(1)), []]
            continue
        if cur is not None and re.match(r"^\s+#\d+ ", line):
            cur[1].append(line.strip())
            continue
        if cur is not None:
            key = "\n".join(cur[1])
            sites[key] = sites.get(key, 0) + cur[0]
            cur = None
    if cur is not None:
        key = "\n".join(cur[1])
        sites[key] = sites.get(key, 0) + cur[0]
    return sites, peak, live


def main():
    args = sys.argv[1:]
    rate = None
    if args[:1] == ["--rate"]:
        rate, args = int(args[1]), args[2:]
    full, peak, live = parse(args[0])
    if not full or peak is None:
        print("sites_err=- expected_err=- live_err=- live_kind=- sites=0 runs=0")
        return
    top = sorted(full, key=lambda k: -full[k])[:10]
    expected = "%.4f" % max((rate / full[k]) ** 0.5 for k in top) if rate else "-"
    kind = "exit" if live >= 1 << 20 else "peak"
    exact_live = live if kind == "exit" else peak
    sites_err, live_err, runs = 0.0, 0.0, 0
    for path in args[1:]:
        est, epeak, elive = parse(path)
        if epeak is None:
            continue
        runs += 1
        for k in top:
            sites_err = max(sites_err, abs(est.get(k, 0) - full[k]) / full[k])
        e = elive if kind == "exit" else epeak
        live_err = max(live_err, abs(e - exact_live) / exact_live)
    if runs == 0:
        print("sites_err=- expected_err=%s live_err=- live_kind=%s sites=%d runs=0"
              % (expected, kind, len(top)))
        return
    print("sites_err=%.4f expected_err=%s live_err=%.4f live_kind=%s sites=%d runs=%d"
          % (sites_err, expected, live_err, kind, len(top), runs))


main()
