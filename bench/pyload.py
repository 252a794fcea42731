# SPDX-License-Identifier: LGPL-2.1-or-later
# pyload: a dict/list-heavy Python workload for `make bench`, run with
# PYTHONMALLOC=malloc so every object goes through malloc. Deterministic.
import random
import sys

def build(n, rng):
    people = []
    for i in range(n):
        people.append({
            "id": i,
            "name": "user%06d" % rng.randrange(n),
            "tags": [rng.choice("abcdefgh") * rng.randrange(1, 5) for _ in range(rng.randrange(1, 6))],
            "score": rng.random(),
        })
    return people

def index(people):
    by_tag = {}
    for p in people:
        for t in p["tags"]:
            by_tag.setdefault(t, []).append(p["id"])
    by_name = {}
    for p in people:
        by_name.setdefault(p["name"], []).append(p)
    return by_tag, by_name

def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50000
    rng = random.Random(42)
    total = 0
    for rnd in range(3):
        people = build(n, rng)
        by_tag, by_name = index(people)
        top = sorted(people, key=lambda p: (-p["score"], p["name"]))[:100]
        words = {}
        for p in people:
            key = (p["name"][-3:], len(p["tags"]))
            words[key] = words.get(key, 0) + 1
        total += len(by_tag) + len(by_name) + len(top) + len(words)
        total += sum(len(v) for v in by_tag.values())
    print("pyload:", n, total)

main()
