#!/usr/bin/env python3
"""Writes the ONNX seed corpus of tests/fuzz/corpus/onnx/ (small models
encoded by hand in the protobuf wire format; no onnx package needed).

Run from the repository root: python3 tests/fuzz/make_onnx_seeds.py
"""
import os

from onnx_wire import (A_STRING, FLOAT, INT64, attr_float, attr_floats,
                       attr_graph, attr_int, attr_ints, attr_str, attr_tensor,
                       f_bytes, f_float, f_int, graph, node, value_info)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "onnx")


def tensor(name, elem, dims, ints=None, floats=None):
    out = b"".join(f_int(1, d) for d in dims) + f_int(2, elem)
    for v in ints or []:
        out += f_int(7, v)
    for v in floats or []:
        out += f_float(4, v)
    return out + f_bytes(8, name)


def model(g, opset=13):
    return (f_int(1, 8) + f_bytes(2, "fuzzseed") + f_bytes(7, g) +
            f_bytes(8, f_bytes(1, "") + f_int(2, opset)))


def cnn():
    w = tensor("w", FLOAT, [4, 3, 3, 3])
    nodes = [
        node("Conv", "conv", ["x", "w"], ["c"],
             [attr_ints("pads", [1, 1, 1, 1]), attr_ints("strides", [2, 2])]),
        node("Relu", "relu", ["c"], ["r"]),
        node("MaxPool", "pool", ["r"], ["p"],
             [attr_ints("kernel_shape", [2, 2]), attr_ints("strides", [2, 2])]),
        node("Flatten", "flat", ["p"], ["f"], [attr_int("axis", 1)]),
        node("Softmax", "sm", ["f"], ["y"], [attr_int("axis", 1)]),
    ]
    return model(graph("cnn", nodes, [value_info("x", FLOAT, ["batch", 3, 8, 8])],
                       [value_info("y", FLOAT, None)], [w]))


def shape_chain():
    nodes = [
        node("Shape", "shape", ["x"], ["s"]),
        node("Gather", "g0", ["s", "i0"], ["d0"], [attr_int("axis", 0)]),
        node("Unsqueeze", "u0", ["d0", "ax"], ["d0u"]),
        node("Concat", "cat", ["d0u", "m1"], ["target"], [attr_int("axis", 0)]),
        node("Reshape", "reshape", ["x", "target"], ["r"]),
        node("MatMul", "mm", ["r", "w"], ["m"]),
        node("Add", "add", ["m", "b"], ["y"]),
    ]
    inits = [tensor("i0", INT64, [], ints=[0]), tensor("ax", INT64, [1], ints=[0]),
             tensor("m1", INT64, [1], ints=[-1]), tensor("w", FLOAT, [24, 5]),
             tensor("b", FLOAT, [5])]
    return model(graph("chain", nodes, [value_info("x", FLOAT, ["N", 2, 3, 4])],
                       [value_info("y", FLOAT, None)], inits))


def control():
    then_g = graph("then", [node("Relu", "tr", ["x"], ["t"])], [],
                   [value_info("t", FLOAT, None)])
    else_g = graph("else", [node("Neg", "en", ["x"], ["e"])], [],
                   [value_info("e", FLOAT, None)])
    body = graph("body", [node("Add", "ba", ["v", "x"], ["v2"]),
                          node("Identity", "bc", ["cond"], ["cond2"])],
                 [value_info("it", INT64, []), value_info("cond", 9, []),
                  value_info("v", FLOAT, None)],
                 [value_info("cond2", 9, []), value_info("v2", FLOAT, None)])
    nodes = [
        node("ReduceSum", "rs", ["x"], ["s"], [attr_int("keepdims", 0)]),
        node("Greater", "gt", ["s", "zero"], ["c"]),
        node("If", "if", ["c"], ["y"],
             [attr_graph("then_branch", then_g), attr_graph("else_branch", else_g)]),
        node("Loop", "loop", ["trip", "", "y"], ["z"], [attr_graph("body", body)]),
    ]
    inits = [tensor("zero", FLOAT, [], floats=[0.0]),
             tensor("trip", INT64, [], ints=[3])]
    return model(graph("ctl", nodes, [value_info("x", FLOAT, [2, "seq"])],
                       [value_info("z", FLOAT, None)], inits))


def misc():
    nodes = [
        node("Constant", "k", [], ["shp"],
             [attr_tensor("value", tensor("", INT64, [3], ints=[2, 1, 4]))]),
        node("Expand", "ex", ["x", "shp"], ["e"]),
        node("Transpose", "tp", ["e"], ["t"], [attr_ints("perm", [2, 0, 1])]),
        node("Slice", "sl", ["t", "st", "en", "ax"], ["s"]),
        node("Split", "sp", ["s"], ["a", "b"], [attr_int("axis", 2)]),
        node("Concat", "cc", ["b", "a"], ["c"], [attr_int("axis", 2)]),
        node("LayerNormalization", "ln", ["c", "g", "bb"], ["y"],
             [attr_int("axis", -1), attr_float("epsilon", 1e-5)]),
        node("TopK", "tk", ["y", "k"], ["tv", "ti"], [attr_int("axis", -1)]),
        node("NonZero", "nz", ["ti"], ["nzo"]),
    ]
    inits = [tensor("st", INT64, [1], ints=[1]), tensor("en", INT64, [1], ints=[4]),
             tensor("ax", INT64, [1], ints=[0]), tensor("g", FLOAT, [2]),
             tensor("bb", FLOAT, [2]), tensor("k", INT64, [1], ints=[1])]
    return model(graph("misc", nodes, [value_info("x", FLOAT, [1, 3, 1])],
                       [value_info("tv", FLOAT, None), value_info("nzo", INT64, None)],
                       inits), opset=17)


def zoo():
    """One node per operator family on one input, so that mutating an
    attribute value reaches each inference function."""
    x = value_info("x", FLOAT, [1, 4, 6, 6])
    nodes = [
        node("Split", "split", ["x"], ["s0", "s1"],
             [attr_int("axis", 1), attr_ints("split", [1, 3])]),
        node("GatherND", "gnd", ["x", "gi"], ["gn"], [attr_int("batch_dims", 0)]),
        node("Pad", "pad", ["x", "pads"], ["pd"]),
        node("MaxPool", "mp", ["x"], ["mpo"],
             [attr_ints("kernel_shape", [2, 2]), attr_ints("strides", [2, 2]),
              attr_ints("pads", [1, 1, 1, 1]), attr_int("ceil_mode", 1)]),
        node("ConvTranspose", "ct", ["x", "wt"], ["cto"],
             [attr_ints("strides", [2, 2]), attr_ints("output_padding", [1, 1])]),
        node("MaxUnpool", "mu", ["mpo", "mpi"], ["muo"],
             [attr_ints("kernel_shape", [2, 2]), attr_ints("strides", [2, 2])]),
        node("Einsum", "es", ["x"], ["eso"],
             [f_bytes(1, "equation") + f_bytes(4, "...ij->...ji") + f_int(20, A_STRING)]),
        node("TopK", "tk", ["x", "k"], ["tkv", "tki"], [attr_int("axis", -1)]),
        node("DepthToSpace", "d2s", ["x"], ["d2so"], [attr_int("blocksize", 2)]),
        node("Reshape", "rs", ["x", "shape"], ["rso"]),
        node("Resize", "rz", ["x", "", "scales"], ["rzo"]),
        node("Tile", "tl", ["x", "reps"], ["tlo"]),
        node("Range", "rg", ["r0", "r1", "r2"], ["rgo"]),
        node("OneHot", "oh", ["gi", "depth", "ohv"], ["oho"]),
        node("ReduceMean", "rm", ["x"], ["rmo"], [attr_ints("axes", [2, 3])]),
        node("Gemm", "gm", ["fx", "gw"], ["gmo"], [attr_int("transB", 1)]),
        node("Flatten", "fl", ["x"], ["fx"]),
        node("Squeeze", "sq", ["rmo", "sqa"], ["sqo"]),
        node("Unsqueeze", "us", ["sqo", "sqa"], ["uso"]),
        node("Slice", "sl", ["x", "st", "en", "sa", "ss"], ["slo"]),
        node("DFT", "dft", ["xr"], ["dfo"], [attr_int("axis", 1), attr_int("onesided", 1)]),
        node("LSTM", "lstm", ["seq", "lw", "lr"], ["ly", "lh", "lc"],
             [attr_int("hidden_size", 3)]),
    ]
    inits = [
        tensor("gi", INT64, [2, 1], ints=[0, 0]),
        tensor("pads", INT64, [8], ints=[0, 0, 1, 1, 0, 0, 1, 1]),
        tensor("wt", FLOAT, [4, 2, 3, 3]),
        tensor("mpi", INT64, [1, 4, 4, 4]),
        tensor("k", INT64, [1], ints=[2]),
        tensor("shape", INT64, [3], ints=[0, -1, 12]),
        tensor("scales", FLOAT, [4], floats=[1, 1, 2, 0.5]),
        tensor("reps", INT64, [4], ints=[1, 2, 1, 1]),
        tensor("r0", INT64, [], ints=[0]), tensor("r1", INT64, [], ints=[10]),
        tensor("r2", INT64, [], ints=[3]), tensor("depth", INT64, [], ints=[5]),
        tensor("ohv", FLOAT, [2], floats=[0, 1]),
        tensor("gw", FLOAT, [7, 144]), tensor("sqa", INT64, [1], ints=[2]),
        tensor("st", INT64, [2], ints=[1, -1]), tensor("en", INT64, [2], ints=[3, -7]),
        tensor("sa", INT64, [2], ints=[1, 3]), tensor("ss", INT64, [2], ints=[1, -2]),
        tensor("lw", FLOAT, [1, 12, 5]), tensor("lr", FLOAT, [1, 12, 3]),
    ]
    ins = [x, value_info("xr", FLOAT, [2, 8, 1]), value_info("seq", FLOAT, ["seq", 2, 5])]
    outs = [value_info(n, FLOAT, None) for n in
            ["s0", "s1", "gn", "pd", "cto", "muo", "eso", "tkv", "d2so", "rso", "rzo",
             "tlo", "rgo", "oho", "gmo", "uso", "slo", "dfo", "ly"]]
    return model(graph("zoo", nodes, ins, outs, inits), opset=17)


def legacy():
    """The experimental operators of the early opsets at opset 8: a
    style-transfer chain (ImageScaler, Upsample with the `scales`
    attribute, Crop) and the fills, GRUUnit and DynamicSlice; plus a string
    input, TfIdfVectorizer on it and a data-dependent NonZero (upper
    bound)."""
    nodes = [
        node("ImageScaler", "is", ["x"], ["a"],
             [attr_float("scale", 0.5), attr_floats("bias", [1, 2, 3])]),
        node("Conv", "conv", ["a", "w"], ["c"], [attr_ints("pads", [1, 1, 1, 1])]),
        node("Upsample", "up", ["c"], ["u"],
             [attr_floats("scales", [1, 1, 2, 2]), attr_str("mode", "nearest")]),
        node("Crop", "crop", ["u"], ["cr"],
             [attr_ints("border", [1, 2, 1, 2]), attr_ints("scale", [4, 6])]),
        node("Affine", "af", ["cr"], ["af"], [attr_float("alpha", 2.0)]),
        node("ScaledTanh", "st", ["af"], ["sto"], [attr_float("beta", 0.5)]),
        node("ParametricSoftplus", "ps", ["sto"], ["pso"]),
        node("Scale", "sc", ["pso"], ["y"], [attr_float("scale", 3.0)]),
        node("Shape", "shape", ["x"], ["sx"]),
        node("ConstantFill", "cf", ["sx"], ["cfo"],
             [attr_int("input_as_shape", 1), attr_ints("extra_shape", [2]),
              attr_int("dtype", 7), attr_float("value", 1.0)]),
        node("GivenTensorFill", "gf", [], ["gfo"],
             [attr_ints("shape", [2, 2]), attr_floats("values", [1, 2, 3, 4])]),
        node("GRUUnit", "gru", ["h", "g", "sl", "t"], ["ho"]),
        node("DynamicSlice", "ds", ["x", "s0", "s1", "s2"], ["dso"]),
        node("MeanVarianceNormalization", "mvn", ["dso"], ["mvo"],
             [attr_int("across_channels", 1)]),
        node("NonZero", "nz", ["x"], ["nzo"]),
        node("Identity", "sid", ["strs"], ["stro"]),
        node("TfIdfVectorizer", "tfidf", ["strs"], ["tfo"],
             [attr_str("mode", "TFIDF"), attr_int("min_gram_length", 1),
              attr_int("max_gram_length", 2), attr_int("max_skip_count", 1),
              attr_ints("ngram_counts", [0, 2]), attr_ints("ngram_indexes", [0, 1, 2]),
              attr_ints("pool_int64s", [3, 4, 3, 4])]),
    ]
    inits = [tensor("w", FLOAT, [4, 3, 3, 3]), tensor("s0", INT64, [1], ints=[1]),
             tensor("s1", INT64, [1], ints=[3]), tensor("s2", INT64, [1], ints=[1])]
    ins = [value_info("x", FLOAT, [1, 3, 4, 4]), value_info("h", FLOAT, [1, 2, 3]),
           value_info("g", FLOAT, [1, 2, 9]), value_info("sl", FLOAT, [2]),
           value_info("t", FLOAT, [1]), value_info("strs", 8, [3])]
    outs = [value_info(n, FLOAT, None) for n in ["y", "ho", "mvo", "gfo"]]
    outs += [value_info("cfo", INT64, None), value_info("nzo", INT64, None),
             value_info("stro", 8, None), value_info("tfo", FLOAT, None)]
    return model(graph("legacy", nodes, ins, outs, inits), opset=8)


def legacy_opset1():
    """Upsample of opset 1 (height_scale / width_scale, bilinear)."""
    n = node("Upsample", "up", ["x"], ["y"],
             [attr_float("height_scale", 2.0), attr_float("width_scale", 3.0),
              attr_str("mode", "bilinear")])
    return model(graph("up1", [n], [value_info("x", FLOAT, [1, 2, 3, 3])],
                       [value_info("y", FLOAT, None)]), opset=1)


def regress_split():
    """Split into equal parts of a 2^63 - 1 long axis (signed overflow,
    found by the attribute sweep)."""
    n = node("Split", "split", ["x"], ["a", "b"], [attr_int("axis", 0)])
    return model(graph("split", [n], [value_info("x", FLOAT, [(1 << 63) - 1])],
                       [value_info("a", FLOAT, None)]), opset=13)


def slice_views():
    """Slices with constant parameters that the importer records as one-axis
    restrictions (liveness views): a channel cut, a second cut of the same
    tensor, negative starts and axes, a whole-tensor cut, and ones it must
    not record (a reversed step, two axes cut, the last axis)."""
    ident = [attr_ints("perm", [0, 1, 2, 3])]
    nodes = [
        node("Transpose", "tp", ["x"], ["t"], ident),
        node("Slice", "ch", ["t", "s2", "s5", "a1"], ["c"]),
        node("Slice", "ch2", ["t", "sm4", "smax", "am3"], ["c2"]),
        node("Slice", "whole", ["t", "s0", "smax", "a1"], ["w"]),
        node("Slice", "rev", ["t", "sm1", "smin", "a1", "sm1"], ["r"]),
        node("Slice", "two", ["t", "s11", "s33", "a12"], ["u"]),
        node("Slice", "last", ["t", "s0", "s2", "a3"], ["l"]),
        node("Transpose", "o1", ["c"], ["y1"], ident),
        node("Transpose", "o2", ["c2"], ["y2"], ident),
        node("Transpose", "o3", ["w"], ["y3"], ident),
        node("Transpose", "o4", ["r"], ["y4"], ident),
        node("Transpose", "o5", ["u"], ["y5"], ident),
        node("Transpose", "o6", ["l"], ["y6"], ident),
    ]
    i64 = lambda n, v: tensor(n, INT64, [len(v)], ints=v)
    inits = [i64("s2", [2]), i64("s5", [5]), i64("a1", [1]), i64("sm4", [-4]),
             i64("smax", [(1 << 63) - 1]), i64("am3", [-3]), i64("s0", [0]),
             i64("sm1", [-1]), i64("smin", [-(1 << 63)]), i64("s11", [1, 1]),
             i64("s33", [3, 3]), i64("a12", [1, 2]), i64("a3", [3])]
    outs = [value_info("y%d" % k, FLOAT, None) for k in range(1, 7)]
    return model(graph("slices", nodes, [value_info("x", FLOAT, [1, 6, 4, 4])],
                       outs, inits), opset=13)


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in [("cnn.onnx", cnn()), ("shape_chain.onnx", shape_chain()),
                       ("control.onnx", control()), ("misc.onnx", misc()),
                       ("zoo.onnx", zoo()), ("legacy.onnx", legacy()),
                       ("legacy_opset1.onnx", legacy_opset1()),
                       ("regress-split-equal-parts-overflow.onnx", regress_split()),
                       ("slice_views.onnx", slice_views())]:
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
