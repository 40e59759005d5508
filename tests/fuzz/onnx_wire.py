"""ONNX models in the protobuf wire format, by hand (Python standard library
only): the encoder shared by tests/fuzz/make_onnx_seeds.py,
tests/fuzz/sweep_onnx.py and examples/make_examples.py (which imports it by
path). Field numbers are those of onnx.proto.
"""
import struct

FLOAT, INT64 = 1, 7  # TensorProto.DataType
A_FLOAT, A_INT, A_STRING, A_TENSOR, A_GRAPH, A_FLOATS, A_INTS = 1, 2, 3, 4, 5, 6, 7


def varint(v):
    v &= (1 << 64) - 1  # negative int64 as two's complement, 10 bytes
    out = bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        if v:
            out.append(c | 0x80)
        else:
            out.append(c)
            return bytes(out)


def f_int(field, v):
    return varint(field << 3) + varint(v)


def f_bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return varint((field << 3) | 2) + varint(len(data)) + data


def f_float(field, v):
    return varint((field << 3) | 5) + struct.pack("<f", v)


def shape(dims):
    out = b""
    for d in dims:
        if isinstance(d, str):
            out += f_bytes(1, f_bytes(2, d))
        else:
            out += f_bytes(1, f_int(1, d))
    return out


def value_info(name, elem, dims):
    """dims: ints and symbolic names (str); None for no shape at all."""
    tensor_type = f_int(1, elem)
    if dims is not None:
        tensor_type += f_bytes(2, shape(dims))
    return f_bytes(1, name) + f_bytes(2, f_bytes(1, tensor_type))


def attr_int(name, v):
    return f_bytes(1, name) + f_int(3, v) + f_int(20, A_INT)


def attr_ints(name, vs):
    return f_bytes(1, name) + b"".join(f_int(8, v) for v in vs) + f_int(20, A_INTS)


def attr_float(name, v):
    return f_bytes(1, name) + f_float(2, v) + f_int(20, A_FLOAT)


def attr_floats(name, vs):
    return f_bytes(1, name) + b"".join(f_float(7, v) for v in vs) + f_int(20, A_FLOATS)


def attr_str(name, v):
    return f_bytes(1, name) + f_bytes(4, v) + f_int(20, A_STRING)


def attr_tensor(name, t):
    return f_bytes(1, name) + f_bytes(5, t) + f_int(20, A_TENSOR)


def attr_graph(name, g):
    return f_bytes(1, name) + f_bytes(6, g) + f_int(20, A_GRAPH)


def node(op, name, ins, outs, attrs=()):
    out = b"".join(f_bytes(1, i) for i in ins)
    out += b"".join(f_bytes(2, o) for o in outs)
    out += f_bytes(3, name) + f_bytes(4, op)
    return out + b"".join(f_bytes(5, a) for a in attrs)


def graph(name, nodes, inputs, outputs, inits=(), vinfo=()):
    out = b"".join(f_bytes(1, n) for n in nodes) + f_bytes(2, name)
    out += b"".join(f_bytes(5, t) for t in inits)
    out += b"".join(f_bytes(11, v) for v in inputs)
    out += b"".join(f_bytes(12, v) for v in outputs)
    return out + b"".join(f_bytes(13, v) for v in vinfo)
