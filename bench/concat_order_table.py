#!/usr/bin/env python3
"""Per-model table: activation bytes saved by concat-into-output and by the
memory-aware operator order, and the arena height against its bound.

For each ONNX model in a folder, runs `nnmem plan MODEL --json` four ways:

  A  file order, --no-concat-into-output   (no sub-buffers)
  B  file order, concat-into-output        (the default)
  C  --order memory, concat-into-output    (the search may keep some
                                            Concat/Split ops out: "kept")
  D  --order memory, --no-concat-into-output

and prints, per model, the live activation peak (the arena lower bound,
max over steps of live bytes) of each, the bytes saved by concat-into-output
(A - B) and by the order (B - C), and height / bound of B and C (the
planner's arena height over that bound), with B's sub-buffer bytes (the
bytes concat-into-output stops allocating on their own, whether or not at
the peak step). Writes the rows as CSV too.

Usage: bench/concat_order_table.py NNMEM_BINARY MODELS_DIR [CSV_OUT]
Asserts nothing; exits 1 only when a run fails.
"""
import csv
import json
import os
import subprocess
import sys


def run(nnmem, model, *flags):
    out = subprocess.run([nnmem, "plan", model, "--json", *flags],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{model} {' '.join(flags)}: exit {out.returncode}: "
                 f"{out.stderr.strip()}")
    return json.loads(out.stdout)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    nnmem, folder = sys.argv[1], sys.argv[2]
    csv_out = sys.argv[3] if len(sys.argv) > 3 else None
    names = sorted(f for f in os.listdir(folder) if f.endswith(".onnx"))
    rows = []
    hdr = ("model", "ops", "sub_buffer_bytes", "A_no_concat", "B_concat",
           "saved_concat",
           "C_memory", "saved_order", "D_memory_no_concat", "proven",
           "kept_out", "B_height_over_bound", "C_height_over_bound")
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    worst = 0.0
    for name in names:
        m = os.path.join(folder, name)
        a = run(nnmem, m, "--no-concat-into-output")
        b = run(nnmem, m)
        c = run(nnmem, m, "--order", "memory")
        d = run(nnmem, m, "--order", "memory", "--no-concat-into-output")
        ra = a["arena_lower_bound"]
        rb = b["arena_lower_bound"]
        rc = c["arena_lower_bound"]
        hb = b["arena_height"] / rb if rb else 1.0
        hc = c["arena_height"] / rc if rc else 1.0
        worst = max(worst, hb, hc)
        row = (name[:-5], b["ops"], b["sub_buffer_bytes"], ra, rb, ra - rb,
               rc, rb - rc,
               d["arena_lower_bound"], "yes" if c["order"]["optimal"] else
               "no", c["order"]["concat_kept_out"], f"{hb:.4f}", f"{hc:.4f}")
        rows.append(row)
        print("| " + " | ".join(f"{v:,}" if isinstance(v, int) else str(v)
                                for v in row) + " |")
    print(f"worst height / bound: {worst:.4f}")
    if csv_out:
        with open(csv_out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(hdr)
            w.writerows(rows)


if __name__ == "__main__":
    main()
