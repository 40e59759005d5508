#!/usr/bin/env bash
# CLI: the shared MiniMalloc problems and real traces (skipped without
# $NNMEM_DATA_DIR).
. "$(dirname "$0")/lib/common.sh"

D="${NNMEM_DATA_DIR:-}/dsa"
[ -n "${NNMEM_DATA_DIR:-}" ] && [ -d "$D" ] || skip "no data at '$D'"

EX="$D/minimalloc/example.12.csv"
if [ -f "$EX" ]; then
  expect_rc 0 plan "$EX" --capacity 12 --out "$T/ex.csv"
  out_matches "height +12 B"
  expect_rc 0 verify --capacity 12 "$T/ex.csv"
  out_has "valid: height 12 (lower bound 12, ratio 1.000x)"
  expect_rc 0 verify "$EX" "$T/ex.csv"
fi

# The challenging problems have (almost) zero slack: greedy plans do not
# fit their capacity, the search does; 900 KiB is below a step's bytes.
A="$D/minimalloc/A.1048576.csv"
if [ -f "$A" ]; then
  expect_rc 0 plan "$A" --capacity 1048576 --out "$T/a1m.csv"
  expect_rc 0 verify "$T/a1m.csv" --capacity 1048576
  expect_rc 2 plan "$A" --capacity 900KiB --out "$T/should-not-exist.csv"
  err_has "infeasible: step 966656 alone needs 1048576 bytes"
  no_file "$T/should-not-exist.csv"
  expect_rc 0 plan "$A" --out "$T/a.csv" --json
  json_valid "$T/stdout"
  expect_rc 0 verify "$T/a.csv"
fi

R="$D/traces/resnet50.csv"
if [ -f "$R" ]; then
  expect_rc 0 plan "$R" --out "$T/r.csv"
  out_has "1,042 buffers"
  out_matches "lower bound +1\.4 GiB \(1,515,472,556 B\)"
  expect_rc 0 verify "$T/r.csv"
  out_has "lower bound 1515472556"
  expect_rc 0 plan "$R" --strategy greedy-size --align 256 --out "$T/r256.csv"
  expect_rc 0 verify --align 256 "$T/r256.csv"
fi

# Plan JSON of a real trace and of real models, verified against the
# problem / model they came from (matched by id; ONNX options and
# --no-reuse as given to plan).
if [ -f "$R" ]; then
  expect_rc 0 plan "$R" --align 256 --out "$T/r.json" -q
  expect_rc 0 verify "$R" "$T/r.json" --json
  py 'import json,sys; v=json.load(open(sys.argv[1]))
assert v["valid"] and v["alignment"]==256 and v["buffers"]==1042, v' "$T/stdout"
fi
M="${NNMEM_DATA_DIR}/models"
if [ -f "$M/super-resolution-10.onnx" ]; then
  S="$M/super-resolution-10.onnx"
  expect_rc 0 plan "$S" --dim batch_size=2 --align 64 --out "$T/s.json" -q
  expect_rc 0 verify "$S" "$T/s.json" --dim batch_size=2
  out_has "valid: height"
  expect_error verify "$S" "$T/s.json"
  err_has "planned with other options"
fi
if [ -f "$M/light_resnet50.onnx" ]; then
  L="$M/light_resnet50.onnx"
  expect_rc 0 plan "$L" --no-reuse --out "$T/n.json" -q
  expect_rc 0 verify "$L" "$T/n.json" --no-reuse
  expect_error verify "$L" "$T/n.json"
  err_has "--no-reuse?"
fi

finish
