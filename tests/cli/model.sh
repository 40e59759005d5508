#!/usr/bin/env bash
# CLI: the richer problem model. MiniMalloc `gaps` column and the
# parent/parent_offset columns: planned, written (CSV and plan JSON with
# gaps and parents), verified; bad gaps and relations exit 1 naming file,
# line and buffer, with no output file; a tampered plan JSON (child moved)
# is refused by `nnmem verify`; --no-concat-into-output on a graph.
. "$(dirname "$0")/lib/common.sh"

P="$T/g.csv"
cat >"$P" <<'CSV'
id,lower,upper,size,gaps,parent,parent_offset
out,0,10,300,,,
x,0,5,100,,out,0
y,2,5,100,3-4,out,100
z,0,3,50,,,
w,6,9,40,7-8,,
CSV

expect_rc 0 plan "$P" --out "$T/g.json"
out_matches "lower bound +350 B"
out_matches "height +350 B"
err_empty
json_valid "$T/g.json"
py 'import json,sys
d = json.load(open(sys.argv[1]))
b = {x["id"]: x for x in d["buffers"]}
assert b["y"]["gaps"] == [[3, 4]], b["y"]
assert b["y"]["parent"] == "out" and b["y"]["parent_offset"] == 100
assert b["y"]["offset"] == b["out"]["offset"] + 100
assert b["x"]["offset"] == b["out"]["offset"]
assert "parent" not in b["z"] and "gaps" not in b["z"]' "$T/g.json"
expect_rc 0 verify "$P" "$T/g.json"
out_has "valid: height 350"

# The CSV solution keeps the columns; the problem CSV round-trips.
expect_rc 0 plan "$P" --out "$T/sol.csv"
head -n 1 "$T/sol.csv" | grep -q '^id,lower,upper,size,gaps,parent,parent_offset,offset$' ||
  fail "solution header changed"
grep -q '^y,2,5,100,3-4,out,100,' "$T/sol.csv" || fail "row y changed"
expect_rc 0 verify "$T/sol.csv"

# A child moved off its declared offset: verify exits 4 (invalid plan) and
# names it.
py 'import json,sys
d = json.load(open(sys.argv[1]))
for x in d["buffers"]:
    if x["id"] == "y": x["offset"] += 8
json.dump(d, open(sys.argv[2], "w"))' "$T/g.json" "$T/bad.json"
if have_python; then
  expect_rc 4 verify "$P" "$T/bad.json"
  out_has "sub-buffer: 'y'"
  out_has "its parent 'out'"
  expect_rc 4 verify "$P" "$T/bad.json" --json
  py 'import json,sys
d = json.load(open(sys.argv[1]))
assert d["valid"] is False and d["violation"] == "sub_buffer", d
assert d["buffer"]["id"] == "y"' "$T/stdout"
fi

# Bad gaps and relations: exit 1, file:line and buffer named, no output.
bad() {
  printf '%s\n' "$1" >"$T/bad.csv"
  expect_error plan "$T/bad.csv" --out "$T/should-not-exist.json"
  err_has "$2"
}
bad "$(printf 'id,lower,upper,size,gaps\na,0,10,4,2-4 3-6')" \
  "bad.csv:2: buffer 'a': gap 3-6 overlaps the gap before it"
bad "$(printf 'id,lower,upper,size,gaps\na,0,10,4,\nb,1,5,4,4-9')" \
  "bad.csv:3: buffer 'b': gap 4-9 lies outside the lifetime"
bad "$(printf 'id,lower,upper,size,gaps\na,0,10,4,2-4@0:2')" "window"
bad "$(printf 'id,lower,upper,size,parent,parent_offset\na,0,10,8,,\nb,0,10,4,a,6')" \
  "bad.csv:3: buffer 1 'b': sub-buffer at offset 6, size 4 does not fit"
bad "$(printf 'id,lower,upper,size,parent,parent_offset\na,0,4,8,,\nb,0,10,4,a,0')" \
  "parent dies first"
bad "$(printf 'id,lower,upper,size,parent,parent_offset\na,0,10,8,b,0\nb,0,10,8,a,0')" \
  "loops back"

# Graphs: a JSON graph with a Concat of two conv outputs. By default the
# inputs are sub-buffers of the output (report line, plan JSON parents,
# verify agrees); --no-concat-into-output turns that off, and verify must
# be given the same option.
cat >"$T/cat.json" <<'JSON'
{"format_version": 1, "name": "cat",
 "tensors": [
  {"name": "x", "kind": "input", "dtype": "float32", "shape": [1, 1, 4, 4]},
  {"name": "a", "dtype": "float32", "shape": [1, 2, 4, 4]},
  {"name": "b", "dtype": "float32", "shape": [1, 3, 4, 4]},
  {"name": "c", "dtype": "float32", "shape": [1, 5, 4, 4]},
  {"name": "y", "kind": "output", "dtype": "float32", "shape": [1, 1, 4, 4]}],
 "ops": [
  {"name": "opa", "type": "Conv", "inputs": ["x"], "outputs": ["a"]},
  {"name": "opb", "type": "Conv", "inputs": ["x"], "outputs": ["b"]},
  {"name": "cat", "type": "Concat", "inputs": ["a", "b"], "outputs": ["c"]},
  {"name": "opy", "type": "Conv", "inputs": ["c"], "outputs": ["y"]}]}
JSON
expect_rc 0 plan "$T/cat.json" --out "$T/cat-plan.json"
out_has "sub-buffers    2 buffers inside Concat outputs / Split and Slice inputs, 320 B"
out_matches "height 384 B, bound 384 B"
py 'import json,sys
d = json.load(open(sys.argv[1]))
b = {x["id"]: x for x in d["buffers"]}
assert b["a"]["parent"] == "c" and b["a"]["parent_offset"] == 0
assert b["b"]["parent"] == "c" and b["b"]["parent_offset"] == 128
assert b["c"]["first"] == 0' "$T/cat-plan.json"
expect_rc 0 verify "$T/cat.json" "$T/cat-plan.json"
out_has "valid: height 384"
expect_rc 0 plan "$T/cat.json" --no-concat-into-output --out "$T/cat-off.json"
out_matches "height 640 B, bound 640 B"
expect_rc 0 verify "$T/cat.json" "$T/cat-off.json" --no-concat-into-output
expect_rc 1 plan "$T/cat.json" --no-concat-into-outptu
err_has "--no-concat-into-output"

finish
