#!/usr/bin/env bash
# CLI: ONNX models. Bad input and option errors need no data; the real
# models under $NNMEM_DATA_DIR/models are used when present.
. "$(dirname "$0")/lib/common.sh"

# ---- without data: bad files and usage errors ----
printf 'this is not a protobuf\n' >"$T/bad.onnx"
expect_error plan "$T/bad.onnx" --out "$T/should-not-exist.csv" \
  --profile "$T/should-not-exist.json"
err_has "bad.onnx"
err_has "not a valid ONNX protobuf"
: >"$T/empty.onnx"
expect_error inspect "$T/empty.onnx"
err_has "not an ONNX model"
expect_error plan "$T/missing.onnx"
expect_error plan --dim batch=8
err_has "--dim applies to ONNX models"
expect_error plan "$T/bad.onnx" --dim batch
err_has "expected NAME=VALUE"
expect_error plan "$T/bad.onnx" --dim batch=0
expect_error plan "$T/bad.onnx" --layout CHWN
err_has "unknown --layout"
expect_error plan "$T/bad.onnx" --dtype float7
expect_error inspect
err_has "missing MODEL"
expect_rc 0 inspect --help
out_has "Usage: nnmem inspect"
expect_rc 0 plan --help
out_has "--dim NAME=VALUE"

# ---- a model written here (needs python3): an unsupported operator ----
# X[3,5] -> FancyOp -> F -> Relu -> Y; F has no declared shape, so it and Y
# stay unresolved: reported, and --strict fails. NonZero(X) -> NZ is an
# upper bound; S (4 strings) -> Identity -> T is a string tensor.
if have_python; then
  python3 - "$T/fancy.onnx" <<'PY'
import struct, sys
def varint(v):
    out = b""
    while True:
        b = v & 0x7f
        v >>= 7
        out += bytes([b | (0x80 if v else 0)])
        if not v:
            return out
def field(num, wire, payload):
    key = varint(num << 3 | wire)
    if wire == 0:
        return key + varint(payload)
    return key + varint(len(payload)) + payload
def s(num, text):
    return field(num, 2, text.encode())
def value_info(name, dims, elem=1):
    shape = b"".join(field(1, 2, field(1, 0, d)) for d in dims)
    tensor = field(1, 0, elem) + field(2, 2, shape)
    return s(1, name) + field(2, 2, field(1, 2, tensor))
def node(op, name, ins, outs):
    return b"".join(s(1, i) for i in ins) + b"".join(s(2, o) for o in outs) \
        + s(3, name) + s(4, op)
graph = field(1, 2, node("FancyOp", "fancy", ["X"], ["F"])) \
    + field(1, 2, node("Relu", "relu", ["F"], ["Y"])) + s(2, "g") \
    + field(1, 2, node("NonZero", "nz", ["X"], ["NZ"])) \
    + field(1, 2, node("Identity", "sid", ["S"], ["T"])) \
    + field(11, 2, value_info("X", [3, 5])) \
    + field(11, 2, value_info("S", [4], 8)) \
    + field(12, 2, s(1, "Y")) + field(12, 2, s(1, "NZ")) + field(12, 2, s(1, "T"))
model = field(1, 0, 8) + field(8, 2, s(1, "") + field(2, 0, 13)) + field(7, 2, graph)
open(sys.argv[1], "wb").write(model)
PY
  expect_rc 0 plan "$T/fancy.onnx"
  out_has "unsupported    fancy (FancyOp)"
  out_has "unresolved tensors 2"
  out_has "unsupported operator 'FancyOp' (domain ai.onnx, opset 13) at node 'fancy': 2 tensors downstream unresolved"
  expect_rc 0 plan "$T/fancy.onnx" --json
  py 'import json,sys
d = json.load(open(sys.argv[1]))
assert d["unresolved_tensors"] == 2
assert d["onnx"]["unsupported"] == [{"node": "fancy", "op_type": "FancyOp"}]' "$T/stdout"
  expect_error plan "$T/fancy.onnx" --strict --out "$T/should-not-exist.csv"
  err_has "'F'"
  err_has "strict"
  expect_rc 0 inspect "$T/fancy.onnx"
  out_matches "^X +input +float32 +\[3,5\] +60"
  out_matches "^T +output +string +\[4\] +64"
  out_has "unsupported operator 'FancyOp' (domain ai.onnx, opset 13) at node 'fancy'"
  expect_rc 0 inspect "$T/fancy.onnx" --json
  py 'import json,sys
d = json.load(open(sys.argv[1]))
t = {x["name"]: x for x in d["tensors"]}
assert t["NZ"]["upper_bound"] is True and t["NZ"]["shape"] == [2, 15], t["NZ"]
assert "upper_bound" not in t["X"] and "upper_bound" not in t["Y"]
assert t["T"]["dtype"] == "string" and t["T"]["bytes"] == 64, t["T"]
assert d["onnx"]["first_unsupported"] == {"node": "fancy", "op_type": "FancyOp",
    "domain": "ai.onnx", "opset": 13, "downstream_unresolved": 2}, d["onnx"]' "$T/stdout"
fi

M="${NNMEM_DATA_DIR:-}/models"
[ -n "${NNMEM_DATA_DIR:-}" ] && [ -d "$M" ] || { [ "$FAILURES" -eq 0 ] && skip "no models at '$M' (usage checks passed)"; finish; }

# ---- inspect ----
expect_rc 0 inspect "$M/mnist-8.onnx"
out_matches "^Input3 +input +float32 +\[1,1,28,28\] +3136 +\[0,1\)"
out_matches "^Convolution28_Output_0 +activation +float32 +\[1,8,28,28\] +25088"
out_matches "^Parameter193_reshape1 +constant +float32 +\[256,10\] +10240 +weights"
out_has "unresolved tensors 0"
expect_rc 0 inspect "$M/mnist-8.onnx" --json
json_valid "$T/stdout"
py 'import json,sys
d = json.load(open(sys.argv[1]))
t = {x["name"]: x for x in d["tensors"]}
assert t["Plus214_Output_0"]["shape"] == [1, 10], t["Plus214_Output_0"]
assert t["Plus214_Output_0"]["kind"] == "output"
assert t["Input3"]["bytes"] == 3136 and t["Input3"]["first"] == 0
assert d["unresolved_tensors"] == 0 and d["onnx"]["opset"] == 8' "$T/stdout"

# ---- plan: defaults, bindings, profile, plan csv ----
B="$M/tiny_BertForQuestionAnswering_pt14_opset10.onnx"
expect_rc 0 plan "$B"
out_has "unresolved tensors 0"
out_has "batch_size=1 (batch)"
out_has "max_seq_len=128 (sequence)"
expect_rc 0 plan "$B" --dim batch_size=8 --dim max_seq_len=256 \
  --profile "$T/p.json" --out "$T/plan.csv"
has_file "$T/p.json"
has_file "$T/plan.csv"
json_valid "$T/p.json"
py 'import json,sys
d = json.load(open(sys.argv[1]))
assert d["unresolved_tensors"] == 0
assert d["onnx"]["defaults"] == []' "$T/p.json"
expect_rc 0 inspect "$B" --dim batch_size=8 --dim max_seq_len=256 --json
py 'import json,sys
d = json.load(open(sys.argv[1]))
t = {x["name"]: x for x in d["tensors"]}
assert t["input_ids"]["shape"] == [8, 256], t["input_ids"]' "$T/stdout"
# the class names bind every batch-like / sequence-like dim
expect_rc 0 inspect "$B" --dim batch=8 --dim sequence=256 --json
py 'import json,sys
d = json.load(open(sys.argv[1]))
t = {x["name"]: x for x in d["tensors"]}
assert t["input_ids"]["shape"] == [8, 256], t["input_ids"]' "$T/stdout"
# an exact name wins over the class name
expect_rc 0 inspect "$B" --dim batch=8 --dim batch_size=2 --json
py 'import json,sys
d = json.load(open(sys.argv[1]))
t = {x["name"]: x for x in d["tensors"]}
assert t["input_ids"]["shape"] == [2, 128], t["input_ids"]' "$T/stdout"
expect_rc 0 plan "$B" --json
json_valid "$T/stdout"
py 'import json,sys; assert json.load(open(sys.argv[1]))["unresolved_tensors"] == 0' "$T/stdout"

# ---- dtype and layout ----
R="$M/light_resnet50.onnx"
expect_rc 0 inspect "$R" --dtype float16 --layout NC1HWC0 --json
py 'import json,sys
d = json.load(open(sys.argv[1]))
t = [x for x in d["tensors"] if x["kind"] == "input"][0]
assert t["shape"] == [1, 1, 224, 224, 16], t
assert t["bytes"] == 224 * 224 * 16 * 2 and t["dtype"] == "float16"' "$T/stdout"
expect_rc 0 plan "$R" --strict --align 64 --out "$T/r.csv"
expect_rc 0 verify --align 64 "$T/r.csv"
finish
