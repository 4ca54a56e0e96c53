#!/usr/bin/env python3
"""Compare the `result N (role): [...]` lines of two `gacc-run --print-results`
outputs: every result within a normwise relative error (max |a - b| / max |b|)
of --rtol (default 3e-5: the values are printed with 6 significant digits,
so two roundings alone can differ by ~1e-5; a wrong split is off by far
more). Prints one line; exit 1 on a mismatch."""

import argparse
import re
import sys

LINE = re.compile(r"^result (\d+) \(([a-z_]+)\): \[(.*)\]$")


def parse(path):
    res = {}
    with open(path) as f:
        for line in f:
            m = LINE.match(line.strip())
            if m:
                vals = [float(x) for x in m.group(3).split(",") if x.strip()]
                res[int(m.group(1))] = (m.group(2), vals)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--rtol", type=float, default=3e-5)
    o = ap.parse_args()
    a, b = parse(o.a), parse(o.b)
    if not a or a.keys() != b.keys():
        print("MISMATCH: result sets differ (%d vs %d results)" % (len(a), len(b)))
        return 1
    worst = 0.0
    bad = []
    for k in sorted(a):
        va, vb = a[k][1], b[k][1]
        if len(va) != len(vb):
            bad.append("result %d: %d vs %d values" % (k, len(va), len(vb)))
            continue
        scale = max([abs(x) for x in vb] + [1e-30])
        err = max(abs(x - y) for x, y in zip(va, vb)) / scale
        worst = max(worst, err)
        if err > o.rtol:
            bad.append("result %d (%s): relative error %.3e" % (k, a[k][0], err))
    if bad:
        print("MISMATCH: " + "; ".join(bad))
        return 1
    print("SAME: %d results, max relative error %.2e" % (len(a), worst))
    return 0


if __name__ == "__main__":
    sys.exit(main())
