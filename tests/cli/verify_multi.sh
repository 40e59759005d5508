#!/usr/bin/env bash
# CLI: `nnmem verify MODEL... DOC.json` on the multi-plan documents of
# `nnmem plan --shared-arena --out` and `nnmem plan --dim NAME=LO..HI --out`.
# Valid documents pass (each plan re-derived from its model and checked by
# the independent verifier, the arena holding every plan); documents changed
# by hand in one place (Python) fail with the exit code of that fault and a
# message naming the document, the plan and the buffer or plans involved.
. "$(dirname "$0")/lib/common.sh"

write_small_problem "$T/a.csv" # height 12 (hand-computed in common.sh)
cat >"$T/b.csv" <<'CSV'
id,lower,upper,size
x,0,2,16
y,1,3,4
CSV

# edit DOC OUT PYTHON: OUT = DOC with the statement applied to `d`
edit() {
  py "import json,sys
d = json.load(open(sys.argv[1]))
$3
json.dump(d, open(sys.argv[2], 'w'))" "$1" "$2"
}

# 1. taking turns and concurrent: valid, one line per plan and the arena
expect_rc 0 plan "$T/a.csv" "$T/b.csv" --shared-arena --out "$T/s.json" -q
expect_rc 0 verify "$T/a.csv" "$T/b.csv" "$T/s.json"
out_has "s.json: plans[0] ('$T/a.csv'): valid: height 12"
out_has "s.json: plans[1] ('$T/b.csv'): valid: height 20"
out_has "arena: 20 bytes hold all 2 plans"
expect_rc 0 plan "$T/a.csv" "$T/b.csv" --shared-arena \
  --concurrent "$T/a.csv,$T/b.csv" --out "$T/c.json" -q
expect_rc 0 verify "$T/a.csv" "$T/b.csv" "$T/c.json" --json
py 'import json,sys; d=json.load(open(sys.argv[1]))
assert d["valid"] and d["arena_bytes"] == 32 and d["arena_violation"] is None, d
assert [(p["base"], p["height"]) for p in d["plans"]] == [(0, 12), (12, 20)], d' \
  "$T/stdout"

# 2. the arena claim: concurrent plans overlapping, an arena too small, a
# base that breaks the plan's alignment: exit 4 naming the plans
edit "$T/c.json" "$T/overlap.json" 'd["plans"][1]["base"] = 4'
expect_rc 4 verify "$T/a.csv" "$T/b.csv" "$T/overlap.json"
out_has "arena: invalid: plans[0] ('$T/a.csv') [0, +12) and plans[1] ('$T/b.csv') [4, +20) run concurrently (group 1) but overlap"
edit "$T/s.json" "$T/small.json" 'd["arena_bytes"] = 19'
expect_rc 4 verify "$T/a.csv" "$T/b.csv" "$T/small.json"
out_has "plans[1] ('$T/b.csv') at base 0 with height 20 does not fit the arena of 19 bytes"
edit "$T/s.json" "$T/unaligned.json" \
  'd["plans"][0]["plan"]["alignment"] = 8; d["plans"][0]["base"] = 4; d["arena_bytes"] = 40'
expect_rc 4 verify "$T/a.csv" "$T/b.csv" "$T/unaligned.json"
out_has "plans[0] ('$T/a.csv'): base 4 is not a multiple of the plan's alignment 8"
# --capacity bounds the arena
expect_rc 2 verify "$T/a.csv" "$T/b.csv" "$T/s.json" --capacity 16
out_has "arena: over capacity: 20 > capacity 16"

# 3. one plan broken: a buffer moved onto another (exit 4, the plan and both
# buffers named), a size changed (exit 1: planned with other options)
edit "$T/s.json" "$T/conflict.json" \
  'd["plans"][1]["plan"]["buffers"][1]["offset"] = 0'
expect_rc 4 verify "$T/a.csv" "$T/b.csv" "$T/conflict.json"
out_has "conflict.json: plans[1] ('$T/b.csv'): conflict: buffers"
out_has "'x'"
out_has "'y'"
edit "$T/s.json" "$T/size.json" 'd["plans"][0]["plan"]["buffers"][0]["size"] = 9'
expect_rc 1 verify "$T/a.csv" "$T/b.csv" "$T/size.json"
err_has "size.json: plans[0] ('$T/a.csv'): buffer"

# 4. models and document that do not go together: exit 1
expect_rc 1 verify "$T/b.csv" "$T/a.csv" "$T/s.json"
err_has "s.json: plans[0] ('$T/a.csv'): no buffer"
expect_rc 1 verify "$T/a.csv" "$T/s.json"
err_has "holds 2 plans: give their models in the same order before it (got 1)"
expect_rc 1 verify "$T/a.csv" "$T/b.csv" "$T/b.csv" "$T/s.json"
err_has "(got 3)"
expect_rc 1 verify "$T/a.csv" "$T/b.csv" "$T/a.csv"
err_has "must be a multi-plan document"
edit "$T/s.json" "$T/v2.json" 'd["version"] = 2'
expect_rc 1 verify "$T/a.csv" "$T/b.csv" "$T/v2.json"
err_has "v2.json: 'version' must be 1"
printf '{"format": "nnmem-shared-arena", "version": 1, "mode"' >"$T/cut.json"
expect_rc 1 verify "$T/a.csv" "$T/b.csv" "$T/cut.json"
err_has "cut.json"

# 5. shape buckets of the example model: the document names its dim; each
# bucket is checked with the dim bound to its value
EX="$NNMEM_SOURCE_DIR/examples/models/mnist_cnn.onnx"
expect_rc 0 plan "$EX" --dim batch=1..8 --out "$T/bk.json" -q
py 'import json,sys; d=json.load(open(sys.argv[1]))
assert d["dim"] == "batch" and [p["value"] for p in d["plans"]] == [1, 2, 4, 8], d' \
  "$T/bk.json"
expect_rc 0 verify "$EX" "$T/bk.json"
out_has "bk.json: plans[3] ('batch=8'): valid"
out_has "arena: "
out_has "hold all 4 plans (one bucket at a time)"
edit "$T/bk.json" "$T/bk_swap.json" 'd["plans"][2]["value"] = 5'
expect_rc 1 verify "$EX" "$T/bk_swap.json"
err_has "bk_swap.json: plans[2] ('batch=4'): buffer"
edit "$T/bk.json" "$T/bk_nodim.json" 'del d["dim"]'
expect_rc 1 verify "$EX" "$T/bk_nodim.json"
err_has "bk_nodim.json: 'dim' is missing"
expect_rc 1 verify "$EX" "$EX" "$T/bk.json"
err_has "holds 4 shape buckets: give the one model before it (got 2)"

# 6. shared models: three real models, one concurrent pair
[ -n "${NNMEM_DATA_DIR:-}" ] || skip "NNMEM_DATA_DIR not set"
M="$NNMEM_DATA_DIR/models"
set -- "$M/mnist-8.onnx" "$M/light_squeezenet.onnx" "$M/mobilenet_v2_128_0.5.onnx"
for f in "$@"; do [ -f "$f" ] || skip "models absent"; done
expect_rc 0 plan "$@" --shared-arena --concurrent "$1,$3" --out "$T/m.json" -q
expect_rc 0 verify "$@" "$T/m.json"
out_has "hold all 3 plans"
finish
