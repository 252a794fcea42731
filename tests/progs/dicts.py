# SPDX-License-Identifier: LGPL-2.1-or-later
# A Python workload for the reliability and unwind-check suites: N dict
# entries (argv[1]) of lists, strings and small dicts, then a sort.
import sys

n = int(sys.argv[1])
d = {}
for i in range(n):
    d[str(i)] = [i, i * 2, str(i) * 3, {"k": i}]
rows = sorted(d.items(), key=lambda kv: -kv[1][1])[:5]
print(sum(len(v[2]) for v in d.values()), len(d), [k for k, _ in rows])
