#!/usr/bin/env python3
"""Exclusive instructions per request, by function, from callgrind dumps; and their difference.

  scripts/callgrind-fns.py DUMP REQUESTS [--top N]
  scripts/callgrind-fns.py --diff DUMP_A REQUESTS_A DUMP_B REQUESTS_B [--top N]

Functions are grouped by name with generic parameters and closures kept, so that the same
function in two binaries (two builds, two servers) lines up. Costs on `calls=` lines (a callee's
inclusive cost) are not the caller's own and are skipped.
"""

import re
import sys
from collections import defaultdict


def exclusive(path):
    names = {}
    costs = defaultdict(int)
    fn = None
    skip_next = False
    with open(path) as f:
        for line in f:
            if skip_next:
                skip_next = False
                continue
            if line.startswith("fn="):
                m = re.match(r"fn=\((\d+)\)(?: (.*))?", line.rstrip("\n"))
                if m:
                    if m.group(2) is not None:
                        names[m.group(1)] = m.group(2)
                    fn = names.get(m.group(1), m.group(1))
                else:
                    fn = line[3:].rstrip("\n")
                continue
            if line.startswith("cfn="):
                m = re.match(r"cfn=\((\d+)\)(?: (.*))?", line.rstrip("\n"))
                if m and m.group(2) is not None:
                    names[m.group(1)] = m.group(2)
                continue
            if line.startswith("calls="):
                skip_next = True
                continue
            if fn is None or not line or not (line[0].isdigit() or line[0] in "+-*"):
                continue
            parts = line.split()
            if len(parts) >= 2:
                costs[fn] += int(parts[1])
    return costs


def short(name):
    return re.sub(r"::h[0-9a-f]{16}$", "", name)


def main():
    argv = sys.argv[1:]
    top = 40
    if "--top" in argv:
        i = argv.index("--top")
        top = int(argv[i + 1])
        del argv[i:i + 2]
    if argv and argv[0] == "--diff":
        a, na, b, nb = argv[1], int(argv[2]), argv[3], int(argv[4])
        ca, cb = exclusive(a), exclusive(b)
        keys = set(ca) | set(cb)
        rows = [(cb.get(k, 0) / nb - ca.get(k, 0) / na, ca.get(k, 0) / na, cb.get(k, 0) / nb, k)
                for k in keys]
        rows.sort(key=lambda r: -abs(r[0]))
        ta, tb = sum(ca.values()) / na, sum(cb.values()) / nb
        print(f"total Ir/req: A {ta:.0f}  B {tb:.0f}  B-A {tb - ta:+.0f}")
        for d, x, y, k in rows[:top]:
            print(f"{d:+8.0f} {x:8.0f} {y:8.0f}  {short(k)[:150]}")
        return
    path, n = argv[0], int(argv[1])
    c = exclusive(path)
    total = sum(c.values()) / n
    print(f"total Ir/req: {total:.0f}")
    for k, v in sorted(c.items(), key=lambda kv: -kv[1])[:top]:
        print(f"{v / n:8.0f} {100 * v / n / total:5.1f}%  {short(k)[:150]}")


if __name__ == "__main__":
    main()


def callers(path, target):
    """Inclusive cost and call count of `target` by caller."""
    names = {}
    out = defaultdict(lambda: [0, 0])
    fn = None
    pending = None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if pending is not None:
                parts = line.split()
                if len(parts) >= 2 and pending[0]:
                    out[fn][0] += int(parts[1])
                    out[fn][1] += pending[1]
                pending = None
                continue
            if line.startswith("fn="):
                m = re.match(r"fn=\((\d+)\)(?: (.*))?", line)
                if m.group(2) is not None:
                    names[m.group(1)] = m.group(2)
                fn = names.get(m.group(1))
            elif line.startswith("cfn="):
                m = re.match(r"cfn=\((\d+)\)(?: (.*))?", line)
                if m.group(2) is not None:
                    names[m.group(1)] = m.group(2)
                cur = names.get(m.group(1), "")
            elif line.startswith("calls="):
                n = int(line.split("=")[1].split()[0])
                pending = (target in cur, n)
    return out


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "--callers":
    pass
