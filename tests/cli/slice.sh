#!/usr/bin/env bash
# CLI: `nnmem plan` on a JSON graph whose Slice carries "slice": the output
# is a view of its input (sub-buffer count and bytes in the report and
# --json, peak by hand), off with --no-concat-into-output, the plan JSON
# read back by `nnmem verify` (also with --order memory), and bad "slice"
# values: exit 1, a message naming the op, no output file.
. "$(dirname "$0")/lib/common.sh"

# x[1,1,4,4] (64 B) -a-> A[1,6,4,4] (384 B) -slice(axis 1, start 2)->
# S[1,3,4,4] (192 B) -d-> y[1,1,4,4] (64 B). Off: step 1 holds A + S =
# 576 B. On: S is bytes [128, 320) of A, A lives until d: peak
# max(x + A, A + y) = 448 B.
write_graph() { # FILE SLICE
  cat >"$1" <<JSON
{"format_version": 1, "name": "sliced",
 "tensors": [
  {"name": "x", "kind": "input", "dtype": "float32", "shape": [1, 1, 4, 4]},
  {"name": "A", "dtype": "float32", "shape": [1, 6, 4, 4]},
  {"name": "S", "dtype": "float32", "shape": [1, 3, 4, 4]},
  {"name": "y", "kind": "output", "dtype": "float32", "shape": [1, 1, 4, 4]}],
 "ops": [
  {"name": "a", "type": "Conv", "inputs": ["x"], "outputs": ["A"]},
  {"name": "sl", "type": "Slice", "inputs": ["A"], "outputs": ["S"],
   "slice": $2},
  {"name": "d", "type": "Conv", "inputs": ["S"], "outputs": ["y"]}]}
JSON
}
G="$T/sliced.json"
write_graph "$G" '{"axis": 1, "start": 2}'

expect_rc 0 plan "$G"
out_has "sub-buffers    1 buffer inside Concat outputs / Split and Slice inputs, 192 B"
out_matches "peak memory +448 B"
expect_rc 0 plan "$G" --json
py 'import json,sys; d=json.load(open(sys.argv[1]))
assert d["sub_buffers"] == 1 and d["sub_buffer_bytes"] == 192, d' "$T/stdout"
expect_rc 0 plan "$G" --no-concat-into-output
grep -q "sub-buffers" "$T/stdout" && fail "sub-buffers with the pass off"
out_matches "peak memory +576 B"

expect_rc 0 plan "$G" --out "$T/p.json"
expect_rc 0 verify "$G" "$T/p.json"
expect_rc 0 plan "$G" --order memory --out "$T/m.json"
out_matches "peak memory +448 B"
expect_rc 0 verify "$G" "$T/m.json"

# bad values: the op and what is wrong, nothing written
bad() { # SLICE TEXT
  write_graph "$T/bad.json" "$1"
  expect_error plan "$T/bad.json" --out "$T/should-not-exist.json"
  err_has "$2"
}
bad '{"axis": 1, "start": 4}' "op 'sl': slice [4, 4 + 3) exceeds dim 1 of 'A' (6)"
bad '{"axis": 4, "start": 0}' "op 'sl': slice axis 4 out of range (rank 4)"
bad '{"axis": 2, "start": 0}' "op 'sl': slice along axis 2 but dim 1 differs"
bad '{"axis": 1}' "op 'sl' (ops[1]): 'slice' needs 'axis' and 'start'"
bad '{"axis": 1, "start": -1}' "op 'sl' (ops[1]): 'slice.start' is -1"
bad '"1:2"' "op 'sl' (ops[1]): 'slice' must be an object"

finish
