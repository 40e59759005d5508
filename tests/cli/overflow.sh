#!/usr/bin/env bash
# CLI: sums past 2^64 - 1 bytes. The naive total is informative: it
# saturates and the report says so ("naive >= ... (saturated)", reuse as a
# lower bound, "naive_saturated": true in JSON) instead of printing
# 18,446,744,073,709,551,615 B as if exact. Weights + arena past 2^64 - 1 is
# an error naming the largest tensor.
. "$(dirname "$0")/lib/common.sh"

# a and b (12 EiB each) never live at once: height 12 EiB, naive 24 EiB.
cat >"$T/sat.json" <<'JSON'
{"format_version": 1, "name": "sat",
 "tensors": [
  {"name": "x", "kind": "input", "dtype": "float32", "shape": [4]},
  {"name": "a", "kind": "activation", "dtype": "float32", "shape": [3, 1073741824, 1073741824]},
  {"name": "y", "kind": "activation", "dtype": "float32", "shape": [4]},
  {"name": "b", "kind": "activation", "dtype": "float32", "shape": [3, 1073741824, 1073741824]},
  {"name": "z", "kind": "output", "dtype": "float32", "shape": [4]}],
 "ops": [{"name": "op1", "type": "Expand", "inputs": ["x"], "outputs": ["a"]},
         {"name": "op2", "type": "ReduceSum", "inputs": ["a"], "outputs": ["y"]},
         {"name": "op3", "type": "Expand", "inputs": ["y"], "outputs": ["b"]},
         {"name": "op4", "type": "ReduceSum", "inputs": ["b"], "outputs": ["z"]}]}
JSON
expect_rc 0 plan "$T/sat.json"
out_has "(saturated)"
out_has "arena reuse >= "
grep -q "18,446,744,073,709,551,615" "$T/stdout" &&
  fail "the saturated sum is printed as an exact figure"
expect_rc 0 plan "$T/sat.json" --profile "$T/prof.json" --quiet
py '
import json, sys
p = json.load(open(sys.argv[1]))
assert p["naive_saturated"] is True, p
assert p["naive_arena"] == 2**64 - 1, p
' "$T/prof.json"

# A MiniMalloc problem whose sizes sum past 2^64 - 1 is refused by the
# reader, naming the line.
printf 'id,lower,upper,size\na,0,1,13835058055282163712\nb,1,2,13835058055282163712\n' >"$T/sat.csv"
expect_error plan "$T/sat.csv"
err_has "sat.csv:3"

# Weights + arena past 2^64 - 1: an error naming a tensor, not a wrong peak.
cat >"$T/ovf.json" <<'JSON'
{"format_version": 1, "name": "ovf",
 "tensors": [
  {"name": "x", "kind": "input", "dtype": "float32", "shape": [4]},
  {"name": "w", "kind": "weight", "dtype": "float32", "shape": [3, 1073741824, 1073741824]},
  {"name": "a", "kind": "activation", "dtype": "float32", "shape": [3, 1073741824, 1073741824]},
  {"name": "z", "kind": "output", "dtype": "float32", "shape": [4]}],
 "ops": [{"name": "op1", "type": "MatMul", "inputs": ["x", "w"], "outputs": ["a"]},
         {"name": "op2", "type": "ReduceSum", "inputs": ["a"], "outputs": ["z"]}]}
JSON
expect_error plan "$T/ovf.json"
err_has "exceed 2^64 - 1 bytes"
err_has "'w'"

# A real model with a huge sequence length (data set, when present).
M="${NNMEM_DATA_DIR:-}/models/tiny_BertForQuestionAnswering_pt14_opset10.onnx"
if [ -f "$M" ]; then
  expect_rc 0 plan "$M" --dim sequence=1000000000
  out_has "(saturated)"
fi

finish
