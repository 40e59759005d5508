#!/usr/bin/env bash
# CLI: `nnmem diff A.json B.json`: a planned profile (nnmem plan --profile)
# against a measured one, text and --json (parsed, integers exact past
# 2^53), the timelines compared step by step, --max-excess and its exit 2,
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
out_has "only in B: timeline"

expect_rc 0 diff "$T/planned.json" "$T/m.json" --json
py 'import json,sys
d = json.load(open(sys.argv[1]))
k = {r["key"]: r for r in d["keys"]}
assert k["peak_memory"] == {"key": "peak_memory", "a": 12, "b": 16, "delta": 4,
                            "ratio": 16 / 12}, k["peak_memory"]
assert k["weight_memory"]["ratio"] is None
assert d["only_in_b"] == ["timeline"] and d["steps_compared"] == 0' "$T/stdout"

# two timelines: steps both have are compared; exact past 2^53
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
assert d["steps_compared"] == 1
assert d["steps"] == [{"step": 2, "a": 9007199254740993, "b": 9007199254740992,
                       "delta": -1}], d["steps"]' "$T/stdout"
expect_rc 0 diff "$T/m2.json" "$T/m3.json"
out_has "steps compared: 1, largest difference at step 2: 9007199254740993 -> 9007199254740992"

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
