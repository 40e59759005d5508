#!/usr/bin/env python3
"""Operator order: nnmem's memory order against HMCOS (Wang et al., DAC 2022).

HMCOS reads ONNX; nnmem's generator writes JSON graphs (docs/graph-format.md).
This script converts, runs both schedulers, and feeds HMCOS's order back into
nnmem so both orders are measured under both memory models. It neither builds
nor contains HMCOS: pass the path of an `op_sched` binary built elsewhere that
prints, on stdout, `HMCOS_SECONDS s`, `HMCOS_PEAK_BYTES n` and one
`HMCOS_OP name` line per op of its schedule (HMCOS's own op_sched prints the
peak in KiB through glog and not the order; add those printf lines to yours).

Subcommands:
  onnx G.json OUT.onnx          the graph as ONNX: same tensors (value_info for
                                every activation, exact shapes and dtypes), same
                                ops and names; weights become initializers
                                holding dims only (no data: sizes are all a
                                scheduler reads). Not an executable model.
  hmcos-model G.json OUT.json   the graph with `inplace` kept only where HMCOS's
                                memory model runs an op in place (an element-wise
                                or reinterpreting op type; the first non-weight
                                input of the output's size; when it dies there)
                                and no `view`: nnmem then counts exactly the
                                bytes HMCOS's EstimatePeak counts.
  reorder G.json ORDER OUT.json the graph with its ops in ORDER (one op name a
                                line): plan it with `--order file`.
  table BUILD OP_SCHED [--sizes 16,24,32] [--seeds 1-5] [--timeout 150]
        [--mem-gib 8] [--work DIR] [--csv F]
                                the comparison table (README "Operator order").

Memory models. Both count activation bytes only (the generated graphs have no
weights; HMCOS skips initializers), graph inputs from step 0 to their last
reader, outputs to the end, and an op's inputs and outputs together while it
runs. They differ in what runs in place: nnmem follows the graph's `inplace`
field (RandWire: Relu, BatchNormalization and Sum), HMCOS only element-wise
op types (Relu, Add, ...; not BatchNormalization, not Sum). So the table shows
each order under both models: "ours" is the graph as generated, "HMCOS model"
is the `hmcos-model` rewrite, on which nnmem's peak of HMCOS's order must equal
the peak HMCOS reports (the script checks it). Not a test: asserts nothing
about time."""
import csv
import json
import os
import resource
import subprocess
import sys
import time

# HMCOS's element-wise and reinterpreting op types (src/util/op.cpp there):
# its memory model lets such an op's output take over a same-sized dying input.
HMCOS_OVERLAP_TYPES = {
    "Abs", "Add", "And", "Neg", "Mul", "Exp", "Div", "Ceil", "Not",
    "LeakyRelu", "Elu", "Equal", "Floor", "Greater", "HardSigmoid", "Selu",
    "Less", "PRelu", "Log", "Or", "Reciprocal", "Pow", "Relu", "Sigmoid",
    "Softplus", "Softsign", "Sqrt", "Sub", "Tanh", "Xor", "Acos", "Asin",
    "Atan", "Cos", "Sin", "Tan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
    "Sign", "Erf", "Mod", "ThresholdedRelu", "BitShift", "Round", "Celu",
    "LessOrEqual", "GreaterOrEqual", "HardSwish", "Clip", "Squeeze",
    "Unsqueeze", "Reshape", "Flatten"}

DTYPE_SIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8,
              "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4,
              "uint32": 4, "int64": 8, "uint64": 8, "bool": 1}


def load(path):
    with open(path) as f:
        return json.load(f)


def save(g, path):
    with open(path, "w") as f:
        json.dump(g, f, indent=1)
        f.write("\n")


def tensor_bytes(t):
    if "bytes" in t:
        return t["bytes"]
    n = DTYPE_SIZE[t["dtype"].lower()]
    for d in t["shape"]:
        n *= d
    return n


def to_onnx(g, out_path):
    import onnx
    from onnx import TensorProto, helper
    elem = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16,
            "bfloat16": TensorProto.BFLOAT16, "float64": TensorProto.DOUBLE,
            "int8": TensorProto.INT8, "uint8": TensorProto.UINT8,
            "int16": TensorProto.INT16, "uint16": TensorProto.UINT16,
            "int32": TensorProto.INT32, "uint32": TensorProto.UINT32,
            "int64": TensorProto.INT64, "uint64": TensorProto.UINT64,
            "bool": TensorProto.BOOL}
    inputs, outputs, infos, inits = [], [], [], []
    for t in g["tensors"]:
        if "shape" not in t or "bytes" in t:
            # A byte count without a shape: one uint8 dim of that many bytes.
            dt, shape = TensorProto.UINT8, [tensor_bytes(t)]
        else:
            dt, shape = elem[t["dtype"].lower()], list(t["shape"])
        kind = t.get("kind", "activation")
        if kind in ("weight", "constant"):
            inits.append(helper.make_tensor(t["name"], dt, shape, vals=[]))
            continue
        vi = helper.make_tensor_value_info(t["name"], dt, shape)
        {"input": inputs, "output": outputs}.get(kind, infos).append(vi)
    nodes = [helper.make_node(op["type"], op["inputs"], op["outputs"],
                              name=op["name"]) for op in g["ops"]]
    graph = helper.make_graph(nodes, g.get("name", "graph"), inputs, outputs,
                              initializer=inits, value_info=infos)
    model = helper.make_model(graph, producer_name="nnmem bench/hmcos_compare.py")
    onnx.save_model(model, out_path)


def hmcos_model(g):
    """A copy of g whose in-place ops are exactly HMCOS's overlapping ops."""
    kinds = {t["name"]: t.get("kind", "activation") for t in g["tensors"]}
    size = {t["name"]: tensor_bytes(t) for t in g["tensors"]}
    h = json.loads(json.dumps(g))
    for op in h["ops"]:
        op.pop("inplace", None)
        op.pop("view", None)
        if op["type"] not in HMCOS_OVERLAP_TYPES or len(op["outputs"]) != 1:
            continue
        out = size[op["outputs"][0]]
        for i, name in enumerate(op["inputs"]):
            if kinds[name] not in ("weight", "constant") and size[name] == out:
                op["inplace"] = i  # the first same-sized input only
                break
    return h


def reorder(g, names):
    by_name = {op["name"]: op for op in g["ops"]}
    if sorted(names) != sorted(by_name):
        raise SystemExit("order does not name every op of the graph once")
    h = dict(g)
    h["ops"] = [by_name[n] for n in names]
    return h


def nnmem_plan(nnmem, graph, order):
    """nnmem plan --json; returns (report, CPU seconds of the whole run)."""
    rc, out, err, _, cpu, _ = run_measured(
        [nnmem, "plan", graph, "--order", order, "--json", "--quiet",
         "--no-concat-into-output"])
    if rc != 0:
        raise SystemExit("nnmem plan %s failed: %s" % (graph, err))
    return json.loads(out), cpu


def run_hmcos(op_sched, onnx_path, work, timeout, mem_gib, tries=3):
    """HMCOS's op_sched (as published) crashes with SIGSEGV when a graph
    input is live at the peak (HierarchicalSchedule looks up the producing
    sequence of every value live at the peak; an input has none), and
    whether it is depends on the run (pointer-ordered sets): a crashed run is
    retried up to `tries` times and the result records how many runs it
    took. A one-line guard there (skip values without a producer) fixes it."""
    for t in range(1, tries + 1):
        res = run_hmcos_once(op_sched, onnx_path, work, timeout, mem_gib)
        res["runs"] = t
        if res["status"] == "ok" or not res["status"].startswith("failed rc -11"):
            return res
    return res


def run_measured(cmd, timeout=None, preexec_fn=None):
    """Runs cmd; returns (rc or None on timeout, stdout, stderr, wall seconds,
    CPU seconds, peak RSS in MiB) of that one child (os.wait4)."""
    import tempfile
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=fo, stderr=fe, preexec_fn=preexec_fn)
        rc = None
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                rc = os.waitstatus_to_exitcode(status)
                break
            if timeout is not None and time.monotonic() - t0 > timeout:
                p.kill()
                _, _, ru = os.wait4(p.pid, 0)
                break
            time.sleep(0.005)
        p.returncode = rc if rc is not None else -9
        wall = time.monotonic() - t0
        fo.seek(0)
        fe.seek(0)
        return (rc, fo.read().decode(errors="replace"),
                fe.read().decode(errors="replace"), wall,
                ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0)


def run_hmcos_once(op_sched, onnx_path, work, timeout, mem_gib):
    def limit():
        b = mem_gib << 30
        resource.setrlimit(resource.RLIMIT_AS, (b, b))
    rc, out, err, wall, cpu, rss = run_measured([op_sched, onnx_path, work],
                                                timeout, limit)
    res = {"wall": wall, "cpu": cpu, "rss_mib": rss, "order": []}
    if rc is None:
        res["status"] = "timeout (%d s)" % timeout
        return res
    for line in out.splitlines():
        key, _, val = line.partition(" ")
        if key == "HMCOS_SECONDS":
            res["seconds"] = float(val)
        elif key == "HMCOS_PEAK_BYTES":
            res["peak"] = int(val)
        elif key == "HMCOS_OP":
            res["order"].append(val)
    if rc != 0 or "peak" not in res:
        tail = (err.strip().splitlines() or ["?"])[-1]
        oom = "bad_alloc" in err or rc in (-6, -9)
        res["status"] = ("out of memory (%d GiB)" % mem_gib if oom else
                         "failed rc %d: %s" % (rc, tail[:80]))
        return res
    res["status"] = "ok"
    return res


def table(argv):
    build, op_sched = argv[0], argv[1]
    opt = dict(zip(argv[2::2], argv[3::2]))
    sizes = [int(s) for s in opt.get("--sizes", "16,24,32").split(",")]
    lo, hi = (int(x) for x in opt.get("--seeds", "1-5").split("-"))
    timeout = int(opt.get("--timeout", "150"))
    mem_gib = int(opt.get("--mem-gib", "8"))
    work = opt.get("--work", "hmcos-work")
    os.makedirs(work, exist_ok=True)
    nnmem = os.path.join(build, "nnmem")
    gen = os.path.join(build, "bench", "plan")
    cols = ("graph", "ops", "file_peak", "hmcos_status", "hmcos_peak_hmcos_model",
            "hmcos_peak_nnmem_check", "hmcos_peak_ours", "hmcos_s",
            "our_peak_ours", "our_s", "our_proven", "file_peak_hmcos_model",
            "our_peak_hmcos_model", "our_proven_hmcos_model", "hmcos_runs",
            "hmcos_cpu_s", "hmcos_rss_mib", "our_cpu_s")
    rows = []
    print(" ".join(cols))
    for n in sizes:
        for seed in range(lo, hi + 1):
            name = "randwire_%d_%d" % (n, seed)
            gj = os.path.join(work, name + ".json")
            subprocess.run([gen, "--gen", "randwire:%d:%d" % (n, seed),
                            "--out", gj], check=True, capture_output=True)
            g = load(gj)
            hj = os.path.join(work, name + ".hmcos_model.json")
            save(hmcos_model(g), hj)
            ox = os.path.join(work, name + ".onnx")
            to_onnx(g, ox)
            ours, our_cpu = nnmem_plan(nnmem, gj, "memory")
            oursh, _ = nnmem_plan(nnmem, hj, "memory")
            r = {"graph": "randwire:%d:%d" % (n, seed), "ops": len(g["ops"]),
                 "file_peak": ours["order"]["file_order_peak"],
                 "our_peak_ours": ours["order"]["peak"],
                 "our_s": round(ours["order"]["ms"] / 1000, 3),
                 "our_cpu_s": round(our_cpu, 3),
                 "our_proven": ours["order"]["optimal"],
                 "file_peak_hmcos_model": oursh["order"]["file_order_peak"],
                 "our_peak_hmcos_model": oursh["order"]["peak"],
                 "our_proven_hmcos_model": oursh["order"]["optimal"]}
            hm = run_hmcos(op_sched, ox, work, timeout, mem_gib)
            r["hmcos_status"] = hm["status"]
            r["hmcos_runs"] = hm.get("runs", 1)
            r["hmcos_s"] = round(hm.get("seconds", hm["wall"]), 3)
            r["hmcos_cpu_s"] = round(hm["cpu"], 3)
            r["hmcos_rss_mib"] = round(hm["rss_mib"])
            if hm["status"] == "ok":
                r["hmcos_peak_hmcos_model"] = hm["peak"]
                order = os.path.join(work, name + ".hmcos_order.txt")
                with open(order, "w") as f:
                    f.write("\n".join(hm["order"]) + "\n")
                for src, key in ((g, "hmcos_peak_ours"),
                                 (load(hj), "hmcos_peak_nnmem_check")):
                    rj = os.path.join(work, name + "." + key + ".json")
                    save(reorder(src, hm["order"]), rj)
                    p, _ = nnmem_plan(nnmem, rj, "file")
                    r[key] = p["peak_live_bytes"]
                if r["hmcos_peak_nnmem_check"] != hm["peak"]:
                    print("warning: %s: nnmem counts %d B for HMCOS's order "
                          "under HMCOS's model, HMCOS reports %d B" %
                          (name, r["hmcos_peak_nnmem_check"], hm["peak"]),
                          file=sys.stderr)
            rows.append(r)
            print(" ".join(str(r.get(c, "")) for c in cols), flush=True)
    if "--csv" in opt:
        with open(opt["--csv"], "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=cols)
            w.writeheader()
            w.writerows(rows)
    return 0


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 1
    cmd = argv[0]
    if cmd == "onnx" and len(argv) == 3:
        to_onnx(load(argv[1]), argv[2])
    elif cmd == "hmcos-model" and len(argv) == 3:
        save(hmcos_model(load(argv[1])), argv[2])
    elif cmd == "reorder" and len(argv) == 4:
        with open(argv[2]) as f:
            names = [ln.strip() for ln in f if ln.strip()]
        save(reorder(load(argv[1]), names), argv[3])
    elif cmd == "table" and len(argv) >= 3:
        return table(argv[1:])
    else:
        print(__doc__)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
