#!/usr/bin/env bash
# CLI: `nnmem plan` on JSON graphs with hand-computed numbers: report,
# --out plan.json / plan.csv, --profile, --no-reuse, in-place aliasing.
. "$(dirname "$0")/lib/common.sh"

# x(16 B) -fc1(+32 B workspace)-> h1 -relu-> h2 -fc2-> y; w1 (64 B) is a
# weight read by fc1 and fc2. Steps 0..2. Live arena bytes per step:
#   0: x + h1 + fc1 workspace = 64;  1: h1 + h2 = 32;  2: h2 + y = 32.
# Arena bound 64 (reachable), weights 64, peak 128; naive arena 96.
write_graph() { # FILE RELU_EXTRA
  cat >"$1" <<JSON
{
  "format_version": 1,
  "name": "tiny-mlp",
  "tensors": [
    {"name": "x",  "kind": "input",      "dtype": "float32", "shape": [1, 4]},
    {"name": "w1", "kind": "weight",     "dtype": "float32", "shape": [4, 4]},
    {"name": "h1", "kind": "activation", "dtype": "float32", "shape": [1, 4]},
    {"name": "h2", "kind": "activation", "dtype": "float32", "shape": [1, 4]},
    {"name": "y",  "kind": "output",     "dtype": "float32", "shape": [1, 4]}
  ],
  "ops": [
    {"name": "fc1", "type": "MatMul", "inputs": ["x", "w1"], "outputs": ["h1"],
     "workspace": 32},
    {"name": "relu", "type": "Relu", "inputs": ["h1"], "outputs": ["h2"]$2},
    {"name": "fc2", "type": "MatMul", "inputs": ["h2", "w1"], "outputs": ["y"]}
  ]
}
JSON
}
G="$T/tiny.json"
write_graph "$G" ""

expect_rc 0 plan "$G"
out_has "tiny.json"
out_has "tiny-mlp"
out_has "3 ops, 5 tensors (1 weights), 5 buffers"
out_matches "peak memory +128 B"
out_matches "weights +64 B"
out_matches "activations +32 B"
out_matches "workspace +32 B"
out_matches "lower bound +128 B"
out_has "peak/bound 1.000x"
out_has "height 64 B, bound 64 B, 1.000x"
out_matches "naive +160 B"
out_has "arena reuse 33.3%"
out_matches "peak step +0 of 3, op 'fc1' \(MatMul\): 3 buffers live, 64 B"
out_has "fc1:workspace"
err_empty

# Files: plan JSON, plan CSV (verifiable), profile.
expect_rc 0 plan "$G" --out "$T/plan.json" --profile "$T/prof.json" -q
out_empty
has_file "$T/plan.json"
has_file "$T/prof.json"
json_valid "$T/plan.json"
py '
import json, sys
p = json.load(open(sys.argv[1]))
assert p["arena_height"] == 64, p
assert p["weight_bytes"] == 64, p
names = sorted(t["name"] for t in p["tensors"])
assert names == ["h1", "h2", "w1", "x", "y"], names
regions = {t["name"]: t["region"] for t in p["tensors"]}
assert regions["w1"] == "weights" and regions["x"] == "arena", regions
assert len(p["buffers"]) == 5, p["buffers"]
' "$T/plan.json"
profile_ok "$T/prof.json"
py '
import json, sys
p = json.load(open(sys.argv[1]))
assert (p["peak_memory"], p["weight_memory"], p["workspace_memory"]) == (128, 64, 32), p
assert p["lower_bound"] == 128 and p["naive_memory"] == 160, p
' "$T/prof.json"

expect_rc 0 plan "$G" --out "$T/plan.csv"
has_file "$T/plan.csv"
expect_rc 0 verify "$T/plan.csv"
out_has "valid: height 64 (lower bound 64, ratio 1.000x)"

# --json report.
expect_rc 0 plan "$G" --json
json_valid "$T/stdout"
py '
import json, sys
p = json.load(open(sys.argv[1]))
assert p["input_kind"] == "graph" and p["ops"] == 3 and p["steps"] == 3, p
assert p["peak_op"] == {"name": "fc1", "type": "MatMul"}, p["peak_op"]
assert p["peak_live"][0] == {"id": "fc1:workspace", "size": 32, "first": 0, "last": 1}, p["peak_live"]
assert p["peak_memory"] == 128 and p["verified"] is True, p
' "$T/stdout"

# --no-reuse: every tensor its own bytes; the arena is the naive one.
expect_rc 0 plan "$G" --no-reuse --json
py '
import json, sys
p = json.load(open(sys.argv[1]))
assert p["arena_height"] == 96 == p["naive_arena"], p
assert p["peak_memory"] == 160 and p["no_reuse"] is True, p
' "$T/stdout"
expect_rc 0 plan "$G" --no-reuse
out_matches "peak memory +160 B"
out_has "(--no-reuse)"

# In-place relu: h2 lives in h1's buffer (4 buffers, 1 aliased tensor);
# --no-reuse turns aliasing off again.
write_graph "$T/inplace.json" ', "inplace": 0'
expect_rc 0 plan "$T/inplace.json"
out_has "4 buffers (+1 aliased tensors)"
expect_rc 0 plan "$T/inplace.json" --no-reuse
out_has "5 buffers"
expect_rc 0 plan "$T/inplace.json" --out "$T/inplace.csv"
expect_rc 0 verify "$T/inplace.csv"
out_has "valid: height 64 "

# --capacity applies to the arena: 64 fits, 63 does not.
expect_rc 0 plan "$G" --capacity 64
expect_rc 2 plan "$G" --capacity 63 --out "$T/should-not-exist.json"
err_has "does not fit"
no_file "$T/should-not-exist.json"

# Content sniffing: a graph in a file without the .json extension.
cp "$G" "$T/graph.txt"
expect_rc 0 plan "$T/graph.txt"
out_has "tiny-mlp"

# --batch is for built-in models only.
expect_error plan "$G" --batch 2
err_has "--batch"
expect_error plan "$G" --model resnet50
err_has "not both"

# Names with control bytes (a newline, an escape sequence) are shown
# escaped ("\n", "\x1b") in the human report and the inspect table, so they
# stay distinguishable; the JSON outputs keep them.
cat >"$T/ctl.json" <<'JSON'
{"format_version": 1, "name": "g\u001b[2J",
 "tensors": [{"name": "in\nput", "kind": "input", "dtype": "float32", "shape": [4]},
             {"name": "out\u001b[31m", "kind": "output", "dtype": "float32", "shape": [4]}],
 "ops": [{"name": "op\u0007", "type": "Re\tlu", "inputs": ["in\nput"], "outputs": ["out\u001b[31m"]}]}
JSON
expect_rc 0 plan "$T/ctl.json"
out_has "(graph 'g\x1b[2J')"
out_has "op 'op\x07' (Re\tlu)"
out_has "in\nput"
out_has "out\x1b[31m"
LC_ALL=C grep -q "$(printf '[\001-\011\013-\037]')" "$T/stdout" &&
  fail "the report holds control bytes"
expect_rc 0 inspect "$T/ctl.json"
out_has "in\nput"
LC_ALL=C grep -q "$(printf '[\001-\011\013-\037]')" "$T/stdout" &&
  fail "the inspect table holds control bytes"
expect_rc 0 plan "$T/ctl.json" --json
py 'import json,sys; d=json.load(open(sys.argv[1])); assert d["model"] == "g\x1b[2J", d["model"]' "$T/stdout"

finish
