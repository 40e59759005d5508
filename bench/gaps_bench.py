#!/usr/bin/env python3
"""Gaps (MiniMalloc `gaps` column): how much the planner gains from them.

Generates problems with gaps (fixed seeds, printed), writes each twice --
with its gaps and with the gaps dropped (every buffer live on its whole
hull) -- and plans both with `nnmem plan --json`; prints the heights, the
lower bound with gaps (max active bytes) and the hull bound. Kinds:
  train:N   N forward activations of random size; activation i is active
            at steps [i, i + 2) (made, read by the next op) and again at
            [2N - 2 - i, 2N - i) (read by its backward op): the steps in
            between are a gap (where offload would go); plus one gradient
            temporary per backward step;
  random:N  N buffers with random lifetimes in [0, N / 4) and 0-3 random
            gaps each.
Usage: bench/gaps_bench.py BUILD/nnmem [KIND:N ...] [--csv OUT.csv]
Not a test: asserts nothing about time."""
import csv
import json
import os
import random
import subprocess
import sys
import tempfile


def gen_train(n, rng):
    rows = []
    for i in range(n):
        first, last = i, 2 * n - i
        gaps = [(i + 2, 2 * n - 2 - i)] if i + 2 < 2 * n - 2 - i else []
        rows.append(("a%d" % i, first, last, rng.randint(1, 64) * 1024, gaps))
    for s in range(n, 2 * n):
        rows.append(("g%d" % s, s, s + 1, rng.randint(1, 32) * 1024, []))
    return rows


def gen_random(n, rng):
    t = max(8, n // 4)
    rows = []
    for i in range(n):
        first = rng.randrange(t)
        last = min(t + 1, first + 2 + rng.randrange(t // 2))
        gaps, cur = [], first + 1
        for _ in range(rng.randrange(4)):
            if cur + 1 >= last - 1:
                break
            lo = rng.randrange(cur, last - 1)
            hi = rng.randrange(lo + 1, last)
            if hi >= last:
                break
            gaps.append((lo, hi))
            cur = hi + 1
        rows.append(("r%d" % i, first, last, rng.randint(1, 4096), gaps))
    return rows


def write(path, rows, with_gaps):
    with open(path, "w") as f:
        f.write("id,lower,upper,size" + (",gaps\n" if with_gaps else "\n"))
        for r in rows:
            line = "%s,%d,%d,%d" % r[:4]
            if with_gaps:
                line += "," + " ".join("%d-%d" % g for g in r[4])
            f.write(line + "\n")


def plan(nnmem, path):
    out = subprocess.run([nnmem, "plan", path, "--json"], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)


def main():
    argv = sys.argv[1:]
    csv_path = None
    if "--csv" in argv:
        i = argv.index("--csv")
        csv_path = argv[i + 1]
        del argv[i:i + 2]
    args = argv
    if not args:
        print(__doc__)
        return 1
    nnmem, kinds = args[0], args[1:] or ["train:200", "train:2000",
                                         "random:1000", "random:10000"]
    hdr = ("problem", "seed", "buffers", "gapped", "height_gaps", "bound_gaps",
           "ratio", "height_hull", "bound_hull", "ms_gaps", "ms_hull")
    print("%-14s %5s %7s %7s %12s %12s %6s %12s %12s %8s %8s" % hdr)
    rows_out = []
    with tempfile.TemporaryDirectory() as d:
        for k in kinds:
            kind, n = k.split(":")
            seed = 1000 + int(n)
            rng = random.Random(seed)
            rows = (gen_train if kind == "train" else gen_random)(int(n), rng)
            pg, ph = os.path.join(d, "g.csv"), os.path.join(d, "h.csv")
            write(pg, rows, True)
            write(ph, rows, False)
            g, h = plan(nnmem, pg), plan(nnmem, ph)
            row = (k, seed, len(rows), sum(1 for r in rows if r[4]),
                   g["arena_height"], g["arena_lower_bound"],
                   "%.3f" % (g["arena_height"] / g["arena_lower_bound"]),
                   h["arena_height"], h["arena_lower_bound"],
                   "%.1f" % g["total_ms"], "%.1f" % h["total_ms"])
            rows_out.append(row)
            print("%-14s %5d %7d %7d %12d %12d %6s %12d %12d %8s %8s" % row)
    if csv_path:
        with open(csv_path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(hdr)
            w.writerows(rows_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
