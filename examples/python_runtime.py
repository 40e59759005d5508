#!/usr/bin/env python3
"""python_runtime.py - nnmem's run-time side from Python, end to end:

  1. plan the built-in ResNet-50 (its plan and its planned
     memory_profile.json), then run its buffers through a pool with the
     run-time profiler on, and compare the measured profile with the
     planned one (nnmem.diff);
  2. record that run's allocations on the general-purpose allocator, plan
     the recording, and serve a second run from the plan (nnmem.Planned);
  3. leave one block live on purpose and let the leak records name the
     Python line that allocated it.

    python3 examples/python_runtime.py [WORKDIR]

Needs the nnmem package importable (pip install ./python, or PYTHONPATH=
python with NNMEM_CLI / NNMEM_LIBRARY naming a build). Writes its files in
WORKDIR (default: a temporary folder, removed at the end)."""
import json
import sys
import tempfile
from pathlib import Path

import nnmem


def run_buffers(alloc, free, step, bufs, steps):
    """One 'inference' over a plan's buffers: a buffer lives over
    [first, last), so it is freed at the end of step last - 1."""
    live = {}
    for s in range(steps):
        for b in bufs:
            if b["first"] == s:
                live[b["id"]] = alloc(b["size"])
        for b in bufs:
            if b["last"] == s + 1:
                free(live.pop(b["id"]))
        step()


def main(work: Path) -> int:
    plan_file, planned = work / "plan.json", work / "planned.json"
    r = nnmem.plan(model="resnet50", out=plan_file,
                   extra_args=["--profile", str(planned)])
    plan = json.loads(plan_file.read_text())
    bufs = plan["buffers"]
    steps = max(b["last"] for b in bufs)
    print(f"plan: resnet50, {len(bufs)} buffers over {steps} steps, "
          f"arena {r.height} B (lower bound {r.lower_bound} B)")

    # 1. measured against planned
    with nnmem.Pool("tlsf", device="1GiB") as pool:
        with nnmem.Profiler(pool) as pr:
            with pr.tagged("weight"):
                pool.alloc(plan["weight_bytes"])
            run_buffers(pool.alloc, pool.free, pr.step, bufs, steps)
        pr.export(work / "measured.json")
    d = nnmem.diff(planned, work / "measured.json")
    keys = {k["key"]: k for k in d["keys"]}
    t = d["timeline"]
    print(f"profile: peak planned {keys['peak_memory']['a']} B, measured "
          f"{keys['peak_memory']['b']} B; {d['steps_compared']} steps "
          f"compared, largest deviation {t['max_deviation']} B")

    # 2. record, plan, serve
    with nnmem.Allocator() as al:
        rec = nnmem.Planned.record(al)
        run_buffers(rec.alloc, rec.free, rec.step, bufs, steps)
        rec.write_csv(work / "recorded.csv")
        rec.close()
        nnmem.plan(work / "recorded.csv", out=work / "next.plan.json")
        run = nnmem.Planned.load(al, work / "next.plan.json")
        run_buffers(run.alloc, run.free, run.step, bufs, steps)
        st = run.stats()
        run.close()
    print(f"served: {st['served']} of {st['allocs']} requests from the plan "
          f"(height {st['height']} B), {st['fallback']} by the allocator")

    # 3. a leak, named by its Python line
    with nnmem.Allocator() as al:
        al.leaks_enable("full", depth=0)
        cache = [al.alloc(4096) for _ in range(3)]
        for p in cache[1:]:
            al.free(p)
        sites = al.leaks_report("json")["sites"]
    for s in sites:
        print(f"leak: {s['bytes']} B in {s['blocks']} block(s) from "
              f"{Path(s['file']).name}:{s['line']}")
    return 0 if (t["max_deviation"] == 0 and st["fallback"] == 0 and
                 len(sites) == 1) else 1


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit(main(Path(sys.argv[1])))
    with tempfile.TemporaryDirectory() as tmp:
        sys.exit(main(Path(tmp)))
