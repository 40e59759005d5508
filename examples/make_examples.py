#!/usr/bin/env python3
"""Writes the generated sample inputs of examples/ (Python 3 standard
library only; deterministic: the same files on every run).

  problems/zero_slack.csv           a MiniMalloc-format problem whose optimum
  problems/zero_slack.solution.csv  is its capacity (1 MiB), and that optimum
  models/mnist_cnn.onnx             a small MNIST-like CNN, symbolic batch

Run from the repository root: python3 examples/make_examples.py

zero_slack: start from one rectangle, capacity (address) x time, and cut a
piece of it in two, across time or across addresses (a guillotine cut), until
there are N pieces. Each piece is a buffer: its time range is its lifetime,
its height its size, its bottom its offset. The pieces tile the rectangle, so
at every step the live bytes add up to exactly the capacity: the lower bound
equals the capacity, and the construction's offsets reach it, so the optimum
is the capacity and there is no slack at all for a planner to waste.

mnist_cnn: the layer shapes of the classic MNIST network (Conv 5x5 -> Relu ->
MaxPool -> Conv 5x5 -> Relu -> MaxPool -> Reshape -> MatMul -> Add), with a
symbolic batch dimension "batch" and the Shape -> Gather -> Unsqueeze ->
Concat -> Reshape chain a PyTorch export writes for a flatten. Weights are
pseudo-random numbers from a fixed seed (the model is for memory planning,
it recognises nothing). Encoded by hand in the protobuf wire format.
"""
import os
import random
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "fuzz"))
from onnx_wire import (FLOAT, INT64, attr_int, attr_ints, f_bytes,  # noqa: E402
                       f_int, graph, node, value_info)

# ---- zero-slack problem ----------------------------------------------------

SEED = 20241130
CAPACITY = 1 << 20  # bytes
STEPS = 1000        # time steps
BUFFERS = 300
QUANTUM = 64        # sizes and offsets are multiples of this


def guillotine(rng):
    """Pieces (t0, t1, a0, a1) tiling [0, STEPS) x [0, CAPACITY)."""
    pieces = [(0, STEPS, 0, CAPACITY)]
    while len(pieces) < BUFFERS:
        # Cut one of the larger pieces (by area, randomly among the top
        # half) so that sizes and lifetimes both spread over a wide range.
        pieces.sort(key=lambda p: (p[1] - p[0]) * (p[3] - p[2]), reverse=True)
        i = rng.randrange(max(1, len(pieces) // 2))
        t0, t1, a0, a1 = pieces[i]
        across_time = rng.random() < 0.5
        if t1 - t0 < 2:
            across_time = False
        if (a1 - a0) // QUANTUM < 2:
            across_time = True
        if across_time:
            if t1 - t0 < 2:
                continue
            t = rng.randrange(t0 + 1, t1)
            new = [(t0, t, a0, a1), (t, t1, a0, a1)]
        else:
            a = a0 + QUANTUM * rng.randrange(1, (a1 - a0) // QUANTUM)
            new = [(t0, t1, a0, a), (t0, t1, a, a1)]
        pieces[i:i + 1] = new
    pieces.sort()
    return pieces


def write_zero_slack():
    pieces = guillotine(random.Random(SEED))
    rows = [("b%d" % i, p) for i, p in enumerate(pieces)]
    with open(os.path.join(HERE, "problems", "zero_slack.csv"), "w") as f:
        f.write("id,lower,upper,size\n")
        for name, (t0, t1, a0, a1) in rows:
            f.write("%s,%d,%d,%d\n" % (name, t0, t1, a1 - a0))
    with open(os.path.join(HERE, "problems", "zero_slack.solution.csv"), "w") as f:
        f.write("id,lower,upper,size,offset\n")
        for name, (t0, t1, a0, a1) in rows:
            f.write("%s,%d,%d,%d,%d\n" % (name, t0, t1, a1 - a0, a0))


# ---- ONNX model (the encoder: tests/fuzz/onnx_wire.py) --------------------


def float_tensor(name, dims, rng, scale):
    n = 1
    for d in dims:
        n *= d
    raw = struct.pack("<%df" % n, *(rng.uniform(-scale, scale) for _ in range(n)))
    out = b"".join(f_int(1, d) for d in dims) + f_int(2, FLOAT)
    return out + f_bytes(8, name) + f_bytes(9, raw)


def int64_tensor(name, dims, values):
    out = b"".join(f_int(1, d) for d in dims) + f_int(2, INT64)
    return out + f_bytes(8, name) + f_bytes(9, struct.pack("<%dq" % len(values), *values))


def mnist_cnn():
    rng = random.Random(SEED)
    conv = [attr_ints("kernel_shape", [5, 5]), attr_ints("pads", [2, 2, 2, 2]),
            attr_ints("strides", [1, 1])]
    nodes = [
        node("Conv", "conv1", ["image", "conv1.w", "conv1.b"], ["conv1.out"], conv),
        node("Relu", "relu1", ["conv1.out"], ["relu1.out"]),
        node("MaxPool", "pool1", ["relu1.out"], ["pool1.out"],
             [attr_ints("kernel_shape", [2, 2]), attr_ints("strides", [2, 2])]),
        node("Conv", "conv2", ["pool1.out", "conv2.w", "conv2.b"], ["conv2.out"], conv),
        node("Relu", "relu2", ["conv2.out"], ["relu2.out"]),
        node("MaxPool", "pool2", ["relu2.out"], ["pool2.out"],
             [attr_ints("kernel_shape", [3, 3]), attr_ints("strides", [3, 3])]),
        node("Shape", "shape", ["pool2.out"], ["shape.out"]),
        node("Gather", "batch_dim", ["shape.out", "zero"], ["batch_dim.out"],
             [attr_int("axis", 0)]),
        node("Unsqueeze", "unsqueeze", ["batch_dim.out", "axes0"], ["unsqueeze.out"]),
        node("Concat", "flat_shape", ["unsqueeze.out", "features"], ["flat_shape.out"],
             [attr_int("axis", 0)]),
        node("Reshape", "flatten", ["pool2.out", "flat_shape.out"], ["flatten.out"]),
        node("MatMul", "fc", ["flatten.out", "fc.w"], ["fc.out"]),
        node("Add", "fc_bias", ["fc.out", "fc.b"], ["logits"]),
    ]
    inits = [
        float_tensor("conv1.w", [8, 1, 5, 5], rng, 0.2),
        float_tensor("conv1.b", [8], rng, 0.1),
        float_tensor("conv2.w", [16, 8, 5, 5], rng, 0.07),
        float_tensor("conv2.b", [16], rng, 0.1),
        float_tensor("fc.w", [256, 10], rng, 0.06),
        float_tensor("fc.b", [10], rng, 0.1),
        int64_tensor("zero", [], [0]),
        int64_tensor("axes0", [1], [0]),
        int64_tensor("features", [1], [256]),
    ]
    g = graph("mnist_cnn", nodes,
              [value_info("image", FLOAT, ["batch", 1, 28, 28])],
              [value_info("logits", FLOAT, ["batch", 10])], inits)
    opset = f_bytes(8, f_bytes(1, "") + f_int(2, 13))
    return (f_int(1, 7) + f_bytes(2, "make_examples.py") +
            f_bytes(3, "1.0") + f_bytes(7, g) + opset)


def main():
    os.makedirs(os.path.join(HERE, "problems"), exist_ok=True)
    os.makedirs(os.path.join(HERE, "models"), exist_ok=True)
    write_zero_slack()
    with open(os.path.join(HERE, "models", "mnist_cnn.onnx"), "wb") as f:
        f.write(mnist_cnn())


if __name__ == "__main__":
    main()
