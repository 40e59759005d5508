#!/usr/bin/env python3
"""Attribute-value sweep for the ONNX importer: a structure-aware complement
to libFuzzer, whose byte mutations rarely keep a protobuf valid while
changing one number in it.

For each input model, every varint of the protobuf (attribute ints, dims,
types, opsets, enum values...) is replaced, one at a time, by each of a few
extreme values (0, 1, 2^31, 2^63 - 1, -1, -2^63, ...), and every 8-byte
chunk of short raw data fields by extreme int64 values; nested messages are
re-encoded so lengths stay right. The variants are written to OUTDIR; run
the harness over them:

  python3 tests/fuzz/sweep_onnx.py OUTDIR tests/fuzz/corpus/onnx/*.onnx
  build-fuzz/tests/fuzz/fuzz_onnx -runs=0 OUTDIR

`--pairs N` writes instead N variants per model with two random varints
changed at once (fixed random seed).

Algorithm: parse the wire format recursively (a length-delimited field that
parses as a message is treated as one, else as bytes), enumerate the paths
to varint leaves, and serialize a copy with one leaf replaced.
O(leaves x values) variants of O(model size) each.
"""
import copy
import os
import random
import struct
import sys

from onnx_wire import varint  # the one protobuf encoder of these scripts

EXTREMES = [0, 1, 2, 3, 17, 64, 1 << 31, (1 << 32) + 1, 1 << 62,
            (1 << 63) - 1, 1 << 63, (1 << 64) - (1 << 31), (1 << 64) - 2,
            (1 << 64) - 1]
RAW_EXTREMES = [0, -1, -2, 3, 1 << 31, 1 << 40, (1 << 63) - 1, -(1 << 63)]


def read_varint(b, i):
    r = s = 0
    while True:
        if i >= len(b) or s > 63:
            raise ValueError("bad varint")
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return r, i


def parse(b, depth=0):
    """[(field, wire type, value)]; value: int, bytes or a nested list."""
    i, out = 0, []
    while i < len(b):
        key, i = read_varint(b, i)
        field, wt = key >> 3, key & 7
        if field == 0:
            raise ValueError("field 0")
        if wt == 0:
            v, i = read_varint(b, i)
        elif wt == 2:
            n, i = read_varint(b, i)
            if i + n > len(b):
                raise ValueError("short")
            v = b[i:i + n]
            i += n
            if depth < 20 and n:
                try:
                    v = parse(v, depth + 1)
                except ValueError:
                    pass
        elif wt in (1, 5):
            n = 8 if wt == 1 else 4
            v = b[i:i + n]
            i += n
        else:
            raise ValueError("wire type")
        out.append((field, wt, v))
    return out


def serialize(msg):
    out = bytearray()
    for field, wt, v in msg:
        out += varint(field << 3 | wt)
        if wt == 0:
            out += varint(v)
        elif wt == 2:
            d = serialize(v) if isinstance(v, list) else v
            out += varint(len(d)) + d
        else:
            out += v
    return bytes(out)


def leaves(msg, path=()):
    """(path, kind, value) of varints and short raw int64 byte fields."""
    for i, (_, wt, v) in enumerate(msg):
        if wt == 0:
            yield path + (i,), "varint", v
        elif wt == 2 and isinstance(v, list):
            yield from leaves(v, path + (i,))
        elif wt == 2 and 0 < len(v) <= 64 and len(v) % 8 == 0:
            yield path + (i,), "raw", v


def replaced(msg, path, value):
    msg = copy.deepcopy(msg)
    cur = msg
    for p in path[:-1]:
        cur = cur[p][2]
    field, wt, _ = cur[path[-1]]
    cur[path[-1]] = (field, wt, value)
    return serialize(msg)


def variants(msg):
    for path, kind, v in leaves(msg):
        if kind == "varint":
            for x in EXTREMES:
                yield replaced(msg, path, x)
            continue
        for k in range(len(v) // 8):
            for x in RAW_EXTREMES:
                b = bytearray(v)
                b[8 * k:8 * k + 8] = struct.pack("<q", x)
                yield replaced(msg, path, bytes(b))


def pair_variants(msg, count, rng):
    """`count` variants with two random varints set to random extremes (or
    small values)."""
    paths = [p for p, kind, _ in leaves(msg) if kind == "varint"]
    for _ in range(count if len(paths) > 1 else 0):
        m = copy.deepcopy(msg)
        for path in rng.sample(paths, 2):
            cur = m
            for p in path[:-1]:
                cur = cur[p][2]
            field, wt, _ = cur[path[-1]]
            cur[path[-1]] = (field, wt,
                             rng.choice(EXTREMES + [rng.randrange(300)]))
        yield serialize(m)


def main():
    args = sys.argv[1:]
    pairs = 0
    if len(args) > 1 and args[0] == "--pairs":
        pairs = int(args[1])
        args = args[2:]
    if len(args) < 2:
        sys.exit("usage: sweep_onnx.py [--pairs N] OUTDIR MODEL.onnx...")
    outdir = args[0]
    os.makedirs(outdir, exist_ok=True)
    rng = random.Random(7)  # fixed seed: the same variants every run
    total = 0
    for src in args[1:]:
        data = open(src, "rb").read()
        msg = parse(data)
        assert serialize(msg) == data, src
        base = os.path.basename(src)
        gen = pair_variants(msg, pairs, rng) if pairs else variants(msg)
        for n, b in enumerate(gen):
            with open(os.path.join(outdir, "%s.%d" % (base, n)), "wb") as f:
                f.write(b)
            total += 1
    print("%d variants in %s" % (total, outdir))


if __name__ == "__main__":
    main()
