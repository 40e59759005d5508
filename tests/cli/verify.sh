#!/usr/bin/env bash
# CLI: `nnmem verify` on hand-made plans (valid; overlapping and misaligned:
# exit 4; over capacity: exit 2) in the one-file and two-file forms, plan
# JSON of problems and graphs matched by id (missing, extra, repeated and
# disagreeing buffers: exit 1, named), and --json verdicts.
. "$(dirname "$0")/lib/common.sh"

write_small_problem "$T/p.csv"

# Height 12 = the lower bound: c@0, a@0, b@8, d@8.
cat >"$T/sol.csv" <<'CSV'
id,lower,upper,size,offset
a,0,2,4,0
b,1,3,4,8
c,2,4,8,0
d,3,5,4,8
CSV
expect_rc 0 verify "$T/sol.csv"
out_has "valid: height 12 (lower bound 12, ratio 1.000x)"
err_empty

# Two files; the solution's rows in another order are matched by id.
cat >"$T/sol2.csv" <<'CSV'
offset,id,lower,upper,size
8,d,3,5,4
0,c,2,4,8
8,b,1,3,4
0,a,0,2,4
CSV
expect_rc 0 verify "$T/p.csv" "$T/sol2.csv"
out_has "valid: height 12 (lower bound 12, ratio 1.000x)"

expect_rc 0 verify --capacity 12 "$T/sol.csv"
expect_rc 2 verify --capacity 11 "$T/sol.csv"
out_has "over capacity: height 12 > capacity 11"

expect_rc 0 verify -q "$T/sol.csv"
out_empty

# Alignment: all offsets are multiples of 4, not of 8.
expect_rc 0 verify --align 4 "$T/sol.csv"
expect_rc 4 verify --align 16 "$T/sol.csv"
out_has "misaligned: buffer"
out_has "is not a multiple of 16"

# The example of the issue: b1 [0,3) @ [0,4) and b3 [0,9) @ [2,6) overlap.
cat >"$T/bad.csv" <<'CSV'
id,lower,upper,size,offset
b1,0,3,4,0
b2,3,9,4,0
b3,0,9,4,2
CSV
expect_rc 4 verify "$T/bad.csv"
out_has "conflict: buffers"
out_has "'b1' [0,3) @ [0,4)"
out_has "'b3' [0,9) @ [2,6)"
out_has "overlap"

# Touching lifetimes ([0,3) and [3,9)) may share bytes.
cat >"$T/touch.csv" <<'CSV'
id,lower,upper,size,offset
b1,0,3,4,0
b2,3,9,4,0
CSV
expect_rc 0 verify "$T/touch.csv"
out_has "valid: height 4 (lower bound 4, ratio 1.000x)"

# A per-buffer alignment column is honoured.
cat >"$T/al.csv" <<'CSV'
id,lower,upper,size,alignment,offset
x,0,2,4,1,0
y,0,2,4,16,4
CSV
expect_rc 4 verify "$T/al.csv"
out_has "misaligned: buffer 'y' offset 4 is not a multiple of 16"

# Input problems: no offsets, unknown id, different counts, missing file.
expect_rc 1 verify "$T/p.csv"
err_has "p.csv"
err_has "offset"
cat >"$T/other.csv" <<'CSV'
id,lower,upper,size,offset
a,0,2,4,0
b,1,3,4,8
c,2,4,8,0
zz,3,5,4,8
CSV
expect_rc 1 verify "$T/p.csv" "$T/other.csv"
err_has "no buffer 'd'"
err_has "other.csv"
head -n 3 "$T/sol.csv" >"$T/short.csv"
expect_rc 1 verify "$T/p.csv" "$T/short.csv"
err_has "short.csv"
expect_rc 1 verify "$T/nope.csv"
err_has "nope.csv"
expect_rc 1 verify "$T/p.csv" "$T/sol.csv" "$T/sol2.csv"
err_has "must be a multi-plan document"
expect_rc 1 verify --align 3 "$T/sol.csv"
err_has "power of two"
expect_rc 1 verify --capacity lots "$T/sol.csv"
err_has "bad --capacity 'lots'"

# ---- plan JSON ---------------------------------------------------------------
expect_rc 0 plan "$T/p.csv" --out "$T/plan.json" -q
expect_rc 0 verify "$T/p.csv" "$T/plan.json"
out_has "valid: height 12 (lower bound 12, ratio 1.000x)"
expect_rc 0 verify "$T/p.csv" "$T/plan.json" --json
py 'import json,sys; v=json.load(open(sys.argv[1]))
assert v["valid"] is True and v["violation"] is None, v
assert v["height"]==12 and v["lower_bound"]==12 and v["ratio"]==1, v
assert v["buffers"]==4 and v["plan"].endswith("plan.json"), v' "$T/stdout"

# Hand-written plan JSON: b3 overlaps b1 -> exit 4, both buffers named.
cat >"$T/bad.json" <<'JSON'
{"buffers": [
  {"id": "b1", "offset": 0, "size": 4, "first": 0, "last": 3},
  {"id": "b2", "offset": 0, "size": 4, "first": 3, "last": 9},
  {"id": "b3", "offset": 2, "size": 4, "first": 0, "last": 9}]}
JSON
sed 's/,offset//; s/,[0-9]*$//' "$T/bad.csv" >"$T/badp.csv"
expect_rc 4 verify "$T/badp.csv" "$T/bad.json"
out_has "'b1' [0,3) @ [0,4)"
out_has "'b3' [0,9) @ [2,6)"
expect_rc 4 verify "$T/badp.csv" "$T/bad.json" --json=compact
py 'import json,sys; v=json.load(open(sys.argv[1]))
assert v["valid"] is False and v["violation"]=="conflict", v
a,b=v["conflict"]
assert {a["id"],b["id"]}=={"b1","b3"}, v
assert {(x["offset"],x["size"],x["first"],x["last"]) for x in (a,b)}=={(0,4,0,3),(2,4,0,9)}, v' \
  "$T/stdout"
expect_rc 4 verify --align 16 "$T/p.csv" "$T/plan.json" --json
py 'import json,sys; v=json.load(open(sys.argv[1]))
assert v["violation"]=="misaligned" and v["buffer"]["align"]==16, v' "$T/stdout"
expect_rc 2 verify --capacity 11 "$T/p.csv" "$T/plan.json" --json
py 'import json,sys; v=json.load(open(sys.argv[1]))
assert v["violation"]=="over_capacity" and v["capacity"]==11, v' "$T/stdout"

# Missing, extra, repeated, disagreeing buffers: bad input (exit 1), named.
py 'import json,sys; j=json.load(open(sys.argv[1])); b=j["buffers"]
json.dump(dict(j, buffers=b[:3]), open(sys.argv[2],"w"))
json.dump(dict(j, buffers=b+[dict(b[0], id="zz")]), open(sys.argv[3],"w"))
json.dump(dict(j, buffers=b+[b[1]]), open(sys.argv[4],"w"))
json.dump(dict(j, buffers=[dict(b[0], size=5)]+b[1:]), open(sys.argv[5],"w"))
json.dump(dict(j, buffers=[dict(b[0], offset=-1)]+b[1:]), open(sys.argv[6],"w"))' \
  "$T/plan.json" "$T/miss.json" "$T/extra.json" "$T/dup.json" "$T/size.json" \
  "$T/neg.json"
expect_error verify "$T/p.csv" "$T/miss.json"
err_has "no buffer 'd'"
expect_error verify "$T/p.csv" "$T/extra.json"
err_has "buffer 'zz' is not a buffer of"
expect_error verify "$T/p.csv" "$T/dup.json"
err_has "buffer 'b' is listed twice"
expect_error verify "$T/p.csv" "$T/size.json"
err_has "buffer 'a' is 5 B on [0,2) but"
expect_error verify "$T/p.csv" "$T/neg.json"
err_has "'offset' must be an integer"
echo '{"buffers": [' >"$T/broken.json"
expect_error verify "$T/p.csv" "$T/broken.json"
err_has "broken.json"
expect_error verify "$T/p.csv" "$T/plan.txt"
err_has "must end in .json or .csv"

# A graph: the plan JSON and the CSV plan that plan --out writes verify
# against the graph itself; --align defaults to the plan's alignment.
G="$NNMEM_SOURCE_DIR/examples/graphs/tiny.json"
if [ -f "$G" ]; then
  expect_rc 0 plan "$G" --align 256 --out "$T/g.json" -q
  expect_rc 0 plan "$G" --align 256 --out "$T/g.csv" -q
  expect_rc 0 verify "$G" "$T/g.json"
  out_has "valid: height"
  expect_rc 0 verify "$G" "$T/g.csv" --align 256
  expect_rc 4 verify "$G" "$T/g.json" --align 4096
  out_has "misaligned"
  # a graph without a plan is a usage error
  expect_error verify "$G"
  err_has "second argument"
  # a plan of another graph: buffers named
  expect_error verify "$T/p.csv" "$T/g.json"
  err_has "no buffer 'a'"
fi

finish
