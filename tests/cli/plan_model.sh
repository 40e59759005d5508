#!/usr/bin/env bash
# CLI: `nnmem plan` on the built-in models: the default report, --model,
# --batch, --json, --profile, --out, --no-reuse, --capacity.
. "$(dirname "$0")/lib/common.sh"

# Default model (resnet50): every field of the report is there.
expect_rc 0 plan
out_has "nnmem plan: resnet50 (built-in model, batch 1)"
for field in "graph" "ops" "tensors" "weights" "buffers" "strategy" \
  "planning" "peak memory" "activations" "workspace" "lower bound" \
  "peak/bound" "arena" "naive" "arena reuse" "peak step" " MiB (" "x" \
  "%"; do
  out_has "$field"
done
out_matches "peak step +[0-9]+ of [0-9]+, op '[^']+' \([A-Za-z]+\)"
err_empty

# --json: parses; peak = weights + activations + workspace; bounds hold.
expect_rc 0 plan --json
json_valid "$T/stdout"
py '
import json, sys
p = json.load(open(sys.argv[1]))
assert p["peak_memory"] == p["weight_memory"] + p["activation_memory"] + p["workspace_memory"], p
assert p["arena_height"] >= p["arena_lower_bound"] > 0, p
assert p["naive_memory"] >= p["peak_memory"] >= p["lower_bound"], p
assert 0 < p["reuse_ratio"] < 1, p
assert p["input_kind"] == "builtin" and p["batch"] == 1, p
assert p["weight_memory"] > 90 * 1e6, p   # 25.6 M float32 parameters
assert len(p["peak_live"]) == min(5, p["peak_live_buffers"]) > 0, p
' "$T/stdout"
cp "$T/stdout" "$T/b1.json"

# Other models and batch sizes.
expect_rc 0 plan --model mobilenetv2 --batch 32
out_has "nnmem plan: mobilenetv2 (built-in model, batch 32)"
expect_rc 0 plan --model bert-base
out_has "bert-base"
expect_rc 0 plan -m resnet50 -b 4 --json
py '
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
assert a["weight_memory"] == b["weight_memory"], (a, b)
assert b["arena_lower_bound"] == 4 * a["arena_lower_bound"] or b["arena_lower_bound"] > 3 * a["arena_lower_bound"], (a, b)
' "$T/b1.json" "$T/stdout"

# Files.
expect_rc 0 plan --out "$T/plan.json" --profile "$T/prof.json" --quiet
out_empty
json_valid "$T/plan.json"
profile_ok "$T/prof.json"
expect_rc 0 plan --model mobilenetv2 --out "$T/plan.csv"
expect_rc 0 verify "$T/plan.csv"
out_has "valid: height"

# Every strategy on the default model passes the verifier inside plan.
for s in naive greedy-size greedy-breadth heap-best-fit greedy-class; do
  expect_rc 0 plan --strategy "$s" --quiet
done

# --no-reuse: the arena is the naive arena.
expect_rc 0 plan --no-reuse --json
py '
import json, sys
p = json.load(open(sys.argv[1]))
assert p["arena_height"] == p["naive_arena"], p
assert p["reuse_ratio"] == 0, p
' "$T/stdout"

# --capacity far too small: exit 2, a message, no files.
expect_rc 2 plan --capacity 1M --out "$T/should-not-exist.json" \
  --profile "$T/should-not-exist.p.json"
err_has "does not fit"
out_empty
no_file "$T/should-not-exist.json"
no_file "$T/should-not-exist.p.json"
expect_rc 0 plan --capacity 1T --quiet

finish
