#!/usr/bin/env bash
# CLI: `nnmem plan` on MiniMalloc CSV problems: report, every strategy,
# --out solution checked by `nnmem verify`, --capacity, --align, --profile,
# --json, --no-reuse.
. "$(dirname "$0")/lib/common.sh"

P="$T/p.csv"
write_small_problem "$P"

# Human report.
expect_rc 0 plan "$P"
out_has "p.csv"
out_has "4 buffers"
out_has "height"
out_matches "lower bound +12 B"
out_has "1.000x"
out_matches "naive +20 B"
out_has "reuse 40.0%"
out_has "strategy"
out_has " ms"
out_matches "peak step +2: 2 buffers live, 12 B"
err_empty

# --out: the solution keeps the input columns, adds offsets, and verifies.
expect_rc 0 plan "$P" --out "$T/solved.csv" --quiet
out_empty
has_file "$T/solved.csv"
head -n 1 "$T/solved.csv" | grep -q 'offset' || fail "no offset column"
expect_rc 0 verify "$T/solved.csv"
out_has "valid: height 12 (lower bound 12, ratio 1.000x)"
expect_rc 0 verify "$P" "$T/solved.csv"

# Every strategy gives a valid plan; naive stacks everything (height 20).
for s in auto naive greedy-size greedy-breadth heap-best-fit greedy-class; do
  rm -f "$T/s.csv"
  expect_rc 0 plan "$P" --strategy "$s" --out "$T/s.csv"
  expect_rc 0 verify "$T/s.csv"
  out_has "valid: height"
done
expect_rc 0 plan "$P" --strategy naive --out "$T/s.csv"
expect_rc 0 verify "$T/s.csv"
out_has "valid: height 20 "
expect_rc 0 plan "$P" --no-reuse --out "$T/s.csv"
out_has "20 B"
expect_rc 0 verify "$T/s.csv"
out_has "valid: height 20 "

# --capacity: enough -> 0; too small -> exit 2, message, no output file.
expect_rc 0 plan "$P" --capacity 12 --out "$T/cap.csv"
has_file "$T/cap.csv"
expect_rc 0 verify --capacity 12 "$T/cap.csv"
expect_rc 2 plan "$P" --capacity 11 --out "$T/should-not-exist.csv" \
  --profile "$T/should-not-exist.json"
err_has "does not fit"
err_has "11"
no_file "$T/should-not-exist.csv"
no_file "$T/should-not-exist.json"
expect_rc 2 plan "$P" --capacity 19 --strategy naive
err_has "does not fit"

# --align: every offset a multiple of 256; the bound counts rounded sizes
# (at most two buffers are live at once: 2 x 256).
expect_rc 0 plan "$P" --strategy greedy-size --align 256 --out "$T/al.csv"
out_has "alignment 256"
expect_rc 0 verify --align 256 "$T/al.csv"
out_has "lower bound 512"
expect_rc 0 plan "$P" --align 256K
expect_rc 0 plan "$P" --align=64

# --profile for a problem: peak = height, no weights, no workspace.
expect_rc 0 plan "$P" --profile "$T/prof.json"
has_file "$T/prof.json"
profile_ok "$T/prof.json"
py '
import json, sys
p = json.load(open(sys.argv[1]))
assert p["peak_memory"] == 12, p
assert p["lower_bound"] == 12, p
assert p["naive_memory"] == 20, p
assert p["weight_memory"] == 0 and p["workspace_memory"] == 0, p
assert abs(p["reuse_ratio"] - 0.4) < 1e-9, p
' "$T/prof.json"

# --json: one JSON object on stdout with the profile and run details.
expect_rc 0 plan "$P" --json
json_valid "$T/stdout"
py '
import json, sys
p = json.load(open(sys.argv[1]))
assert p["arena_height"] == 12 and p["arena_lower_bound"] == 12, p
assert p["input_kind"] == "problem", p
assert p["verified"] is True, p
assert p["peak_live_buffers"] == 2 and p["peak_live_bytes"] == 12, p
assert [e["id"] for e in p["peak_live"]] == ["c", "b"], p["peak_live"]
assert p["strategy_requested"] == "auto", p
' "$T/stdout"

# The plan of a bare problem as JSON: buffers with offsets, no tensors
# (exact integers: tests/cli/json_exact.sh).
expect_rc 0 plan "$P" --out "$T/plan.json" -q
py 'import json,sys; j=json.load(open(sys.argv[1]))
assert set(j)=={"strategy","alignment","arena_height","buffers"}, j
assert j["arena_height"]==12 and [b["id"] for b in j["buffers"]]==list("abcd"), j
assert all(set(b)=={"id","offset","size","first","last"} for b in j["buffers"]), j' \
  "$T/plan.json"
expect_error plan "$P" --out "$T/should-not-exist.txt"
err_has ".json or .csv"

# Unknown extension: the content decides (CSV here).
cp "$P" "$T/problem.txt"
expect_rc 0 plan "$T/problem.txt"
out_has "4 buffers"

# Legacy header with an inclusive end: buffer,start,end,size.
cat >"$T/legacy.csv" <<'CSV'
buffer,start,end,size
a,0,1,4
b,1,2,4
CSV
expect_rc 0 plan "$T/legacy.csv" --out "$T/legacy-sol.csv"
expect_rc 0 verify "$T/legacy-sol.csv"
out_has "valid: height 8 (lower bound 8"

finish
