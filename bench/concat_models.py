#!/usr/bin/env python3
"""Concat-into-output on the shared ONNX models and the built-in models.

For each model: `nnmem plan --json` with concat-into-output on (default) and
off (--no-concat-into-output); prints arena height, arena lower bound,
height/bound, sub-buffers and their bytes, and the arena bytes saved
(height off - height on). Writes the table as CSV to the path given by
--csv (default: none). Usage:
  bench/concat_models.py BUILD/nnmem MODELS_DIR [--csv out.csv]
Not a test: it asserts nothing."""
import csv
import glob
import json
import os
import subprocess
import sys


def plan(nnmem, args):
    out = subprocess.run([nnmem, "plan", "--json", "--quiet"] + args,
                         capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1:]
    return json.loads(out.stdout), None


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 1
    nnmem, models = sys.argv[1], sys.argv[2]
    csv_path = sys.argv[sys.argv.index("--csv") + 1] if "--csv" in sys.argv else None
    inputs = [[m] for m in sorted(glob.glob(os.path.join(models, "*.onnx")))]
    inputs += [["--model", m] for m in ("resnet50", "mobilenetv2", "bert-base")]
    rows = []
    hdr = ("model", "height_on", "bound_on", "ratio_on", "height_off",
           "bound_off", "sub_buffers", "sub_bytes", "saved_height")
    print("%-44s %12s %12s %7s %12s %12s %5s %11s %11s" % hdr)
    for args in inputs:
        name = os.path.basename(args[-1])
        on, err = plan(nnmem, args)
        off, err2 = plan(nnmem, args + ["--no-concat-into-output"])
        if on is None or off is None:
            print("%-44s failed: %s" % (name, err or err2))
            continue
        h, lb = on["arena_height"], on["arena_lower_bound"]
        row = (name, h, lb, "%.4f" % (h / lb if lb else 1.0),
               off["arena_height"], off["arena_lower_bound"],
               on.get("sub_buffers", 0), on.get("sub_buffer_bytes", 0),
               off["arena_height"] - h)
        rows.append(row)
        print("%-44s %12d %12d %7s %12d %12d %5d %11d %11d" % row)
    if csv_path:
        with open(csv_path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(hdr)
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
