#!/usr/bin/env bash
# CLI: `nnmem diff A.json B.json`: a planned profile (nnmem plan --profile)
# against a measured one, text and --json (parsed, integers exact past
# 2^53), the timelines compared as step functions (the planned one lists
# the steps where the live bytes change; first difference, max and mean
# deviation checked against values computed by hand), --max-excess and its
# exit 2,
# and bad input (not JSON, not a profile, a key of the wrong type, a file
# that does not exist): exit 1 with the file and the key named.
. "$(dirname "$0")/lib/common.sh"

write_small_problem "$T/p.csv"
expect_rc 0 plan "$T/p.csv" --profile "$T/planned.json" -q
cat >"$T/m.json" <<'JSON'
{"source": "measured", "peak_memory": 16, "weight_memory": 0,
 "activation_memory": 16, "workspace_memory": 0, "arena_height": 16,
 "naive_arena": 20, "reuse_ratio": 0.2,
 "timeline": [{"step": 0, "peak_bytes": 4}, {"step": 2, "peak_bytes": 16}]}
JSON

expect_rc 0 diff "$T/planned.json" "$T/m.json"
err_empty
out_has "A: $T/planned.json"
out_matches '^peak_memory +12 +16 +\+4 +1\.3333$'
out_matches '^naive_arena +20 +20 +\+0 +1\.0000$'
out_has "only in A: lower_bound, naive_memory, arena_lower_bound"
grep -qF "only in B: timeline" "$T/stdout" && fail "the planned profile has a timeline"
# planned live bytes (a 0-2 4, b 1-3 4, c 2-4 8, d 3-5 4): 4 8 12 12 4 at
# steps 0..4; measured 4 at 0, 16 at 2 (step 1 holds 4): steps 0..2 compared,
# |B - A| = 0 4 4
out_has "timeline: steps 0..2 compared (3 steps)"
out_has "first difference at step 1"
out_has "max deviation 4 B at step 1 (8 -> 4), 33.33% of A's peak_memory"
out_has "mean deviation 2.7 B per step"
py 'import json,sys
d = json.load(open(sys.argv[1]))
assert d["timeline"] == [
    {"step": 0, "peak_bytes": 4, "weight_memory": 0, "activation_memory": 4},
    {"step": 1, "peak_bytes": 8, "weight_memory": 0, "activation_memory": 8},
    {"step": 2, "peak_bytes": 12, "weight_memory": 0, "activation_memory": 12},
    {"step": 4, "peak_bytes": 4, "weight_memory": 0, "activation_memory": 4}], d["timeline"]
assert max(e["peak_bytes"] for e in d["timeline"]) == d["lower_bound"]' "$T/planned.json"

expect_rc 0 diff "$T/planned.json" "$T/m.json" --json
py 'import json,sys
d = json.load(open(sys.argv[1]))
k = {r["key"]: r for r in d["keys"]}
assert k["peak_memory"] == {"key": "peak_memory", "a": 12, "b": 16, "delta": 4,
                            "ratio": 16 / 12}, k["peak_memory"]
assert k["weight_memory"]["ratio"] is None
assert d["only_in_b"] == [] and d["steps_compared"] == 3
tl = d["timeline"]
assert tl["first_step"] == 0 and tl["last_step"] == 2, tl
assert tl["first_difference"] == 1 and tl["max_deviation"] == 4, tl
assert tl["max_deviation_step"] == 1 and abs(tl["mean_deviation"] - 8 / 3) < 1e-12, tl
assert [(r["step"], r["a"], r["b"]) for r in d["steps"]] == [(0, 4, 4), (1, 8, 4), (2, 12, 16)]' "$T/stdout"
# a profile against itself: identical timelines
expect_rc 0 diff "$T/planned.json" "$T/planned.json"
out_has "timeline: steps 0..4 compared (5 steps): identical"

# two timelines: the steps both cover (1..2; B's step 0 entry holds at 1);
# exact past 2^53
cat >"$T/m2.json" <<'JSON'
{"peak_memory": 9007199254740993, "weight_memory": 0,
 "activation_memory": 9007199254740993, "workspace_memory": 0,
 "timeline": [{"step": 1, "peak_bytes": 5}, {"step": 2, "peak_bytes": 9007199254740993}]}
JSON
cat >"$T/m3.json" <<'JSON'
{"peak_memory": 9007199254740992, "weight_memory": 0,
 "activation_memory": 9007199254740992, "workspace_memory": 0,
 "timeline": [{"step": 0, "peak_bytes": 4}, {"step": 2, "peak_bytes": 9007199254740992}]}
JSON
expect_rc 0 diff "$T/m2.json" "$T/m3.json" --json
py 'import json,sys
d = json.load(open(sys.argv[1]))
assert d["keys"][0]["a"] == 9007199254740993 and d["keys"][0]["delta"] == -1, d["keys"][0]
assert d["steps_compared"] == 2
assert d["steps"] == [{"step": 1, "a": 5, "b": 4, "delta": -1},
                      {"step": 2, "a": 9007199254740993, "b": 9007199254740992,
                       "delta": -1}], d["steps"]
assert d["timeline"]["first_difference"] == 1 and d["timeline"]["max_deviation"] == 1' "$T/stdout"
expect_rc 0 diff "$T/m2.json" "$T/m3.json"
out_has "timeline: steps 1..2 compared (2 steps)"
out_has "max deviation 1 B at step 1 (5 -> 4)"
# no step in common
echo '{"peak_memory": 1, "weight_memory": 0, "activation_memory": 1, "workspace_memory": 0, "timeline": [{"step": 7, "peak_bytes": 1}]}' >"$T/late.json"
expect_rc 0 diff "$T/m2.json" "$T/late.json" --json
py 'import json,sys
d = json.load(open(sys.argv[1]))
assert d["steps_compared"] == 0 and d["timeline"] is None and d["steps"] == []' "$T/stdout"

# --max-excess: 16 over 12 is 33.3 %
expect_rc 2 diff "$T/planned.json" "$T/m.json" --max-excess 10
err_has "B's peak_memory exceeds A's by 33.33% (more than --max-excess 10%)"
out_has "peak_memory"
expect_rc 0 diff "$T/planned.json" "$T/m.json" --max-excess 40
expect_rc 0 diff "$T/m.json" "$T/planned.json" --max-excess 0

# bad input: the file and the key named, exit 1
echo '{"peak_memory": 1' >"$T/broken.json"
expect_error diff "$T/planned.json" "$T/broken.json"
err_has "$T/broken.json: not valid JSON"
echo '{"peak_memory": 1, "weight_memory": 0, "activation_memory": 1}' >"$T/short.json"
expect_error diff "$T/short.json" "$T/planned.json"
err_has "$T/short.json: key 'workspace_memory': missing"
echo '{"peak_memory": "12", "weight_memory": 0, "activation_memory": 1, "workspace_memory": 0}' >"$T/str.json"
expect_error diff "$T/planned.json" "$T/str.json"
err_has "$T/str.json: key 'peak_memory': must be an integer in [0, 2^64 - 1]"
echo '{"peak_memory": 1, "weight_memory": 0, "activation_memory": 1, "workspace_memory": 0, "timeline": [{"step": 0}]}' >"$T/tl.json"
expect_error diff "$T/planned.json" "$T/tl.json"
err_has "$T/tl.json: key 'timeline[0]': 'peak_bytes' must be an integer"
expect_error diff "$T/planned.json" "$T/nope.json"
err_has "nope.json"
expect_error diff "$T/planned.json"
err_has "needs two profiles: A.json B.json"
expect_error diff "$T/planned.json" "$T/m.json" --max-excess -3
err_has "--max-excess wants a percentage >= 0, not '-3'"
expect_error diff "$T/planned.json" "$T/m.json" --max-exces 3
err_has "--max-excess"
finish
