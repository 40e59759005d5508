#!/usr/bin/env bash
# CLI: every integer in every JSON output is exact (issue 7, defect 2).
# Lifetimes of 1,700,000,000,000,000,003 and sizes 2^53 - 1 / 2^53 + 1 go
# through plan --json (pretty and compact), plan --out x.json, --profile,
# verify --json, inspect --json and plan --json of a graph whose weights add
# up past 2^53, and replay --json; each output is read with Python's json
# module (it keeps integers exact, unlike a double-based parser) and
# compared with values computed here by hand.
. "$(dirname "$0")/lib/common.sh"

have_python || skip "no python3"

# a [..00, ..03) and b [..01, ..05) overlap; c [..03, ..07) overlaps b only;
# d [0, ..01) overlaps a. Lower bound: b + c = 2^54 + 1 (a + b is 2^54,
# a + d is 2^53 + 2). Naive: the sum of all sizes.
cat >"$T/big.csv" <<'CSV'
id,lower,upper,size
a,1700000000000000000,1700000000000000003,9007199254740991
b,1700000000000000001,1700000000000000005,9007199254740993
c,1700000000000000003,1700000000000000007,9007199254740992
d,0,1700000000000000001,3
CSV

# exact CHECK FILE: python code with `j` = the parsed file, `EXPECT` = the
# expected buffers; also fails on any float that should be an int.
exact() {
  py '
import json, sys
def no_floats(x, path="$"):
    if isinstance(x, dict):
        for k, v in x.items(): no_floats(v, path + "." + k)
    elif isinstance(x, list):
        for i, v in enumerate(x): no_floats(v, "%s[%d]" % (path, i))
    elif isinstance(x, float):
        assert path.split(".")[-1] in FLOATS, ("float", path, x)
FLOATS = {"reuse_ratio", "plan_seconds", "height_over_lower_bound",
          "plan_ms", "total_ms", "ratio", "reserved_over_live",
          "fragmentation", "ns_per_op"}
BUF = {"a": (9007199254740991, 1700000000000000000, 1700000000000000003),
       "b": (9007199254740993, 1700000000000000001, 1700000000000000005),
       "c": (9007199254740992, 1700000000000000003, 1700000000000000007),
       "d": (3, 0, 1700000000000000001)}
LB = 2**54 + 1
NAIVE = 9007199254740991 + 9007199254740993 + 9007199254740992 + 3
j = json.load(open(sys.argv[2]))
no_floats(j)
exec(sys.argv[1])
' "$1" "$2"
}

# ---- plan --json, both styles -----------------------------------------------
for style in "" "=compact"; do
  expect_rc 0 plan "$T/big.csv" "--json$style"
  cp "$T/stdout" "$T/report.json"
  exact '
assert j["arena_lower_bound"] == LB and j["lower_bound"] == LB, j
assert j["arena_height"] == LB, j  # the planner reaches the bound here
assert j["naive_arena"] == NAIVE and j["naive_memory"] == NAIVE, j
assert j["peak_step"] == 1700000000000000003, j
assert j["peak_live_bytes"] == LB, j
got = {e["id"]: (e["size"], e["first"], e["last"]) for e in j["peak_live"]}
assert got == {k: BUF[k] for k in "bc"}, got
' "$T/report.json"
done
py 'import sys; t=open(sys.argv[1]).read(); assert "e+" not in t and "E+" not in t, t' \
  "$T/report.json"

# ---- plan --out x.json and --profile -------------------------------------
expect_rc 0 plan "$T/big.csv" --out "$T/plan.json" --profile "$T/prof.json" -q
exact '
assert j["arena_height"] == LB, j
bufs = {b["id"]: b for b in j["buffers"]}
assert {k: (b["size"], b["first"], b["last"]) for k, b in bufs.items()} == BUF, bufs
# the offsets are a valid plan: checked by hand for the overlapping pairs
def ov(x, y): return x["offset"] < y["offset"] + y["size"] and y["offset"] < x["offset"] + x["size"]
for x, y in (("a", "b"), ("b", "c"), ("a", "d")):
    assert not ov(bufs[x], bufs[y]), (x, y, bufs)
assert max(b["offset"] + b["size"] for b in bufs.values()) == LB, bufs
' "$T/plan.json"
exact '
assert j["arena_height"] == LB and j["lower_bound"] == LB, j
assert j["naive_memory"] == NAIVE and j["peak_step"] == 1700000000000000003, j
assert j["buffers"] == 4, j
' "$T/prof.json"

# ---- verify --json reads the plan JSON back exactly -------------------------
expect_rc 0 verify "$T/big.csv" "$T/plan.json" --json
cp "$T/stdout" "$T/verdict.json"
exact 'assert j["valid"] and j["height"] == LB and j["lower_bound"] == LB, j' \
  "$T/verdict.json"
# one offset moved by 1 (invisible to a double): b and a now overlap
py 'import json,sys; j=json.load(open(sys.argv[1]))
for b in j["buffers"]:
    if b["id"] == "a": b["offset"] -= 1
json.dump(j, open(sys.argv[2], "w"))' "$T/plan.json" "$T/off1.json"
expect_rc 4 verify "$T/big.csv" "$T/off1.json" --json
cp "$T/stdout" "$T/v1.json"
exact '
assert j["violation"] == "conflict", j
got = {e["id"]: (e["size"], e["first"], e["last"]) for e in j["conflict"]}
assert got == {k: BUF[k] for k in got} and len(got) == 2, got
' "$T/v1.json"

# ---- a graph: inspect --json and plan --json --------------------------------
# Three weights of 2^53 - 1 B (the largest size a JSON graph may give
# exactly): 3 * (2^53 - 1) is odd and above 2^54, so no double holds it.
cat >"$T/g.json" <<'JSON'
{"format_version": 1, "name": "huge",
 "tensors": [
  {"name": "x", "kind": "input", "bytes": 9007199254740991},
  {"name": "w1", "kind": "weight", "bytes": 9007199254740991},
  {"name": "w2", "kind": "weight", "bytes": 9007199254740991},
  {"name": "w3", "kind": "weight", "bytes": 9007199254740991},
  {"name": "y", "kind": "output", "bytes": 9007199254740989}],
 "ops": [{"name": "op", "type": "MatMul", "inputs": ["x", "w1", "w2", "w3"],
          "outputs": ["y"]}]}
JSON
py 'import json,sys; json.load(open(sys.argv[1]))' "$T/g.json"
expect_rc 0 inspect "$T/g.json" --json
cp "$T/stdout" "$T/inspect.json"
exact '
W = 3 * 9007199254740991
assert j["weight_bytes"] == W, j["weight_bytes"]
sizes = {t["name"]: t["bytes"] for t in j["tensors"]}
assert sizes["w2"] == 9007199254740991, sizes
' "$T/inspect.json"
expect_rc 0 plan "$T/g.json" --json=compact --out "$T/gplan.json" \
  --profile "$T/gprof.json"
cp "$T/stdout" "$T/greport.json"
for f in greport gprof; do
  exact '
W = 3 * 9007199254740991
assert j["weight_memory"] == W, j
assert j["peak_memory"] == W + j["activation_memory"] + j["workspace_memory"], j
assert j["activation_memory"] == 9007199254740991 + 9007199254740989, j
' "$T/$f.json"
done
exact '
W = 3 * 9007199254740991
assert j["weight_bytes"] == W, j
t = {x["name"]: x for x in j["tensors"]}
assert t["w3"]["offset"] == 2 * 9007199254740991 and t["w3"]["region"] == "weights", t
assert t["y"]["size"] == 9007199254740989, t
' "$T/gplan.json"
expect_rc 0 verify "$T/g.json" "$T/gplan.json" --json
cp "$T/stdout" "$T/gverdict.json"
exact 'assert j["valid"] and j["height"] == 9007199254740991 + 9007199254740989, j' \
  "$T/gverdict.json"

# ---- replay --json -------------------------------------------------------------
# The simulated device holds at most 2^46 bytes, so replayed sizes stay far
# below 2^53; the lifetimes still are 1.7e18 and the figures exact.
cat >"$T/trace.csv" <<'CSV'
id,lower,upper,size
a,1700000000000000000,1700000000000000003,4398046511105
b,1700000000000000001,1700000000000000005,4398046511107
CSV
expect_rc 0 replay "$T/trace.csv" --pool all --json
cp "$T/stdout" "$T/replay.json"
exact '
assert len(j) == 6, j
for r in j:
    assert r["peak_live_bytes"] == 4398046511105 + 4398046511107, r
    assert r["operations"] == 4, r
    assert r["peak_reserved_bytes"] >= r["peak_live_bytes"], r
' "$T/replay.json"

finish
